//! The calls the library takes over: the malloc family, anonymous private mappings above a
//! page, and the calls that change them (`munmap`, `mremap`, `madvise`, `mmap` with
//! `MAP_FIXED` over them; their protection and locks in `interpose_protection.rs`), plus
//! `close` of the tier's descriptors. The program's blocks and mappings come from the reserve; the handler
//! thread's go to glibc and the kernel. A pointer outside the reserve is glibc's (the tier's
//! own, or one from before the reserve existed) and goes back to glibc.

use libc::{c_int, c_void, size_t};

use crate::heap::HEAP;
use crate::reserve;
use crate::sys::{self, PAGE};
use crate::tier;

fn untiered(len: usize) {
    tier::stats().add(zsmalloc_tier::stats::Field::UntieredBytes, len as u64);
}

fn alloc(size: usize, align: usize, zeroed: bool) -> *mut c_void {
    if let Some((p, dirty)) = HEAP.with(|h| h.alloc(size, align)) {
        if zeroed && dirty {
            // SAFETY: a block of at least `size` bytes, the caller's now.
            unsafe { std::ptr::write_bytes(p as *mut u8, 0, size) };
        }
        return p as *mut c_void;
    }
    untiered(size);
    // SAFETY: glibc's allocator, for what the reserve cannot hold.
    let p = unsafe {
        if align <= 16 {
            sys::__libc_malloc(size)
        } else {
            sys::__libc_memalign(align, size)
        }
    };
    if zeroed && !p.is_null() {
        // SAFETY: a block of `size` bytes glibc just gave.
        unsafe { std::ptr::write_bytes(p as *mut u8, 0, size) };
    }
    if p.is_null() {
        sys::set_errno(libc::ENOMEM);
    }
    p
}

/// # Safety
/// As `malloc(3)`.
#[no_mangle]
pub unsafe extern "C" fn malloc(size: size_t) -> *mut c_void {
    if sys::on_handler() {
        // SAFETY: glibc's malloc, for the tier's own thread.
        return unsafe { sys::__libc_malloc(size) };
    }
    alloc(size, 16, false)
}

/// # Safety
/// As `calloc(3)`.
#[no_mangle]
pub unsafe extern "C" fn calloc(n: size_t, m: size_t) -> *mut c_void {
    if sys::on_handler() {
        // SAFETY: glibc's calloc, for the tier's own thread.
        return unsafe { sys::__libc_calloc(n, m) };
    }
    let Some(size) = n.checked_mul(m) else {
        sys::set_errno(libc::ENOMEM);
        return std::ptr::null_mut();
    };
    alloc(size, 16, true)
}

/// # Safety
/// As `free(3)`.
#[no_mangle]
pub unsafe extern "C" fn free(p: *mut c_void) {
    if p.is_null() {
        return;
    }
    if reserve::contains(p as usize) {
        // The handler never holds the program's blocks; it must not take the heap's lock.
        if !sys::on_handler() {
            HEAP.with(|h| h.free(p as usize));
        }
        return;
    }
    // SAFETY: a block outside the reserve came from glibc.
    unsafe { sys::__libc_free(p) };
}

/// # Safety
/// As `realloc(3)`.
#[no_mangle]
pub unsafe extern "C" fn realloc(p: *mut c_void, size: size_t) -> *mut c_void {
    if p.is_null() {
        // SAFETY: forwarded.
        return unsafe { malloc(size) };
    }
    if !reserve::contains(p as usize) || sys::on_handler() {
        // SAFETY: a block outside the reserve came from glibc.
        return unsafe { sys::__libc_realloc(p, size) };
    }
    if size == 0 {
        // SAFETY: forwarded: glibc frees and gives NULL.
        unsafe { free(p) };
        return std::ptr::null_mut();
    }
    let (grown, old) = HEAP.with(|h| (h.resize_in_place(p as usize, size), h.usable(p as usize)));
    if grown {
        return p;
    }
    let q = alloc(size, 16, false);
    if !q.is_null() {
        // SAFETY: both blocks are live and distinct; the copy is the smaller of their sizes.
        // It runs without a lock held, so its faults are served like any access.
        unsafe { std::ptr::copy_nonoverlapping(p as *const u8, q as *mut u8, old.min(size)) };
        // SAFETY: forwarded.
        unsafe { free(p) };
    }
    q
}

