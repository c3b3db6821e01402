//! Runs: adjacent pages handed out and recycled whole, for `contiguous` mode (every zspage's
//! pages adjacent, a higher-order or vmalloc'd zspage) and for any user of multi-page blocks.
//!
//! A run of `len` pages of kind `kind` takes, page by page, the roles (`kind`, 0..len) when it is
//! first carved from the unused pages, and keeps them for life: a run is never split or merged,
//! goes back to the free runs of its (kind, len) and comes out again whole. So the invariant the
//! read fast path relies on (a page keeps its role for life, `arena.rs`) holds, and so does the
//! stronger one `contiguous` reads rely on: the page after a page of role (kind, i < len - 1) is
//! the one of role (kind, i + 1) of the same run. The page cache holds whole runs and evicts the
//! oldest run whole.
//!
//! Runs of order `k` (the multi-page band's compound units, docs/DESIGN.md, Objects of several
//! pages) start at a page number that is a multiple of `2^k`, and each `2^k` pages share one
//! role: page `j` of a run whose first role is (kind, i) has role (kind, i + j >> k). So the
//! offset of a byte within its unit is its arena offset modulo the unit, as in the kernel, where
//! a compound page is naturally aligned.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;

use super::{role_of, FreePages, PageArena, Pfn};

/// Free runs of every (first page's role, len), and the cached ones in the order they were
/// released.
#[derive(Default)]
pub(super) struct Runs {
    by_kind: HashMap<(u32, usize), RunsFree>,
    /// (first page, len) of cached runs, oldest first (may name runs reused since).
    cache_order: VecDeque<(Pfn, usize)>,
}

/// Released runs of one (kind, len), by first page.
#[derive(Default)]
struct RunsFree {
    /// Still resident, reused first.
    cached: Vec<Pfn>,
    /// Given back to the system.
    released: Vec<Pfn>,
}

impl PageArena {
    /// A run of `len` (1..=16) adjacent pages for `kind` (a class position), page `i` in role
    /// (`kind`, `i`): its first page, or `None` when the reserved address space is exhausted.
    pub fn alloc_run(&self, kind: usize, len: usize) -> Option<Pfn> {
        debug_assert!((1..=16).contains(&len));
        self.alloc_run_of_order(role_of(kind, 0), len, 0)
    }

    /// A run of `len` adjacent pages starting at a multiple of `2^order`, page `j` in role
    /// `first_role + (j >> order)` (see the module documentation); its first page, or `None`
    /// when the reserved address space is exhausted.
    pub fn alloc_run_of_order(&self, first_role: u32, len: usize, order: u32) -> Option<Pfn> {
        let range = self.range.as_ref()?;
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        let f = free.runs.by_kind.entry((first_role, len)).or_default();
        if let Some(first) = f.cached.pop() {
            free.cached -= len;
            self.cached.store(free.cached as u64, Ordering::Relaxed);
            return Some(first);
        }
        if let Some(first) = f.released.pop() {
            return Some(first);
        }
        // Pages skipped to align the run are never handed out (address space only).
        let first = (free.next_unused as usize).next_multiple_of(1 << order);
        if first + len > self.roles_capacity() || !self.commit_upto(range, &mut free, first + len) {
            return None;
        }
        free.next_unused = (first + len) as u64;
        for i in 0..len {
            let r = self.roles.get_or_alloc(first + i).expect("checked against capacity");
            r.store(first_role + (i >> order) as u32 + 1, Ordering::Release);
        }
        Some(first as Pfn)
    }

    /// Allocates a zspage of class `class_pos` made of `out.len()` units of order `order`
    /// (`2^order` adjacent pages each, aligned, the multi-page band's compound pages): `out[i]`
    /// is unit `i`'s first page, all its pages in role (`class_pos`, `i`). In `contiguous` mode
    /// the units are one run. Order 0 is [`Self::alloc_pages`]. False when the reserved address
    /// space is exhausted (nothing taken).
    #[inline]
    pub fn alloc_zspage(&self, out: &mut [Pfn], class_pos: usize, order: u32) -> bool {
        if order == 0 {
            return self.alloc_pages(out, class_pos);
        }
        self.alloc_units(out, class_pos, order)
    }

    /// `alloc_zspage` of units of order `order > 0`.
    #[cold]
    #[inline(never)]
    fn alloc_units(&self, out: &mut [Pfn], class_pos: usize, order: u32) -> bool {
        if crate::fault::fails(crate::fault::Point::Pages) {
            return false;
        }
        let unit = 1usize << order;
        if self.runs {
            let Some(first) =
                self.alloc_run_of_order(role_of(class_pos, 0), out.len() * unit, order)
            else {
                return false;
            };
            for (i, p) in out.iter_mut().enumerate() {
                *p = first + (i * unit) as Pfn;
            }
            return true;
        }
        for i in 0..out.len() {
            match self.alloc_run_of_order(role_of(class_pos, i), unit, order) {
                Some(first) => out[i] = first,
                None => {
                    self.free_zspage(&out[..i], order);
                    return false;
                }
            }
        }
        true
    }

