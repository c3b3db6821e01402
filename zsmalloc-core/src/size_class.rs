//! A size class: its fullness lists and counters, all under the class lock.
//!
//! Lists are intrusive doubly linked lists through the zspage table (`prev`/`next` entries), one
//! per fullness group, with insertion at the head (mainline `insert_zspage`). A zspage whose
//! group does not change stays where it is (`fix_fullness_group`).

use spin::mutex::{SpinMutex, SpinMutexGuard};
use spin::relax::Yield;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicU64, AtomicUsize};

use crate::class_table::ClassInfo;
use crate::header;
use crate::zspage::{Fullness, Reciprocal, Zspage, ZspageTable, GROUPS, NIL};

/// One class of the pool. Padded so neighbouring classes' locks do not share a cache line; 256
/// bytes, so that indexing the class array is one shift (a size test checks it).
#[repr(align(128))]
pub struct SizeClass {
    pub info: ClassInfo,
    /// Divides by the objects per zspage (`Fullness`; the count itself is `info`'s).
    by_objs: Reciprocal,
    /// Divides an offset within a zspage by the class size (the object index of a handle).
    pub by_size: Reciprocal,
    /// Bytes of a zspage its objects cover (`objs * size`); 0 for a huge class, whose objects
    /// are never read in place.
    pub object_area: u32,
    /// Arena offset of the object the class's next store will most likely take (0: none, which
    /// also skips the prefetch of the arena's very first object): a store prefetches it for
    /// writing before it takes the lock. Written under the lock, read without it; a stale value
    /// only prefetches the wrong lines.
    pub next_obj: AtomicUsize,
    state: SpinMutex<ClassState, Yield>,
}

impl SizeClass {
    pub fn new(info: ClassInfo) -> Self {
        let by_objs = Reciprocal::new(info.objs_per_zspage);
        let by_size = Reciprocal::new(info.size);
        let object_area = if info.huge { 0 } else { info.objs_per_zspage * info.size };
        SizeClass {
            info,
            by_objs,
            by_size,
            object_area,
            next_obj: AtomicUsize::new(0),
            state: SpinMutex::new(ClassState::default()),
        }
    }

    /// The class's fullness groups by objects in use.
    #[inline(always)]
    pub fn fullness(&self) -> Fullness<'_> {
        Fullness::of(&self.info.objs_per_zspage, &self.by_objs)
    }

    /// Takes the class lock: a spin lock, as the kernel's `class->lock`, whose waiters yield the
    /// CPU between attempts. Its release is a plain store (one locked instruction per
    /// lock/unlock pair instead of two), and it is held for a list update and one object copy.
    #[inline]
    pub fn lock(&self) -> SpinMutexGuard<'_, ClassState> {
        self.state.lock()
    }
}

/// Everything of a class that its lock protects.
#[derive(Debug, Default)]
pub struct ClassState {
    /// List heads as `entry + 1` (0 = empty list), so that `Default` means "all lists empty".
    heads: [u32; GROUPS],
    /// Bit g set: group g's list is not empty.
    nonempty: u16,
    pub counts: [u64; GROUPS],
    pub obj_allocated: u64,
    pub obj_inuse: u64,
    pub bytes_stored: u64,
    pub zspages: u64,
}

impl ClassState {
    fn head(&self, group: usize) -> u32 {
        self.heads[group].wrapping_sub(1)
    }

    fn set_head(&mut self, group: usize, entry: u32) {
        self.heads[group] = entry.wrapping_add(1);
    }

    /// Links zspage `entry` at the head of `group`.
    pub fn insert(&mut self, t: &ZspageTable, entry: u32, group: usize) {
        let z = zs(t, entry);
        let old = self.head(group);
        z.prev.store(NIL, Relaxed);
        z.next.store(old, Relaxed);
        if old != NIL {
            zs(t, old).prev.store(entry, Relaxed);
        }
        z.group.store(group as u32, Relaxed);
        self.set_head(group, entry);
        self.nonempty |= 1 << group;
        self.counts[group] += 1;
    }

    /// Unlinks zspage `entry` from its group.
    pub fn remove(&mut self, t: &ZspageTable, entry: u32) {
        let z = zs(t, entry);
        let group = z.group.load(Relaxed) as usize;
        let (prev, next) = (z.prev.load(Relaxed), z.next.load(Relaxed));
        if prev == NIL {
            self.set_head(group, next);
            if next == NIL {
                self.nonempty &= !(1 << group);
            }
        } else {
            zs(t, prev).next.store(next, Relaxed);
        }
        if next != NIL {
            zs(t, next).prev.store(prev, Relaxed);
        }
        self.counts[group] -= 1;
    }