/// # Safety
/// As `reallocarray(3)` (glibc's would hand a block of the reserve to its own realloc).
#[no_mangle]
pub unsafe extern "C" fn reallocarray(p: *mut c_void, n: size_t, m: size_t) -> *mut c_void {
    let Some(size) = n.checked_mul(m) else {
        sys::set_errno(libc::ENOMEM);
        return std::ptr::null_mut();
    };
    // SAFETY: forwarded.
    unsafe { realloc(p, size) }
}

fn aligned(align: usize, size: usize) -> *mut c_void {
    if sys::on_handler() {
        // SAFETY: glibc's memalign, for the tier's own thread.
        return unsafe { sys::__libc_memalign(align, size) };
    }
    alloc(size, align, false)
}

/// # Safety
/// As `posix_memalign(3)`.
#[no_mangle]
pub unsafe extern "C" fn posix_memalign(
    out: *mut *mut c_void,
    align: size_t,
    size: size_t,
) -> c_int {
    if !align.is_power_of_two() || !align.is_multiple_of(std::mem::size_of::<usize>()) {
        return libc::EINVAL;
    }
    let p = aligned(align, size);
    if p.is_null() {
        return libc::ENOMEM;
    }
    // SAFETY: the caller passes a writable pointer.
    unsafe { *out = p };
    0
}

/// # Safety
/// As `aligned_alloc(3)`.
#[no_mangle]
pub unsafe extern "C" fn aligned_alloc(align: size_t, size: size_t) -> *mut c_void {
    if !align.is_power_of_two() {
        sys::set_errno(libc::EINVAL);
        return std::ptr::null_mut();
    }
    aligned(align, size)
}

/// # Safety
/// As `memalign(3)` (an alignment that is not a power of two is rounded up, as glibc does).
#[no_mangle]
pub unsafe extern "C" fn memalign(align: size_t, size: size_t) -> *mut c_void {
    aligned(align.max(1).checked_next_power_of_two().unwrap_or(PAGE), size)
}

/// # Safety
/// As `valloc(3)`.
#[no_mangle]
pub unsafe extern "C" fn valloc(size: size_t) -> *mut c_void {
    aligned(PAGE, size)
}

/// # Safety
/// As `pvalloc(3)`.
#[no_mangle]
pub unsafe extern "C" fn pvalloc(size: size_t) -> *mut c_void {
    aligned(PAGE, size.div_ceil(PAGE).max(1) * PAGE)
}

/// # Safety
/// As `malloc_usable_size(3)`.
#[no_mangle]
pub unsafe extern "C" fn malloc_usable_size(p: *mut c_void) -> size_t {
    if p.is_null() {
        return 0;
    }
    if reserve::contains(p as usize) {
        return HEAP.with(|h| h.usable(p as usize));
    }
    glibc_usable_size(p)
}

fn glibc_usable_size(p: *mut c_void) -> usize {
    type Usable = unsafe extern "C" fn(*mut c_void) -> size_t;
    static NEXT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    // SAFETY: dlsym of a NUL-terminated name; RTLD_NEXT finds glibc's definition.
    let f = *NEXT.get_or_init(|| unsafe {
        libc::dlsym(libc::RTLD_NEXT, c"malloc_usable_size".as_ptr()) as usize
    });
    if f == 0 {
        return 0;
    }
    // SAFETY: glibc's malloc_usable_size, of a block outside the reserve (glibc's).
    unsafe { std::mem::transmute::<usize, Usable>(f)(p) }
}