    /// Gives back a zspage's units that [`Self::alloc_zspage`] handed out.
    #[inline]
    pub fn free_zspage(&self, units: &[Pfn], order: u32) {
        if order == 0 {
            return self.free_pages(units);
        }
        self.free_units(units, order)
    }

    /// `free_zspage` of units of order `order > 0`.
    #[cold]
    #[inline(never)]
    fn free_units(&self, units: &[Pfn], order: u32) {
        if self.runs {
            if let Some(&first) = units.first() {
                self.free_run(first, units.len() << order);
            }
            return;
        }
        for &first in units {
            self.free_run(first, 1 << order);
        }
    }

    /// Gives back the run of `len` pages at `first` that `alloc_run(kind, len)` handed out:
    /// kept resident in the cache; when the cache is full, its oldest runs go back to the system.
    pub fn free_run(&self, first: Pfn, len: usize) {
        let kind = self.role_word(first).expect("a handed-out run has roles");
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        while free.cached + len > self.cache_limit() && self.evict_oldest_run(&mut free) {}
        if free.cached + len <= self.cache_limit() {
            free.cached += len;
            free.runs.cache_order.push_back((first, len));
            free.runs.by_kind.entry((kind, len)).or_default().cached.push(first);
        } else {
            self.discard_run(first, len);
            free.runs.by_kind.entry((kind, len)).or_default().released.push(first);
        }
        if free.runs.cache_order.len() > 4 * self.cache_limit() {
            // Drop the entries of runs reused since they were cached.
            let Runs { cache_order, by_kind } = &mut free.runs;
            cache_order.retain(|&(p, n)| {
                let kind = self.role_word(p).expect("a cached run has roles");
                by_kind.get(&(kind, n)).is_some_and(|f| f.cached.contains(&p))
            });
        }
        self.cached.store(free.cached as u64, Ordering::Relaxed);
    }

    /// Discards the run cached longest ago (its kind keeps it as released); false if none is.
    fn evict_oldest_run(&self, free: &mut FreePages) -> bool {
        while let Some((first, len)) = free.runs.cache_order.pop_front() {
            let kind = self.role_word(first).expect("a cached run has roles");
            let f = free.runs.by_kind.entry((kind, len)).or_default();
            // Entries of runs reused since they were cached are stale: skip them.
            if let Some(at) = f.cached.iter().position(|&p| p == first) {
                f.cached.swap_remove(at);
                f.released.push(first);
                free.cached -= len;
                self.discard_run(first, len);
                return true;
            }
        }
        false
    }

    fn discard_run(&self, first: Pfn, len: usize) {
        for i in 0..len {
            self.discard(first + i as Pfn);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{PoolConfig, ReadMode};

    use super::super::PageArena;
    use super::Pfn;

    fn contiguous(page_size: u32) -> PageArena {
        let cfg =
            PoolConfig { page_size, read_mode: ReadMode::Contiguous, ..PoolConfig::default() };
        PageArena::for_config(&cfg).unwrap()
    }

    #[test]
    fn runs_are_adjacent_and_keep_their_roles() {
        let arena = contiguous(4096);
        let mut a = [0 as Pfn; 3];
        assert!(arena.alloc_pages(&mut a, 7));
        assert_eq!([a[1], a[2]], [a[0] + 1, a[0] + 2], "adjacent");
        for (i, &p) in a.iter().enumerate() {
            assert_eq!(arena.role(p), Some((7, i as u32)));
        }
        // SAFETY: plain address arithmetic on pages just handed out.
        assert_eq!(arena.page_ptr(a[1]) as usize, arena.page_ptr(a[0]) as usize + 4096);
        let mut b = [0 as Pfn; 2];
        assert!(arena.alloc_pages(&mut b, 7)); // another length: another run
        assert_eq!(b[1], b[0] + 1);
        arena.free_pages(&a);
        assert_eq!(arena.pages_cached(), 3);
        let mut c = [0 as Pfn; 3];
        assert!(arena.alloc_pages(&mut c, 9));
        assert!(!c.contains(&a[0]), "another class never takes class 7's run");
        let mut again = [0 as Pfn; 3];
        assert!(arena.alloc_pages(&mut again, 7));
        assert_eq!(again, a, "the run comes back whole");
        assert_eq!(arena.pages_cached(), 0);
    }

    #[test]
    fn the_cache_evicts_whole_runs() {
        let arena = contiguous(65536);
        let limit = arena.cache_limit();
        let runs: Vec<Pfn> = (0..limit / 3 + 3)
            .map(|_| {
                let mut p = [0 as Pfn; 3];
                assert!(arena.alloc_pages(&mut p, 1));
                p[0]
            })
            .collect();
        for &r in &runs {
            arena.free_pages(&[r, r + 1, r + 2]);
        }
        assert!(arena.pages_cached() as usize <= limit);
        assert_eq!(arena.pages_cached() % 3, 0, "whole runs only");
        let free = arena.free.lock().unwrap();
        let f = &free.runs.by_kind[&(super::role_of(1, 0), 3)];
        assert_eq!(f.cached.len() + f.released.len(), runs.len());
        assert_eq!(f.released[0], runs[0], "the oldest run was evicted first");
    }
}
