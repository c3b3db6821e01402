//! Runs of free pages in the reserve, by start and by length: best fit for a span, freed spans
//! joined with their neighbours, and a bump top above which nothing was ever handed out.

use std::collections::{BTreeMap, BTreeSet};

pub struct Spans {
    by_start: BTreeMap<u32, u32>,
    by_len: BTreeSet<(u32, u32)>,
    /// Pages at and above `top` were never handed out, or were given back and emptied.
    pub top: u32,
    limit: u32,
}

impl Spans {
    pub const fn new() -> Spans {
        Spans { by_start: BTreeMap::new(), by_len: BTreeSet::new(), top: 0, limit: 0 }
    }

    pub fn set_limit(&mut self, pages: u32) {
        self.limit = pages;
    }

    fn insert(&mut self, start: u32, len: u32) {
        if len > 0 {
            self.by_start.insert(start, len);
            self.by_len.insert((len, start));
        }
    }

    fn remove(&mut self, start: u32, len: u32) {
        self.by_start.remove(&start);
        self.by_len.remove(&(len, start));
    }

    /// `pages` pages starting at a multiple of `align` pages, best fit among the free runs,
    /// else from the top; `None` when the reserve is full.
    pub fn alloc(&mut self, pages: u32, align: u32) -> Option<u32> {
        let need = pages.checked_add(align - 1)?;
        if let Some(&(len, start)) = self.by_len.range((need, 0)..).next() {
            self.remove(start, len);
            let at = start.next_multiple_of(align);
            self.insert(start, at - start);
            self.insert(at + pages, start + len - (at + pages));
            return Some(at);
        }
        let at = self.top.checked_next_multiple_of(align)?;
        if u64::from(at) + u64::from(pages) > u64::from(self.limit) {
            return None;
        }
        let gap = (self.top, at - self.top);
        self.top = at + pages;
        self.free(gap.0, gap.1);
        Some(at)
    }

    /// Gives back `[start, start + pages)`, joined with the free runs on either side.
    pub fn free(&mut self, mut start: u32, mut pages: u32) {
        if pages == 0 {
            return;
        }
        if let Some((&s, &l)) = self.by_start.range(..start).next_back() {
            if s + l == start {
                self.remove(s, l);
                start = s;
                pages += l;
            }
        }
        if let Some(&l) = self.by_start.get(&(start + pages)) {
            self.remove(start + pages, l);
            pages += l;
        }
        if start + pages == self.top {
            self.top = start;
        } else {
            self.insert(start, pages);
        }
    }

    /// Takes the `pages` pages at `start` if they are free (a span grown in place).
    pub fn take_at(&mut self, start: u32, pages: u32) -> bool {
        if start == self.top {
            if u64::from(start) + u64::from(pages) > u64::from(self.limit) {
                return false;
            }
            self.top += pages;
            return true;
        }
        let Some(&len) = self.by_start.get(&start) else { return false };
        if len < pages {
            // The run may reach the top, beyond which the rest is free too.
            if start + len == self.top
                && u64::from(start) + u64::from(pages) <= u64::from(self.limit)
            {
                self.remove(start, len);
                self.top = start + pages;
                return true;
            }
            return false;
        }
        self.remove(start, len);
        self.insert(start + pages, len - pages);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_fit_join_and_fall_back_to_the_top() {
        let mut s = Spans::new();
        s.set_limit(100);
        let a = s.alloc(10, 1).unwrap();
        let b = s.alloc(10, 1).unwrap();
        let c = s.alloc(10, 1).unwrap();
        assert_eq!((a, b, c, s.top), (0, 10, 20, 30));
        s.free(b, 10);
        assert_eq!(s.alloc(4, 1), Some(10), "best fit reuses the hole");
        s.free(10, 4);
        s.free(a, 10);
        assert_eq!(s.by_start.get(&0), Some(&20), "joined with both neighbours");
        s.free(c, 10);
        assert_eq!(s.top, 0, "everything back: the top falls");
        let d = s.alloc(5, 8).unwrap();
        assert_eq!(d % 8, 0);
        assert!(s.take_at(d + 5, 10), "grown in place at the top");
        assert!(s.alloc(200, 1).is_none(), "beyond the reserve");
        s.free(d, 15);
        assert_eq!(s.top, 0);
        let e = s.alloc(3, 1).unwrap();
        s.alloc(3, 1).unwrap();
        s.free(e, 3);
        assert!(s.take_at(e, 2) && !s.take_at(e, 2));
    }
}
