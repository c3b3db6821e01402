//! Statistics: pool counters (`struct zs_pool_stats`) and per-class rows (debugfs `classes`),
//! gathered on demand from each class's locked state and the sharded read and write counters
//! (`counters.rs`).

use std::sync::atomic::Ordering;

use crate::payload::Payload;
use crate::pool::Pool;
use crate::size_class::SizeClass;

/// Pool-wide counters (`struct zs_pool_stats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Pages released by compaction since the pool was created.
    pub pages_compacted: u64,
    /// Pages held by zspages now (`zs_get_total_pages`).
    pub pages_allocated: u64,
    /// Highest `pages_allocated` seen.
    pub pages_peak: u64,
    /// Released pages kept resident for reuse (not counted in `pages_allocated`).
    pub pages_cached: u64,
    /// Objects, live or free, that existing zspages hold room for.
    pub objs_allocated: u64,
    /// Live objects.
    pub objs_inuse: u64,
    /// Sum of live objects' lengths (headers excluded).
    pub bytes_stored: u64,
    /// Read sections begun (copy and scatter-gather).
    pub reads: u64,
    /// Read sections on objects that cross a page boundary.
    pub reads_spanning: u64,
    /// Object bytes (not header bytes) copied by those read sections.
    pub read_copy_bytes: u64,
    /// Stores and writes of objects that cross a page boundary.
    pub writes_spanning: u64,
    /// Objects moved by compaction since the pool was created.
    pub objs_moved: u64,
    /// Their bytes (lengths, headers excluded).
    pub bytes_moved: u64,
}

/// One class's row: the kernel's debugfs `classes` line plus layout facts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClassStats {
    pub index: u32,
    pub size: u32,
    /// Units per zspage: pages, or compound pages of `order` (`pages_per_zspage << order` pages).
    pub pages_per_zspage: u32,
    pub objs_per_zspage: u32,
    pub huge: bool,
    /// 0, or the multi-page order of the multi-page band's classes above a page.
    pub order: u32,
    /// Zspages per fullness group: 0 empty, 1..=10 by tenths of inuse ratio, 11 full.
    pub fullness: [u64; 12],
    pub obj_allocated: u64,
    pub obj_used: u64,
    pub pages_used: u64,
    /// Pages compaction could free now (`zs_can_compact`).
    pub freeable: u64,
    /// Objects of a full zspage crossing a page boundary.
    pub spanning_per_zspage: u32,
    pub tail_waste: u32,
    pub worst_merge_waste: u32,
    /// Smallest and largest class index served by this class.
    pub first_index: u32,
    pub last_index: u32,
    pub bytes_stored: u64,
    /// Read sections begun on this class's objects.
    pub reads: u64,
    /// Those on objects that cross a page boundary (reads, not slots: see
    /// `spanning_per_zspage` for the layout's count).
    pub reads_spanning: u64,
    /// Object bytes those read sections copied (`copy` mode's spanning reads only).
    pub read_copy_bytes: u64,
}

impl<P: Payload> Pool<P> {
    /// Pool-wide counters, summed now.
    pub fn stats(&self) -> PoolStats {
        let (reads, reads_spanning, read_copy_bytes, writes_spanning) = self.access.sum();
        let mut s = PoolStats {
            pages_compacted: self.pages_compacted.load(Ordering::Relaxed),
            pages_allocated: self.total_pages(),
            pages_peak: self.pages_peak.load(Ordering::Relaxed),
            pages_cached: self.arena.pages_cached(),
            reads,
            reads_spanning,
            read_copy_bytes,
            writes_spanning,
            objs_moved: self.objs_moved.load(Ordering::Relaxed),
            bytes_moved: self.bytes_moved.load(Ordering::Relaxed),
            ..Default::default()
        };
        for c in self.classes.iter() {
            let st = c.lock();
            s.objs_allocated += st.obj_allocated;
            s.objs_inuse += st.obj_inuse;
            s.bytes_stored += st.bytes_stored;
        }
        s
    }

    /// One row per (non-alias) class, ascending by size.
    pub fn class_stats(&self) -> Vec<ClassStats> {
        let page = self.config.page_size;
        self.classes
            .iter()
            .enumerate()
            .map(|(pos, c)| {
                let i = &c.info;
                let (reads, reads_spanning, read_copy_bytes) = self.access.class_sum(pos);
                let st = c.lock();
                ClassStats {
                    index: i.index,
                    size: i.size,
                    pages_per_zspage: i.pages_per_zspage,
                    objs_per_zspage: i.objs_per_zspage,
                    huge: i.huge,
                    order: i.order,
                    fullness: st.counts,
                    obj_allocated: st.obj_allocated,
                    obj_used: st.obj_inuse,
                    pages_used: st.zspages * u64::from(i.zspage_pages()),
                    freeable: st.can_compact(i),
                    spanning_per_zspage: i.spanning_per_zspage(page),
                    tail_waste: i.tail_waste(page),
                    worst_merge_waste: self.table.worst_merge_waste(i),
                    first_index: i.first_index,
                    last_index: i.index,
                    bytes_stored: st.bytes_stored,
                    reads,
                    reads_spanning,
                    read_copy_bytes,
                }
            })
            .collect()
    }

    /// Heap bytes of the pool's metadata outside its pages: (zspage metadata, classes and, for
    /// a placement-only pool, its header words; safe-layer handle slots).
    pub fn metadata_bytes(&self) -> (usize, usize) {
        let classes = self.classes.len() * std::mem::size_of::<SizeClass>();
        let tables =
            self.zspages.heap_bytes() + self.arena.heap_bytes() + self.payload.heap_bytes();
        (tables + classes, self.slots.heap_bytes())
    }
}
