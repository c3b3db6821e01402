//! Fault injection for tests: make the arena's and the map slots' calls into the system fail on
//! demand.
//!
//! Not an API, not a build feature and not an environment variable: a test arms a [`Point`] for
//! the calling thread, and the next calls there fail as the system call would (the arena then
//! reports "no memory" and the store that needed the pages fails with `ENOMEM`, changing
//! nothing; a map slot's mapping fails the read with `ENOMEM`, the object untouched). Real
//! memory pressure cannot be simulated this way at the first touch of a page:
//! that is a `SIGBUS` or the OOM killer, never an errno (docs/RELIABILITY.md).
//!
//! Points are per thread, so tests running in parallel do not see each other's faults. The C
//! library exposes [`arm`] as the hidden symbol `zsmalloc_fault_inject` (for its C tests, the
//! fuzzer and the Python tests through ctypes). New points are added at the end of [`Point`]
//! and tested with `fails` at the start of the call they stand for.

use std::cell::Cell;

/// A call that can be made to fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
#[non_exhaustive]
pub enum Point {
    /// Reserving a pool's address range (`mmap` at pool creation): the pool then has no pages
    /// and every store fails with `ENOMEM`.
    Reserve = 0,
    /// Making the next step of the reservation accessible (`mprotect`, every 256 MiB).
    Commit = 1,
    /// Any allocation of a zspage's pages, as if the page allocator had none.
    Pages = 2,
    /// Growing the memfd backing (`ftruncate`, then mapping the new part, at each step of the
    /// reservation made accessible): the store that needed the pages fails with `ENOMEM`.
    MemfdGrow = 3,
    /// Mapping an object's two pages into a map slot (`map` mode's spanning reads): the read
    /// fails with `MapFailed` (`ENOMEM`) and the object stays as it was.
    MapWindow = 4,
}

/// Number of points.
const POINTS: usize = 5;

/// Every point, in order.
const ALL: [Point; POINTS] =
    [Point::Reserve, Point::Commit, Point::Pages, Point::MemfdGrow, Point::MapWindow];

impl Point {
    /// The point numbered `n` (its C value), if there is one.
    pub fn from_u32(n: u32) -> Option<Point> {
        ALL.get(usize::try_from(n).ok()?).copied()
    }
}

/// One point's plan: calls to let through, then calls to fail; and the faults injected so far.
#[derive(Clone, Copy, Default)]
struct Plan {
    skip: u32,
    fail: u32,
    injected: u64,
}

thread_local! {
    static PLANS: Cell<[Plan; POINTS]> = const {
        Cell::new([Plan { skip: 0, fail: 0, injected: 0 }; POINTS])
    };
}

/// Arms `point` for this thread: the next `skip` calls there succeed, the `fail` after them fail.
/// `fail == 0` disarms it. Returns the faults injected at `point` on this thread so far.
pub fn arm(point: Point, skip: u32, fail: u32) -> u64 {
    PLANS
        .try_with(|c| {
            let mut plans = c.get();
            let p = &mut plans[point as usize];
            (p.skip, p.fail) = (skip, fail);
            let injected = p.injected;
            c.set(plans);
            injected
        })
        .unwrap_or(0)
}

/// Disarms every point of this thread.
pub fn disarm_all() {
    for p in ALL {
        arm(p, 0, 0);
    }
}

/// Whether the call at `point` about to be made must fail (and counts it). One thread-local
/// load when nothing is armed; called only on the arena's slow paths.
#[inline]
pub(crate) fn fails(point: Point) -> bool {
    PLANS
        .try_with(|c| {
            let mut plans = c.get();
            let p = &mut plans[point as usize];
            if p.fail == 0 {
                return false;
            }
            let fail = if p.skip > 0 {
                p.skip -= 1;
                false
            } else {
                p.fail -= 1;
                p.injected += 1;
                true
            };
            c.set(plans);
            fail
        })
        .unwrap_or(false)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_point_skips_then_fails_then_disarms() {
        assert!(!fails(Point::Commit), "unarmed");
        arm(Point::Commit, 1, 2);
        assert!(!fails(Point::Pages), "another point");
        assert_eq!([fails(Point::Commit), fails(Point::Commit)], [false, true]);
        assert_eq!([fails(Point::Commit), fails(Point::Commit)], [true, false]);
        assert_eq!(arm(Point::Commit, 0, 0), 2, "two faults injected");
        assert_eq!(Point::from_u32(2), Some(Point::Pages));
        assert_eq!(Point::from_u32(4), Some(Point::MapWindow));
        assert_eq!(Point::from_u32(5), None);
        assert!(ALL.iter().enumerate().all(|(i, &p)| p as usize == i));
        disarm_all();
    }
}