    /// Moves listed zspage `z` (table entry `entry`) to the head of its new group if its group
    /// changed.
    #[inline]
    pub fn fix_group(&mut self, t: &ZspageTable, entry: u32, z: &Zspage, fullness: Fullness<'_>) {
        let new = fullness.group(z.inuse.load(Relaxed));
        if new != z.group.load(Relaxed) as usize {
            self.move_to(t, entry, new);
        }
    }

    /// Relinks zspage `entry` at the head of `group`.
    fn move_to(&mut self, t: &ZspageTable, entry: u32, group: usize) {
        self.remove(t, entry);
        self.insert(t, entry, group);
    }

    /// Head of the fullest non-empty group among `lo..hi` (mainline scans from the fullest down).
    #[inline]
    pub fn fullest_in(&self, lo: usize, hi: usize) -> Option<u32> {
        let mask = self.nonempty & (((1u32 << hi) - (1u32 << lo)) as u16);
        (mask != 0).then(|| self.head(15 - mask.leading_zeros() as usize))
    }

    /// First zspage (groups in order, each list from its head) that `accept` takes.
    pub fn find_in(
        &self,
        t: &ZspageTable,
        groups: impl Iterator<Item = usize>,
        mut accept: impl FnMut(&Zspage) -> bool,
    ) -> Option<u32> {
        for g in groups {
            let mut s = self.head(g);
            while s != NIL {
                let z = zs(t, s);
                if accept(z) {
                    return Some(s);
                }
                s = z.next.load(Relaxed);
            }
        }
        None
    }

    /// Pages compaction could release now (mainline `zs_can_compact`).
    pub fn can_compact(&self, info: &ClassInfo) -> u64 {
        let wasted = self.obj_allocated - self.obj_inuse;
        wasted / u64::from(info.objs_per_zspage) * u64::from(info.zspage_pages())
    }
}

#[inline]
fn zs(t: &ZspageTable, entry: u32) -> &Zspage {
    t.get(entry).expect("listed zspage entry exists")
}

/// Takes the head of `z`'s freelist, writing `hdr` as the object's header through `word`
/// (mainline `obj_malloc`). Caller holds the class lock and knows `z` is not full.
///
/// A never-used object's header is written before `fresh` is advanced (Release), so a reader
/// that sees `obj < fresh` (Acquire) sees a header this pool wrote, never stale page bytes.
#[inline]
pub fn obj_malloc<'a>(z: &'a Zspage, hdr: u64, word: impl Fn(u32) -> &'a AtomicU64) -> u32 {
    let head = z.free_head.load(Relaxed);
    let obj = if let Some(obj) = head.checked_sub(1) {
        let w = word(obj);
        let next = header::next_free(w.load(Relaxed));
        z.free_head.store(next.map_or(0, |n| n + 1), Relaxed);
        w.store(hdr, Release);
        obj
    } else {
        let obj = z.fresh.load(Relaxed);
        word(obj).store(hdr, Release);
        z.fresh.store(obj + 1, Release);
        obj
    };
    // Under the class lock: a plain load and store, not a locked read-modify-write.
    z.inuse.store(z.inuse.load(Relaxed) + 1, Relaxed);
    obj
}

/// Pushes freed object `obj` onto `z`'s freelist; its header word already holds the link to the
/// previous head (written by `header::try_free` or by migration). Caller holds the class lock.
#[inline]
pub fn obj_freed(z: &Zspage, obj: u32) {
    z.free_head.store(obj + 1, Relaxed);
    z.inuse.store(z.inuse.load(Relaxed) - 1, Relaxed);
}

/// The current freelist head (for building the link of an object about to be freed).
#[inline]
pub fn free_head(z: &Zspage) -> Option<u32> {
    z.free_head.load(Relaxed).checked_sub(1)
}

/// Objects handed out at least once (`obj < fresh` means the header word is the pool's).
#[inline]
pub fn fresh(z: &Zspage) -> u32 {
    z.fresh.load(Acquire)
}

#[cfg(test)]
mod tests {
    use super::SizeClass;

    /// Indexing the class array is one shift only while a class is a power of two of bytes; the
    /// hot paths index it on every store, free and read.
    #[test]
    fn a_class_is_256_bytes() {
        assert_eq!(std::mem::size_of::<SizeClass>(), 256);
    }
}
