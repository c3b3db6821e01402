//! Which pages were written: the `PAGEMAP_SCAN` ioctl of `/proc/self/pagemap` (Linux 6.7) over
//! memory registered with userfaultfd in write-protect mode under `UFFD_FEATURE_WP_ASYNC`. A
//! page brought in write-protected (`UFFDIO_COPY_MODE_WP`) loses its protection at its first
//! write, which the kernel resolves itself (no fault message); the scan reports the pages
//! that lost it (`PAGE_IS_WRITTEN`) and, with `rearm`, protects them again in the same walk, so
//! the next scan reports the writes after this one. One ioctl covers a range and answers with
//! runs of pages, not a word per page.
//!
//! The ABI is written out (`include/uapi/linux/fs.h` as of Linux 6.18), as the userfaultfd
//! one is: Debian's headers lack it.

use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, OwnedFd};

/// `PAGE_IS_WRITTEN`: not write-protected: written since it was last protected, or a hole
/// never protected (6.18 reports an unprotected hole written).
pub const PAGE_IS_WRITTEN: u64 = 1 << 1;
/// `PAGE_IS_PRESENT`: a page is there.
pub const PAGE_IS_PRESENT: u64 = 1 << 3;
/// `PM_SCAN_WP_MATCHING`: write-protect the pages that matched.
pub const PM_SCAN_WP_MATCHING: u64 = 1 << 0;
/// `PM_SCAN_CHECK_WPASYNC`: refuse (`EPERM`) a range not registered for async write-protect,
/// rather than report nothing of it.
pub const PM_SCAN_CHECK_WPASYNC: u64 = 1 << 1;

/// `struct page_region`: the pages `[start, end)` share `categories`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PageRegion {
    pub start: u64,
    pub end: u64,
    pub categories: u64,
}

/// `struct pm_scan_arg`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
struct PmScanArg {
    size: u64,
    flags: u64,
    start: u64,
    end: u64,
    walk_end: u64,
    vec: u64,
    vec_len: u64,
    max_pages: u64,
    category_inverted: u64,
    category_mask: u64,
    category_anyof_mask: u64,
    return_mask: u64,
}

const _: () = assert!(size_of::<PmScanArg>() == 96);
const _: () = assert!(size_of::<PageRegion>() == 24);

/// `PAGEMAP_SCAN = _IOWR('f', 16, struct pm_scan_arg)` (the generic encoding, as in
/// [`crate::uffd`]).
pub const PAGEMAP_SCAN: u64 =
    (3 << 30) | ((size_of::<PmScanArg>() as u64) << 16) | (0x66 << 8) | 16;

/// This process's `/proc/self/pagemap`, opened once (the scans name its memory).
#[derive(Debug)]
pub struct Pagemap {
    fd: OwnedFd,
}

impl Pagemap {
    pub fn open() -> io::Result<Pagemap> {
        let f = std::fs::File::open("/proc/self/pagemap")?;
        Ok(Pagemap { fd: f.into() })
    }

    /// The same file under the lowest free number at or above `floor`
    /// (`fd_number::raise`).
    pub fn raised(self, floor: i32) -> io::Result<Pagemap> {
        Ok(Pagemap { fd: crate::fd_number::raise(self.fd, floor)? })
    }

    pub fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    /// Calls `found(start, end)` for each run of present pages in `[start, end)` written since
    /// they were last write-protected, protecting them again when `rearm`. Holes are neither
    /// reported nor protected (protecting one would put a marker there). `regions` is the ioctl's
    /// answer buffer: a range with more runs than it holds takes several ioctls. Returns the
    /// ioctls made.
    pub fn written(
        &self,
        start: usize,
        end: usize,
        rearm: bool,
        regions: &mut [PageRegion],
        mut found: impl FnMut(usize, usize),
    ) -> io::Result<u64> {
        let mut at = start as u64;
        let mut calls = 0;
        while at < end as u64 {
            let mut arg = PmScanArg {
                size: size_of::<PmScanArg>() as u64,
                flags: PM_SCAN_CHECK_WPASYNC | if rearm { PM_SCAN_WP_MATCHING } else { 0 },
                start: at,
                end: end as u64,
                vec: regions.as_mut_ptr() as u64,
                vec_len: regions.len() as u64,
                category_mask: PAGE_IS_WRITTEN | PAGE_IS_PRESENT,
                return_mask: PAGE_IS_WRITTEN,
                ..PmScanArg::default()
            };
            // SAFETY: PAGEMAP_SCAN reads and writes one `struct pm_scan_arg` (`arg`, its size
            // checked above and given in `size`) and writes at most `vec_len` page regions into
            // `regions`, a live buffer of that many. It changes the pages' protection, never
            // their contents.
            let n = unsafe {
                libc::ioctl(self.fd.as_raw_fd(), PAGEMAP_SCAN as libc::c_ulong, &mut arg)
            };
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            calls += 1;
            for r in &regions[..n as usize] {
                found(r.start as usize, r.end as usize);
            }
            // The walk stops early only when the buffer is full; no progress would loop.
            if arg.walk_end <= at {
                break;
            }
            at = arg.walk_end;
        }
        Ok(calls)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The number `_IOWR('f', 16, struct pm_scan_arg)` gives with gcc on x86_64.
    #[test]
    fn the_ioctl_number_is_the_headers() {
        assert_eq!(PAGEMAP_SCAN, 0xc060_6610);
    }
}
