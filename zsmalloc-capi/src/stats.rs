//! `struct zs_pool_stats` and `struct zs_class_stats` (kernel style: the struct and the function
//! share a name). Both only grow at the end (see `crate::sized`).

use std::ffi::{c_int, c_uint};

use zsmalloc_core::{Backend, ClassStats, PoolStats, Result};

use crate::errors::invalid;
use crate::pool::{self, zs_pool};
use crate::sized::{fields, fields_cover, write_out, Field, Plain};

/// Pool-wide counters, summed when asked.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct zs_pool_stats {
    /// Pages released by compaction since the pool was created.
    pub pages_compacted: u64,
    /// Pages held by zspages now (`zs_get_total_pages`).
    pub pages_allocated: u64,
    /// Highest `pages_allocated` seen.
    pub pages_peak: u64,
    /// Released pages kept resident for reuse (not in `pages_allocated`).
    pub pages_cached: u64,
    /// Object slots in existing zspages.
    pub objs_allocated: u64,
    /// Live objects.
    pub objs_inuse: u64,
    /// Sum of the live objects' lengths (headers excluded).
    pub bytes_stored: u64,
    /// Read sections begun (copy and scatter-gather).
    pub reads: u64,
    /// Read sections on objects that cross a page (the kernel's rule, header included).
    pub reads_spanning: u64,
    /// Object bytes (not header bytes) copied by those read sections.
    pub read_copy_bytes: u64,
    /// Stores and writes of objects that cross a page.
    pub writes_spanning: u64,
    /// Objects moved by compaction since the pool was created (ABI version 1).
    pub objs_moved: u64,
    /// Their bytes (lengths, headers excluded; ABI version 6).
    pub bytes_moved: u64,
}

impl From<PoolStats> for zs_pool_stats {
    fn from(s: PoolStats) -> Self {
        zs_pool_stats {
            pages_compacted: s.pages_compacted,
            pages_allocated: s.pages_allocated,
            pages_peak: s.pages_peak,
            pages_cached: s.pages_cached,
            objs_allocated: s.objs_allocated,
            objs_inuse: s.objs_inuse,
            bytes_stored: s.bytes_stored,
            reads: s.reads,
            reads_spanning: s.reads_spanning,
            read_copy_bytes: s.read_copy_bytes,
            writes_spanning: s.writes_spanning,
            objs_moved: s.objs_moved,
            bytes_moved: s.bytes_moved,
        }
    }
}

/// One size class: the kernel's debugfs `classes` row plus layout facts.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct zs_class_stats {
    /// The class's index (the largest index it serves, as in the kernel).
    pub index: u32,
    /// Class size in bytes, header included.
    pub size: u32,
    /// Units per zspage: pages, or order-`order` compound pages (`pages_per_zspage << order`
    /// pages).
    pub pages_per_zspage: u32,
    pub objs_per_zspage: u32,
    /// 1 for a huge class (one object per one-unit zspage, no in-object header).
    pub huge: u32,
    /// Objects of a full zspage that cross a page boundary.
    pub spanning_per_zspage: u32,
    /// Bytes of each zspage no object can use.
    pub tail_waste: u32,
    /// Worst merge waste per zspage (class size minus the smallest size merged into it).
    pub worst_merge_waste: u32,
    /// Smallest class index served by this class (merged indices: first_index..=last_index).
    pub first_index: u32,
    /// Largest class index served by this class (== `index`).
    pub last_index: u32,
    /// Zspages per fullness group: 0 empty, 1..10 by tenths of in-use ratio, 11 full.
    pub fullness: [u64; 12],
    pub obj_allocated: u64,
    pub obj_used: u64,
    pub pages_used: u64,
    /// Pages compaction could free now.
    pub freeable: u64,
    /// Sum of the lengths of this class's live objects.
    pub bytes_stored: u64,
    /// Read sections begun on this class's objects (ABI version 3).
    pub reads: u64,
    /// Those on objects that cross a page (reads, not the layout's `spanning_per_zspage`).
    pub reads_spanning: u64,
    /// Object bytes those read sections copied (`ZS_READ_COPY`'s spanning reads only).
    pub read_copy_bytes: u64,
    /// 0, or the multi-page order of the multi-page band's classes above a page: their
    /// zspages are made of `1 << order`-page compound pages (ABI version 6).
    pub order: u32,
    /// Padding of version 6's struct (0).
    pub reserved: u32,
}

impl From<&ClassStats> for zs_class_stats {
    fn from(c: &ClassStats) -> Self {
        zs_class_stats {
            index: c.index,
            size: c.size,
            pages_per_zspage: c.pages_per_zspage,
            objs_per_zspage: c.objs_per_zspage,
            huge: u32::from(c.huge),
            spanning_per_zspage: c.spanning_per_zspage,
            tail_waste: c.tail_waste,
            worst_merge_waste: c.worst_merge_waste,
            first_index: c.first_index,
            last_index: c.last_index,
            fullness: c.fullness,
            obj_allocated: c.obj_allocated,
            obj_used: c.obj_used,
            pages_used: c.pages_used,
            freeable: c.freeable,
            bytes_stored: c.bytes_stored,
            reads: c.reads,
            reads_spanning: c.reads_spanning,
            read_copy_bytes: c.read_copy_bytes,
            order: c.order,
            reserved: 0,
        }
    }
}

