//! The tier's own descriptors: its userfaultfd, the handler's eventfd, the trace being
//! recorded and the clock's `/proc/self/pagemap`, all moved to high numbers at the start
//! (`zsmalloc_tier::fd_number`). The program's `close`, `close_range` and `closefrom` leave them open (a program
//! that closes every descriptor above 2 is common): the userfaultfd closed would unregister
//! the reserve, its evicted pages then reading zeros, and a number the program opened next
//! would receive the tier's writes. An untiered forked child may close them: they are the
//! parent's, and nothing of the tier writes them there.

use std::sync::atomic::{AtomicI32, Ordering};

#[derive(Clone, Copy)]
pub enum Own {
    Uffd = 0,
    Wakeup = 1,
    Record = 2,
    Pagemap = 3,
}

static FDS: [AtomicI32; 4] =
    [AtomicI32::new(-1), AtomicI32::new(-1), AtomicI32::new(-1), AtomicI32::new(-1)];

/// The process whose descriptors they are: a child that shares the memory but not the
/// descriptor table (`vfork`, `posix_spawn`) has copies of them, which are its own.
static OWNER: AtomicI32 = AtomicI32::new(0);

pub fn keep(which: Own, fd: i32) {
    FDS[which as usize].store(fd, Ordering::Release);
    // SAFETY: getpid has no preconditions.
    OWNER.store(unsafe { libc::getpid() }, Ordering::Release);
}

/// Whether `fd` is one of the tier's descriptors in the process that owns them.
pub fn owned_here(fd: i32) -> bool {
    // SAFETY: getpid has no preconditions.
    is_own(fd) && OWNER.load(Ordering::Acquire) == unsafe { libc::getpid() }
}

/// No longer the tier's (an untiered child, or a tiered one's trace, which it does not write).
pub fn release(which: Own) {
    keep(which, -1);
}

pub fn release_all() {
    for fd in &FDS {
        fd.store(-1, Ordering::Release);
    }
}

pub fn is_own(fd: i32) -> bool {
    fd >= 0 && FDS.iter().any(|f| f.load(Ordering::Acquire) == fd)
}

/// The tier's descriptors, ascending (-1: none), without allocating (a forked child may
/// close descriptors before it executes).
fn sorted() -> [i64; 4] {
    let mut fds = FDS.each_ref().map(|f| i64::from(f.load(Ordering::Acquire)));
    fds.sort_unstable();
    fds
}

/// Closes `[first, last]` but the tier's descriptors, calling `close` on each range left
/// between them, in order: the first failure's result, or 0.
pub fn close_around(first: u32, last: u32, close: impl FnMut(u32, u32) -> i32) -> i32 {
    ranges_around(first, last, &sorted(), close)
}

fn ranges_around(
    first: u32,
    last: u32,
    own: &[i64],
    mut close: impl FnMut(u32, u32) -> i32,
) -> i32 {
    let mut result = 0;
    let mut from = i64::from(first);
    let mut range = |a: i64, b: i64| {
        let r = close(a as u32, b as u32);
        if result == 0 {
            result = r;
        }
    };
    for &fd in own.iter().filter(|&&fd| fd >= i64::from(first) && fd <= i64::from(last)) {
        if fd > from {
            range(from, fd - 1);
        }
        from = from.max(fd + 1);
    }
    if from <= i64::from(last) {
        range(from, i64::from(last));
    }
    result
}

#[cfg(test)]
mod tests {
    use super::ranges_around;

    fn ranges(first: u32, last: u32, own: &[i64]) -> Vec<(u32, u32)> {
        let mut got = Vec::new();
        ranges_around(first, last, own, |a, b| {
            got.push((a, b));
            0
        });
        got
    }

    #[test]
    fn ranges_skip_the_tiers_descriptors() {
        let max = u32::MAX;
        assert_eq!(ranges(3, max, &[-1, -1, -1]), vec![(3, max)]);
        assert_eq!(ranges(3, max, &[3, 5, 6]), vec![(4, 4), (7, max)]);
        assert_eq!(ranges(0, 10, &[-1, 2, 20]), vec![(0, 1), (3, 10)]);
        assert_eq!(ranges(4, 4, &[-1, -1, 4]), vec![]);
        assert_eq!(ranges(0, max, &[-1, 7, i64::from(max)]), vec![(0, 6), (8, max - 1)]);
    }

    #[test]
    fn the_first_failure_is_the_result() {
        let mut n = 0;
        let r = ranges_around(0, 10, &[-1, -1, 5], |_, _| {
            n += 1;
            if n == 1 {
                -1
            } else {
                0
            }
        });
        assert_eq!((r, n), (-1, 2));
    }
}
