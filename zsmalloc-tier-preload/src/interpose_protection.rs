//! The calls that change what the program's pages allow, taken over on the reserve: `mprotect`,
//! `pkey_mprotect`, `mlock`, `mlock2`, `munlock` and `mlockall`. Each is made by the kernel as
//! asked and recorded in the protection map (`protection.rs`), under the tier's lock, so that
//! the handler evicts a page only as its protection allows. Outside the reserve, and on the
//! handler's thread, they go to the kernel alone.

use libc::{c_int, c_void, size_t};

use crate::heap::{Change, HEAP};
use crate::reserve;
use crate::sys::{self, PAGE};

/// Change `c` of `[addr, addr + len)`, if the range starts in the reserve (`None`: it does not,
/// and the kernel alone makes it). An unaligned start is `EINVAL`, as the kernel's.
fn on_reserve(addr: *mut c_void, len: size_t, c: Change) -> Option<c_int> {
    let a = addr as usize;
    if !reserve::contains(a) || sys::on_handler() {
        return None;
    }
    if !a.is_multiple_of(PAGE) {
        sys::set_errno(libc::EINVAL);
        return Some(-1);
    }
    if len == 0 {
        return Some(0);
    }
    Some(HEAP.with(|h| h.change(a, len, c)))
}

/// # Safety
/// As `mprotect(2)`.
#[no_mangle]
pub unsafe extern "C" fn mprotect(addr: *mut c_void, len: size_t, prot: c_int) -> c_int {
    // SAFETY: pkey_mprotect with key -1 is mprotect.
    unsafe { pkey_mprotect(addr, len, prot, -1) }
}

/// # Safety
/// As `pkey_mprotect(2)`. A page under a key other than -1 is kept resident: what the key
/// allows is the program's to say.
#[no_mangle]
pub unsafe extern "C" fn pkey_mprotect(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    pkey: c_int,
) -> c_int {
    on_reserve(addr, len, Change::Access { prot, pkey }).unwrap_or_else(|| {
        // SAFETY: forwarded to the kernel.
        unsafe { sys::mprotect(addr as usize, len, prot, pkey) }
    })
}

/// # Safety
/// As `mlock(2)`.
#[no_mangle]
pub unsafe extern "C" fn mlock(addr: *const c_void, len: size_t) -> c_int {
    // SAFETY: mlock2 with no flags is mlock.
    unsafe { mlock2(addr, len, 0) }
}

/// # Safety
/// As `mlock2(2)`. A locked page of the reserve is never evicted.
#[no_mangle]
pub unsafe extern "C" fn mlock2(addr: *const c_void, len: size_t, flags: libc::c_uint) -> c_int {
    let flags = flags as c_int;
    on_reserve(addr as *mut c_void, len, Change::Lock { flags }).unwrap_or_else(|| {
        // SAFETY: forwarded to the kernel.
        unsafe { sys::mlock(addr as usize, len, true, flags) }
    })
}

/// # Safety
/// As `munlock(2)`.
#[no_mangle]
pub unsafe extern "C" fn munlock(addr: *const c_void, len: size_t) -> c_int {
    on_reserve(addr as *mut c_void, len, Change::Unlock).unwrap_or_else(|| {
        // SAFETY: forwarded to the kernel.
        unsafe { sys::mlock(addr as usize, len, false, 0) }
    })
}

/// # Safety
/// As `mlockall(2)`. The program wants all its memory resident: the tier steps aside (every
/// page back, the report says why) before the kernel locks it, and the lock is made on fault
/// (`MCL_ONFAULT`): populating now would fill the whole reserve, address space the tier holds
/// for the program's future mappings, not memory of the program's.
#[no_mangle]
pub unsafe extern "C" fn mlockall(flags: c_int) -> c_int {
    let mut flags = flags;
    if reserve::base() != 0 && !sys::on_handler() {
        if let Some(t) = crate::tier::TIER.get() {
            if t.active.load(std::sync::atomic::Ordering::Acquire)
                && !crate::tier::IN_CHILD.load(std::sync::atomic::Ordering::Relaxed)
            {
                sys::signals_blocked(|| {
                    crate::doorbell::step_aside_for(t, crate::doorbell::Aside::LockAll)
                });
            }
        }
        if flags & libc::MCL_CURRENT != 0 {
            flags |= libc::MCL_ONFAULT;
        }
    }
    // SAFETY: forwarded to the kernel.
    unsafe { libc::syscall(libc::SYS_mlockall, flags) as c_int }
}