/// Whether the program's mapping goes to the reserve: anonymous, private, more than a page,
/// placed by the kernel, neither populated nor locked nor huge; of any protection (a
/// reservation made `PROT_NONE` is committed later by `mprotect` or `MAP_FIXED`, tiered too).
fn tiered_mapping(len: usize, prot: c_int, flags: c_int, fd: c_int) -> bool {
    let refused = libc::MAP_FIXED
        | libc::MAP_FIXED_NOREPLACE
        | libc::MAP_HUGETLB
        | libc::MAP_GROWSDOWN
        | libc::MAP_POPULATE
        | libc::MAP_LOCKED
        | libc::MAP_32BIT;
    len > PAGE
        && flags & libc::MAP_ANONYMOUS != 0
        && flags & 0x0f == libc::MAP_PRIVATE
        && flags & refused == 0
        && plain_prot(prot)
        && fd == -1
        && tier::TIER.get().is_some()
        && !tier::IN_CHILD.load(std::sync::atomic::Ordering::Relaxed)
        && !sys::on_handler()
}

/// A protection of read, write and execute bits only.
fn plain_prot(prot: c_int) -> bool {
    prot & !(libc::PROT_READ | libc::PROT_WRITE | libc::PROT_EXEC) == 0
}

/// # Safety
/// As `mmap(2)`.
#[no_mangle]
pub unsafe extern "C" fn mmap(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: libc::off_t,
) -> *mut c_void {
    let a = addr as usize;
    if flags & libc::MAP_FIXED != 0 && reserve::contains(a) && !sys::on_handler() {
        let fresh = libc::MAP_FIXED | libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
        let anonymous = flags & !libc::MAP_NORESERVE == fresh && fd == -1;
        if anonymous && plain_prot(prot) && a.is_multiple_of(PAGE) && len > 0 {
            let len = len.div_ceil(PAGE) * PAGE;
            // A fresh anonymous mapping over the program's own (a reservation committed, or
            // given back): the same pages, emptied (they stay registered, and read zeros as
            // a new mapping does), of the protection asked.
            let done = HEAP.with(|h| h.is_mapped(a, len).then(|| h.map_over(a, len, prot)));
            match done {
                Some(0) => return addr,
                Some(_) => return libc::MAP_FAILED,
                None => {}
            }
        } else if a.is_multiple_of(PAGE) && len > 0 && HEAP.with(|h| h.is_mapped(a, len)) {
            // A mapping of the program's own over its pages (a file over a reservation): made,
            // and those pages left to it (`protection.rs`).
            let kernel = || {
                // SAFETY: forwarded to the kernel: MAP_FIXED over the program's own pages.
                unsafe { sys::mmap(a, len, prot, flags, fd, off) as usize }
            };
            return HEAP.with(|h| h.map_foreign(a, len, kernel)) as *mut c_void;
        }
    }
    if tiered_mapping(len, prot, flags, fd) {
        if let Some(p) = HEAP.with(|h| h.map(len, prot)) {
            return p as *mut c_void;
        }
        untiered(len);
    }
    // SAFETY: forwarded to the kernel.
    unsafe { sys::mmap(addr as usize, len, prot, flags, fd, off) }
}

/// # Safety
/// As `mmap64(2)` (the same call on 64-bit systems).
#[no_mangle]
pub unsafe extern "C" fn mmap64(
    addr: *mut c_void,
    len: size_t,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    off: libc::off_t,
) -> *mut c_void {
    // SAFETY: forwarded.
    unsafe { mmap(addr, len, prot, flags, fd, off) }
}

