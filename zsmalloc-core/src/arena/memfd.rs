//! The memfd backing of the page arena: the reservation's committed steps are shared mappings of
//! one memfd (at file offset = arena offset), so any page can be mapped a second time, beside
//! any other, by `map` mode's map slots (`map_window.rs`). Offered to every mode, so that a cost
//! study compares the modes on the same memory.
//!
//! Released pages are hole-punched (`fallocate(PUNCH_HOLE)`): `MADV_DONTNEED` on a shared
//! mapping only drops the page tables and keeps the pages in the file, so resident memory would
//! not follow `total_pages`. Punching also removes the page from every mapping of it, a map
//! slot's included.
//!
//! Fork: the committed steps are `MADV_DONTFORK`, so a child process does not inherit the pool's
//! pages (it could otherwise write the parent's objects through the shared mapping); a pool is
//! unusable in a child, as with the anonymous backing after `fork` without exec. Map slots are
//! read-only views.

use std::ffi::c_int;
use std::io;

/// An open memfd, closed on drop.
pub(super) struct Memfd {
    fd: c_int,
}

impl Memfd {
    /// A new, empty memfd (close-on-exec).
    pub(super) fn create() -> io::Result<Memfd> {
        // SAFETY: the name is a NUL-terminated literal; the result is checked.
        let fd = unsafe { libc::memfd_create(c"zsmalloc".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Memfd { fd })
    }

    pub(super) fn fd(&self) -> c_int {
        self.fd
    }

    /// Grows the file to `offset + len` bytes and maps that part of it, readable and writable,
    /// over `[base + offset, base + offset + len)` of the reservation.
    ///
    /// # Safety
    /// The range lies inside the caller's own reservation, host-page aligned, and nothing in it
    /// is in use (it is still `PROT_NONE`).
    pub(super) unsafe fn commit(&self, base: *mut u8, offset: usize, len: usize) -> bool {
        if crate::fault::fails(crate::fault::Point::MemfdGrow) {
            return false;
        }
        let Ok(end) = libc::off_t::try_from(offset + len) else { return false };
        // SAFETY: plain syscalls on our own descriptor and (per the contract) our own range;
        // MAP_FIXED replaces only the reservation's PROT_NONE pages there.
        unsafe {
            if libc::ftruncate(self.fd, end) != 0 {
                return false;
            }
            let at = base.add(offset).cast::<libc::c_void>();
            let p = libc::mmap(
                at,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_FIXED,
                self.fd,
                offset as libc::off_t,
            );
            if p != at {
                return false;
            }
            libc::madvise(at, len, libc::MADV_DONTFORK);
        }
        true
    }

    /// Gives `len` bytes at file offset `offset` back to the system.
    pub(super) fn punch(&self, offset: usize, len: usize) {
        // SAFETY: a syscall on our own descriptor; no memory is passed.
        unsafe {
            libc::fallocate(
                self.fd,
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                offset as libc::off_t,
                len as libc::off_t,
            );
        }
    }
}

impl Drop for Memfd {
    fn drop(&mut self) {
        // SAFETY: our own descriptor, closed once.
        unsafe {
            libc::close(self.fd);
        }
    }
}
