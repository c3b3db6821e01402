//! `map` mode's map slots: the userspace analogue of `vm_map_ram` for a read of an object that
//! crosses a page. A slot is two (simulated) pages of address space; a spanning read maps the
//! object's two pages of the pool's memfd side by side into one (`MAP_FIXED | MAP_POPULATE`, so
//! the cost is the mapping, not first-touch faults) and hands out the object's address there.
//!
//! - One reservation per pool holds every slot, so a section's end finds its slot from the
//!   address alone, or from the handle it was begun on (each in-use slot records the handle
//!   word's address), whichever thread ends it. Never a mapping per page or per zspage: at most
//!   one or two per slot.
//! - Each thread with an owned index (`tid.rs`) has its ring of [`RING`] slots, so nested and held
//!   sections work; threads without one share [`SHARED_RINGS`] rings. Slots are claimed with a
//!   CAS and never waited for: with every slot of its ring in use, a read fails with `EAGAIN`.
//! - Unmapping is lazy: an ended section's mapping stays until its slot is reused, when the new
//!   mapping replaces it in the same `mmap` call (the kernel's vmap blocks also defer their
//!   flush). A stale mapping never keeps memory: punching a released page out of the memfd
//!   removes it from every mapping.
//! - A thread that exits with a section open leaves that slot in use (and the object held) until
//!   some thread ends the section; its owned index, and so its ring, go to a later thread, which
//!   skips the slot.
//!
//! A userspace mapping costs a syscall, the `mmap_lock` and (on reuse) an immediate TLB
//! shootdown: an upper bound of the kernel's `vm_map_ram`, not the same thing.

use std::ffi::c_int;
use std::io;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::error::{Error, Result};
use crate::tid::{self, Tid};

/// Slots per ring.
pub(crate) const RING: usize = 64;
/// Rings shared by threads without an owned index.
pub(crate) const SHARED_RINGS: usize = 4;
const RINGS: usize = tid::OWNED + SHARED_RINGS;

/// A slot's word: free, unusable (its address range could not be restored after a failed
/// mapping), or the address of the handle word of the section holding it (8-aligned, > 1).
const FREE: usize = 0;
const BROKEN: usize = 1;

/// The map slots of one pool.
pub(crate) struct MapWindow {
    base: NonNull<u8>,
    len: usize,
    page: usize,
    slots: Box<[AtomicUsize]>,
    /// Where each ring's next claim starts looking (owned rings: one writer at a time).
    cursors: Box<[AtomicUsize]>,
    /// Slots in use per ring, so a search by handle skips the empty rings (without them a
    /// search that finds nothing reads every slot word: over 4,000 loads, microseconds).
    in_use: Box<[AtomicUsize]>,
}

// SAFETY: the reservation is address space owned by the window; slot words are atomics.
unsafe impl Send for MapWindow {}
// SAFETY: as above; the fields are immutable after creation except the atomics.
unsafe impl Sync for MapWindow {}

impl MapWindow {
    /// Reserves the address space of every ring's slots (`PROT_NONE`, no memory).
    pub(crate) fn new(page: usize) -> io::Result<MapWindow> {
        let len = RINGS * RING * 2 * page;
        // SAFETY: an anonymous private PROT_NONE mapping at an address the kernel picks; the
        // result is checked against MAP_FAILED before use.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base = NonNull::new(p.cast()).ok_or_else(|| io::Error::other("mmap returned 0"))?;
        Ok(MapWindow {
            base,
            len,
            page,
            slots: (0..RINGS * RING).map(|_| AtomicUsize::new(FREE)).collect(),
            cursors: (0..RINGS).map(|_| AtomicUsize::new(0)).collect(),
            in_use: (0..RINGS).map(|_| AtomicUsize::new(0)).collect(),
        })
    }

    fn slot_addr(&self, s: usize) -> *mut u8 {
        // SAFETY: s < RINGS * RING, so the slot lies inside the reservation.
        unsafe { self.base.as_ptr().add(s * 2 * self.page) }
    }

    /// Claims a free slot of the calling thread's ring for the section of handle `owner`.
    fn claim(&self, owner: usize) -> Result<usize> {
        debug_assert!(owner > BROKEN && owner.is_multiple_of(8));
        let t = Tid::current();
        let (ring, rings) = match t.owned_index() {
            Some(i) => (i, 1),
            None => (tid::OWNED, SHARED_RINGS),
        };
        let count = rings * RING;
        let cursor = &self.cursors[ring];
        let start = if rings == 1 {
            cursor.load(Ordering::Relaxed)
        } else {
            cursor.fetch_add(1, Ordering::Relaxed)
        };
        for k in 0..count {
            let at = (start + k) % count;
            let s = ring * RING + at;
            if self.slots[s].load(Ordering::Relaxed) == FREE
                && self.slots[s]
                    .compare_exchange(FREE, owner, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                if rings == 1 {
                    cursor.store(at + 1, Ordering::Relaxed);
                }
                // Before the section's begin returns, so before any end can look for it.
                self.in_use[s / RING].fetch_add(1, Ordering::AcqRel);
                return Ok(s);
            }
        }
        Err(Error::Again(format!(
            "all {count} map slots of this thread's ring hold open read sections"
        )))
    }