/// # Safety
/// As `munmap(2)`.
#[no_mangle]
pub unsafe extern "C" fn munmap(addr: *mut c_void, len: size_t) -> c_int {
    let a = addr as usize;
    if reserve::contains(a) && !sys::on_handler() {
        if !a.is_multiple_of(PAGE) || len == 0 {
            sys::set_errno(libc::EINVAL);
            return -1;
        }
        HEAP.with(|h| h.unmap(a, len));
        return 0;
    }
    // SAFETY: forwarded to the kernel.
    unsafe { sys::munmap(a, len) }
}

/// # Safety
/// As `mremap(2)`. The fifth argument is read as the C ABI passes it (on x86-64 and aarch64 a
/// variadic pointer travels in the same register as a fixed one); it is used only with
/// `MREMAP_FIXED`, which the kernel reads only then too.
#[no_mangle]
pub unsafe extern "C" fn mremap(
    old: *mut c_void,
    old_len: size_t,
    new_len: size_t,
    flags: c_int,
    new_addr: *mut c_void,
) -> *mut c_void {
    let a = old as usize;
    if !reserve::contains(a) || sys::on_handler() {
        // SAFETY: forwarded to the kernel.
        return unsafe { sys::mremap(a, old_len, new_len, flags, new_addr as usize) };
    }
    let fail = |e| {
        sys::set_errno(e);
        libc::MAP_FAILED
    };
    if !a.is_multiple_of(PAGE) || new_len == 0 || flags & !libc::MREMAP_MAYMOVE != 0 {
        return fail(libc::EINVAL);
    }
    if !HEAP.with(|h| h.is_mapped(a, old_len)) {
        return fail(libc::EFAULT);
    }
    let (old_pages, new_pages) = (old_len.div_ceil(PAGE), new_len.div_ceil(PAGE));
    if new_pages <= old_pages {
        HEAP.with(|h| h.unmap(a + new_pages * PAGE, (old_pages - new_pages) * PAGE));
        return old;
    }
    if HEAP.with(|h| h.grow_map(a, old_len, new_len)) {
        return old;
    }
    if flags & libc::MREMAP_MAYMOVE == 0 {
        return fail(libc::ENOMEM);
    }
    let rw = libc::PROT_READ | libc::PROT_WRITE;
    let Some(to) = HEAP.with(|h| h.map(new_len, rw)) else { return fail(libc::ENOMEM) };
    // Each page as the program may read it (a page it cannot read moves as zeros), then the
    // protections and locks, run by run.
    let from = (a - reserve::base()) / PAGE;
    let mut page = 0;
    while page < old_pages {
        let prot = crate::protection::of(from + page);
        let run =
            (page..old_pages).take_while(|&q| crate::protection::of(from + q) == prot).count();
        if prot.prot() & libc::PROT_READ != 0 {
            // SAFETY: two live mappings of the reserve, distinct, the source readable; no lock
            // is held, so the copy's faults are served as any access.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    (a + page * PAGE) as *const u8,
                    (to + page * PAGE) as *mut u8,
                    run * PAGE,
                )
            };
        }
        if prot != crate::protection::Prot::PLAIN {
            HEAP.with(|h| h.take_protection(to + page * PAGE, run * PAGE, prot));
        }
        page += run;
    }
    let last = crate::protection::of(from + old_pages - 1);
    if last != crate::protection::Prot::PLAIN {
        let grown = (new_pages - old_pages) * PAGE;
        HEAP.with(|h| h.take_protection(to + old_pages * PAGE, grown, last));
    }
    HEAP.with(|h| h.unmap(a, old_len));
    to as *mut c_void
}

