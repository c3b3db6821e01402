//! Private anonymous mappings the tier owns, reached through raw addresses only (the kernel
//! fills and empties their pages under userfaultfd, which Rust references could not follow).

use std::io;

use crate::uffd::page_size;

/// A private anonymous mapping, unmapped when dropped.
#[derive(Debug)]
pub struct Region {
    addr: usize,
    len: usize,
}

impl Region {
    /// `len` bytes (rounded up to pages) of fresh, unpopulated memory, without transparent huge
    /// pages so that every page faults on its own.
    pub fn anonymous(len: usize) -> io::Result<Region> {
        let page = page_size();
        let len = len.max(1).div_ceil(page) * page;
        // SAFETY: a new private anonymous mapping at an address the kernel picks; it aliases
        // nothing.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let region = Region { addr: p as usize, len };
        // SAFETY: the range is the mapping just made; the advice only affects its page size.
        // It can fail where THP is not built in, which changes nothing here.
        unsafe { libc::madvise(p, len, libc::MADV_NOHUGEPAGE) };
        Ok(region)
    }

    pub fn addr(&self) -> usize {
        self.addr
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The address of page `i`.
    pub fn page(&self, i: usize) -> usize {
        assert!(i < self.len / page_size(), "page {i} is outside the region");
        self.addr + i * page_size()
    }

    /// Which pages are present in memory now (`mincore`): a page moved out or never touched
    /// reads false.
    pub fn resident(&self) -> io::Result<Vec<bool>> {
        let mut vec = vec![0u8; self.len / page_size()];
        // SAFETY: `vec` holds one byte per page of the live mapping, as mincore writes.
        let r =
            unsafe { libc::mincore(self.addr as *mut libc::c_void, self.len, vec.as_mut_ptr()) };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(vec.iter().map(|b| b & 1 != 0).collect())
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: the mapping is this region's own and nothing references it past the drop.
        unsafe { libc::munmap(self.addr as *mut libc::c_void, self.len) };
    }
}
