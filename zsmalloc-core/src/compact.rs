//! Compaction (mainline `zs_compact`): objects move out of sparse zspages into fuller ones of
//! their class, and emptied zspages are released. A zspage some reader holds is skipped, never
//! waited for.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::announce;
use crate::class_table::ClassInfo;
use crate::header;
use crate::payload::Payload;
use crate::pool::Pool;
use crate::size_class;
use crate::zspage::{Zspage, GROUP_FULL};

impl<P: Payload> Pool<P> {
    /// Moves objects out of sparse zspages into fuller ones and releases emptied zspages
    /// (mainline `zs_compact`). Zspages pinned by readers are skipped. Returns pages freed.
    pub fn compact(&self) -> u64 {
        let mut buf = vec![0u8; self.max_object_size()];
        let freed: u64 =
            (0..self.classes.len()).rev().map(|pos| self.compact_class(pos, &mut buf)).sum();
        self.pages_compacted.fetch_add(freed, Ordering::Relaxed);
        freed
    }

    fn compact_class(&self, pos: usize, buf: &mut [u8]) -> u64 {
        let class = &self.classes[pos];
        let info = &class.info;
        let mut st = class.lock();
        self.release_deferred(&mut st, class);
        let mut freed = 0;
        let mut dst: Option<u32> = None;
        while st.can_compact(info) > 0 {
            let d = match dst {
                Some(d) => d,
                None => match st.fullest_in(1, GROUP_FULL) {
                    Some(d) => {
                        st.remove(&self.zspages, d);
                        dst = Some(d);
                        d
                    }
                    None => break,
                },
            };
            // The first source (groups 1..=10, each from its head) that no reader holds.
            let Some(s) = st.find_in(&self.zspages, 1..GROUP_FULL, |z| self.lock_for_move(z, info))
            else {
                break;
            };
            st.remove(&self.zspages, s);
            let (src, dz) = (self.zspage(s), self.zspage(d));
            self.migrate(info, src, d, dz, buf);
            if src.inuse.load(Ordering::Relaxed) == 0 {
                self.release_zspage(&mut st, info, s); // still locked for migration
                freed += u64::from(info.zspage_pages());
            } else {
                src.pin.unlock_migration();
                let g = class.fullness().group(src.inuse.load(Ordering::Relaxed));
                st.insert(&self.zspages, s, g);
            }
            if dz.inuse.load(Ordering::Relaxed) == info.objs_per_zspage {
                st.insert(&self.zspages, d, GROUP_FULL);
                dst = None;
            }
        }
        if let Some(d) = dst {
            let g = class.fullness().group(self.zspage(d).inuse.load(Ordering::Relaxed));
            st.insert(&self.zspages, d, g);
        }
        freed
    }

    /// Locks `z` (of class `info`, whose lock the caller holds) for moving its objects: its
    /// migration lock (huge readers pin it) and a claim on every allocated object (other
    /// readers register on headers). All or nothing: false if any reader holds one.
    fn lock_for_move(&self, z: &Zspage, info: &ClassInfo) -> bool {
        if !z.pin.try_lock_migration() {
            return false;
        }
        let fresh = size_class::fresh(z);
        for obj in 0..fresh {
            let word = self.header_word(z, info, obj);
            if header::is_allocated(word.load(Ordering::Acquire))
                && header::claim(word, announce::in_use()).is_none()
            {
                self.unclaim(z, info, obj);
                z.pin.unlock_migration();
                return false;
            }
        }
        true
    }

    /// Drops the claims `lock_for_move` left on objects `0..upto` of `z` (those not moved).
    fn unclaim(&self, z: &Zspage, info: &ClassInfo, upto: u32) {
        for obj in 0..upto {
            let word = self.header_word(z, info, obj);
            let w = word.load(Ordering::Acquire);
            if header::is_claimed(w) {
                // Only the claimer changes a claimed header (readers back off, frees and moves
                // of the handle wait for the class lock we hold).
                word.store(header::without_readers(w), Ordering::Release);
            }
        }
    }

    /// Moves live objects of `src` (locked by `lock_for_move`) into `dst`, in increasing object
    /// index, until `dst` is full or `src` is empty (mainline `migrate_zspage`), then drops the
    /// claims on the objects left.
    fn migrate(&self, info: &ClassInfo, src: &Zspage, d: u32, dst: &Zspage, buf: &mut [u8]) {
        debug_assert!(src.is_live() && dst.is_live());
        for obj in 0..size_class::fresh(src) {
            let word = self.header_word(src, info, obj);
            // The reader bits are our claim: the moved copy starts with no readers.
            let hdr = header::without_readers(word.load(Ordering::Acquire));
            if !header::is_allocated(hdr) {
                continue;
            }
            let len = header::len(hdr);
            let from = self.layout(src, info, obj, len);
            self.copy_pieces_out(&from, &mut buf[..len]);
            let new_obj = size_class::obj_malloc(dst, hdr, |o| self.header_word(dst, info, o));
            let to = self.layout(dst, info, new_obj, len);
            // SAFETY: `new_obj` was just taken from dst's freelist under the class lock and is not
            // yet reachable by any handle; the range lies within its object.
            unsafe { self.copy_pieces_in(&to, &buf[..len]) };
            let moved = self.locate(d, dst, info, new_obj);
            // SAFETY: the header's owner is a live handle word (pool invariant, see module doc);
            // it is 8-aligned (checked at store) and only accessed atomically.
            let handle = unsafe { &*(header::owner(hdr) as *const AtomicUsize) };
            handle.store(moved.encode(), Ordering::Release);
            word.store(header::free_link(size_class::free_head(src)), Ordering::Release);
            size_class::obj_freed(src, obj);
            self.objs_moved.fetch_add(1, Ordering::Relaxed);
            self.bytes_moved.fetch_add(len as u64, Ordering::Relaxed);
            if dst.inuse.load(Ordering::Relaxed) == info.objs_per_zspage
                || src.inuse.load(Ordering::Relaxed) == 0
            {
                break;
            }
        }
        self.unclaim(src, info, size_class::fresh(src));
    }
}