/// # Safety
/// As `madvise(2)`. On the reserve, `MADV_DONTNEED` and `MADV_FREE` empty the pages (their
/// objects freed: they read zeros, as the kernel's own would), `MADV_HUGEPAGE` is declined
/// quietly (the tier works in pages), and the rest goes to the kernel.
#[no_mangle]
pub unsafe extern "C" fn madvise(addr: *mut c_void, len: size_t, advice: c_int) -> c_int {
    let a = addr as usize;
    if !reserve::contains(a) || sys::on_handler() {
        // SAFETY: forwarded to the kernel.
        return unsafe { sys::madvise(a, len, advice) };
    }
    if !a.is_multiple_of(PAGE) {
        sys::set_errno(libc::EINVAL);
        return -1;
    }
    let len = len.div_ceil(PAGE).min((reserve::base() + reserve::reserve_len() - a) / PAGE) * PAGE;
    match advice {
        libc::MADV_DONTNEED | libc::MADV_FREE => {
            tier::drop_range(a, len);
            crate::user_faults::lend_range(a, len);
            0
        }
        libc::MADV_HUGEPAGE => 0,
        // SAFETY: forwarded to the kernel.
        _ => unsafe { sys::madvise(a, len, advice) },
    }
}

/// # Safety
/// As `close_range(2)`, around the tier's own descriptors (`own_fds.rs`).
#[no_mangle]
pub unsafe extern "C" fn close_range(
    first: libc::c_uint,
    last: libc::c_uint,
    flags: c_int,
) -> c_int {
    let raw = |a: libc::c_uint, b: libc::c_uint| {
        // SAFETY: forwarded to the kernel.
        unsafe { libc::syscall(libc::SYS_close_range, a, b, flags) as c_int }
    };
    // Marking close-on-exec leaves them as they are: they are close-on-exec already.
    if flags & libc::CLOSE_RANGE_CLOEXEC as c_int != 0 {
        return raw(first, last);
    }
    crate::own_fds::close_around(first, last, raw)
}

/// # Safety
/// As `closefrom(3)`.
#[no_mangle]
pub unsafe extern "C" fn closefrom(low: c_int) {
    // SAFETY: forwarded.
    unsafe { close_range(low.max(0) as libc::c_uint, libc::c_uint::MAX, 0) };
}

/// # Safety
/// As `close(2)`. The tier's own descriptors stay open whatever the program closes
/// (`own_fds.rs`).
#[no_mangle]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    if crate::own_fds::is_own(fd) {
        return 0;
    }
    // SAFETY: forwarded to the kernel.
    unsafe { libc::syscall(libc::SYS_close, fd) as c_int }
}

/// A descriptor of the tier's that the program names as the new one of `dup2` or `dup3`, which
/// would close it: the tier steps aside first (`doorbell.rs`), all the program's data back in
/// place, and the number is the program's. Not for a descriptor that is invalid (the call
/// fails without closing anything), nor in a child that shares the memory but not the
/// descriptor table (its copy is its own).
fn before_replacing(old: c_int, new: c_int) {
    if old == new || !crate::own_fds::owned_here(new) {
        return;
    }
    // SAFETY: F_GETFD only asks whether `old` is open.
    if unsafe { libc::fcntl(old, libc::F_GETFD) } < 0 {
        return;
    }
    if let Some(t) = tier::TIER.get() {
        if t.active.load(std::sync::atomic::Ordering::Acquire) {
            sys::signals_blocked(|| {
                crate::doorbell::step_aside_for(t, crate::doorbell::Aside::Replacing(new))
            });
        }
    }
    crate::own_fds::release_all();
}

/// # Safety
/// As `dup2(2)`; see `before_replacing`.
#[no_mangle]
pub unsafe extern "C" fn dup2(old: c_int, new: c_int) -> c_int {
    before_replacing(old, new);
    // SAFETY: forwarded to the kernel.
    unsafe { libc::syscall(libc::SYS_dup2, old, new) as c_int }
}

/// # Safety
/// As `dup3(2)`; see `before_replacing`.
#[no_mangle]
pub unsafe extern "C" fn dup3(old: c_int, new: c_int, flags: c_int) -> c_int {
    before_replacing(old, new);
    // SAFETY: forwarded to the kernel.
    unsafe { libc::syscall(libc::SYS_dup3, old, new, flags) as c_int }
}