/// `sizeof(struct zs_pool_stats)` in ABI version 1.
pub const ZS_POOL_STATS_SIZE_VER1: usize = 96;
/// `sizeof(struct zs_pool_stats)` in ABI version 6 (`bytes_moved` added).
pub const ZS_POOL_STATS_SIZE_VER6: usize = 104;
/// `sizeof(struct zs_class_stats)` in ABI version 1.
pub const ZS_CLASS_STATS_SIZE_VER1: usize = 176;
const _: () = assert!(std::mem::size_of::<zs_pool_stats>() == ZS_POOL_STATS_SIZE_VER6);
/// `sizeof(struct zs_class_stats)` in ABI version 3 (the read counters added).
pub const ZS_CLASS_STATS_SIZE_VER3: usize = 200;
/// `sizeof(struct zs_class_stats)` in ABI version 6 (`order` added).
pub const ZS_CLASS_STATS_SIZE_VER6: usize = 208;
const _: () = assert!(std::mem::size_of::<zs_class_stats>() == ZS_CLASS_STATS_SIZE_VER6);

// SAFETY: `#[repr(C)]`, integer fields only.
unsafe impl Plain for zs_pool_stats {
    const SIZE_VER1: usize = ZS_POOL_STATS_SIZE_VER1;
    const NAME: &'static str = "zs_pool_stats";
    const FIELDS: &'static [Field] = fields!(zs_pool_stats {
        pages_compacted,
        pages_allocated,
        pages_peak,
        pages_cached,
        objs_allocated,
        objs_inuse,
        bytes_stored,
        reads,
        reads_spanning,
        read_copy_bytes,
        writes_spanning,
        objs_moved,
        bytes_moved,
    });
}
const _: () = assert!(fields_cover::<zs_pool_stats>());

// SAFETY: `#[repr(C)]`, integer fields and an integer array only.
unsafe impl Plain for zs_class_stats {
    const SIZE_VER1: usize = ZS_CLASS_STATS_SIZE_VER1;
    const NAME: &'static str = "zs_class_stats";
    const FIELDS: &'static [Field] = fields!(zs_class_stats {
        index,
        size,
        pages_per_zspage,
        objs_per_zspage,
        huge,
        spanning_per_zspage,
        tail_waste,
        worst_merge_waste,
        first_index,
        last_index,
        fullness,
        obj_allocated,
        obj_used,
        pages_used,
        freeable,
        bytes_stored,
        reads,
        reads_spanning,
        read_copy_bytes,
        order,
        reserved,
    });
}
const _: () = assert!(fields_cover::<zs_class_stats>());

/// Writes the pool's counters into the caller's struct of `size` bytes.
///
/// # Safety
/// `p` as for [`crate::pool::zs_pool::get`]; `out` is NULL or writable for `size` bytes.
pub(crate) unsafe fn pool_stats(
    p: *mut zs_pool,
    out: *mut zs_pool_stats,
    size: usize,
) -> Result<c_int> {
    // SAFETY: forwarded contract.
    let pool = unsafe { pool::zs_pool::get(p) }?.pool();
    if out.is_null() {
        return Err(invalid("stats is NULL"));
    }
    // SAFETY: forwarded contract.
    unsafe { write_out(out, size, &pool.stats().into()) }?;
    Ok(0)
}

/// Writes the row of the class serving class index `index` into the caller's struct of `size`
/// bytes (merged indices all give their class's row); `-EINVAL` past the last index.
///
/// # Safety
/// As [`pool_stats`].
pub(crate) unsafe fn class_stats(
    p: *mut zs_pool,
    index: c_uint,
    out: *mut zs_class_stats,
    size: usize,
) -> Result<c_int> {
    // SAFETY: forwarded contract.
    let pool = unsafe { pool::zs_pool::get(p) }?.pool();
    if out.is_null() {
        return Err(invalid("stats is NULL"));
    }
    let rows = pool.class_stats();
    // zsmalloc: merged indices share their class's row; zblock: one row per block type.
    let (pos, count) = match pool.as_zsmalloc() {
        Some(z) => (z.class_table().position_of_index(index), z.class_table().index_count()),
        None => (Some(index as usize).filter(|&i| i < rows.len()), rows.len() as u32),
    };
    let pos =
        pos.ok_or_else(|| invalid(format!("class index {index} is out of range (0..{count})")))?;
    let row = rows.get(pos).ok_or_else(|| invalid(format!("no class at index {index}")))?;
    // SAFETY: forwarded contract.
    unsafe { write_out(out, size, &row.into()) }?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_struct_sizes_accepted_end_on_their_field_boundaries() {
        assert_eq!(crate::sized::boundaries::<zs_pool_stats>(), [96, 104]);
        assert_eq!(crate::sized::boundaries::<zs_class_stats>(), [176, 184, 192, 200, 204, 208]);
    }
}