    /// Maps the `unit` bytes at file offset `off_a` (a page, or a compound page of the
    /// multi-page band: at most the slot's half) and the `unit` bytes at `off_b` after them,
    /// read-only, into a slot claimed for the section of handle `owner`; returns the slot's
    /// address. On failure nothing is claimed.
    pub(crate) fn map(
        &self,
        fd: c_int,
        off_a: usize,
        off_b: usize,
        unit: usize,
        owner: usize,
    ) -> Result<*const u8> {
        debug_assert!(unit <= self.page);
        let s = self.claim(owner)?;
        let addr = self.slot_addr(s);
        // An injected fault fails as the mapping would for want of memory (docs/RELIABILITY.md).
        let injected = crate::fault::fails(crate::fault::Point::MapWindow);
        let ok = !injected
            && if off_b == off_a + unit {
                map_fixed(addr, 2 * unit, fd, off_a)
            } else {
                // SAFETY: the slot's second unit, inside the reservation (unit <= half a slot).
                map_fixed(addr, unit, fd, off_a)
                    && map_fixed(unsafe { addr.add(unit) }, unit, fd, off_b)
            };
        if ok {
            return Ok(addr);
        }
        let errno = if injected {
            libc::ENOMEM
        } else {
            io::Error::last_os_error().raw_os_error().unwrap_or(libc::ENOMEM)
        };
        // A failed MAP_FIXED may have unmapped the slot: put the reservation back, so that no
        // other mapping of the process can land there, else never use the slot again.
        // SAFETY: the slot lies inside our reservation and is claimed by this thread.
        let restored = unsafe {
            libc::mmap(
                addr.cast(),
                2 * self.page,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED,
                -1,
                0,
            )
        } == addr.cast();
        self.slots[s].store(if restored { FREE } else { BROKEN }, Ordering::Release);
        self.in_use[s / RING].fetch_sub(1, Ordering::AcqRel);
        Err(Error::MapFailed { errno: if errno == 0 { libc::ENOMEM } else { errno } })
    }

    /// Whether `addr` lies in a slot.
    #[inline]
    pub(crate) fn holds(&self, addr: usize) -> bool {
        addr.wrapping_sub(self.base.as_ptr() as usize) < self.len
    }

    /// Ends the slot of a section of handle `owner`: the one holding address `at` if given,
    /// else one found by `owner`, in the calling thread's ring first, then in every ring (a
    /// section may be ended by another thread). False if no slot holds such a section.
    pub(crate) fn release(&self, owner: usize, at: Option<usize>) -> bool {
        let free = |s: usize| {
            let freed = self.slots[s]
                .compare_exchange(owner, FREE, Ordering::Release, Ordering::Relaxed)
                .is_ok();
            if freed {
                self.in_use[s / RING].fetch_sub(1, Ordering::AcqRel);
            }
            freed
        };
        if let Some(at) = at.filter(|&a| self.holds(a)) {
            let s = (at - self.base.as_ptr() as usize) / (2 * self.page);
            if free(s) {
                return true;
            }
        }
        // The ring's slots, if any is in use.
        let search = |ring: usize| {
            self.in_use[ring].load(Ordering::Acquire) > 0
                && (ring * RING..(ring + 1) * RING)
                    .any(|s| self.slots[s].load(Ordering::Relaxed) == owner && free(s))
        };
        let own = Tid::current().owned_index();
        if own.is_some_and(search) {
            return true;
        }
        (0..RINGS).any(|ring| Some(ring) != own && search(ring))
    }

    /// Slots in use now (tests and diagnostics).
    pub(crate) fn in_use(&self) -> usize {
        self.slots.iter().filter(|s| s.load(Ordering::Relaxed) > BROKEN).count()
    }
}

/// Maps `len` bytes of `fd` at `offset` over `addr` (inside a reservation), read-only, populated.
fn map_fixed(addr: *mut u8, len: usize, fd: c_int, offset: usize) -> bool {
    // SAFETY: `addr..addr + len` is a slot of our own reservation claimed by the caller, so
    // MAP_FIXED replaces only our PROT_NONE pages or this slot's previous (ended) mapping; the
    // result is checked.
    unsafe {
        libc::mmap(
            addr.cast(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED | libc::MAP_FIXED | libc::MAP_POPULATE,
            fd,
            offset as libc::off_t,
        ) == addr.cast()
    }
}

impl Drop for MapWindow {
    fn drop(&mut self) {
        // SAFETY: exactly the range mmap returned; the pool (the window's only user) is gone.
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.len);
        }
    }
}
