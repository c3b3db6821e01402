//! A first touch: a page never touched (or emptied) comes in as zeros, with the untouched pages
//! after it (a program touches its new memory mostly upwards, so one fault serves several),
//! all in one `UFFDIO_COPY`. Most of a fault's cost is the handler's wake-up (a fault wakes a
//! handler on another CPU: tens of µs in a virtual machine), and a copy of zeros costs what the
//! kernel's own first touch of each page would (it clears a page where the copy fills one), so
//! while the budget has room the run grows to [`ROOM_RUN`] pages: fewer, larger faults.
//!
//! The pages are copied, not mapped to the kernel's shared zero page (`UFFDIO_ZEROPAGE`):
//! measured on the Python of docs/TIER.md, the program's first write to each zero page, a
//! copy-on-write fault with a TLB flush, cost more CPU time than the faults it saved.

use std::sync::OnceLock;

use zsmalloc_tier::stats::Field;

use crate::sys::{self, PAGE};
use crate::tier::{self, State, Tier};

/// The most pages a first touch fills while the budget has room for twice as many: 2 MiB.
pub const ROOM_RUN: usize = 512;

/// The pages after the faulting one come in this many at a time.
const CHUNK: usize = 16;

/// [`ROOM_RUN`] pages of zeros to copy from: a read-only anonymous mapping never written, so
/// every page of it is the kernel's zero page and it takes no memory. Empty if it could not be
/// made (the state's own zeros serve then).
fn zeros() -> &'static [u8] {
    static ZEROS: OnceLock<usize> = OnceLock::new();
    let len = ROOM_RUN * PAGE;
    let at = *ZEROS.get_or_init(|| {
        // SAFETY: a fresh private anonymous mapping of the tier's own, never unmapped.
        let p = unsafe {
            sys::mmap(
                0,
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            0
        } else {
            p as usize
        }
    });
    if at == 0 {
        return &[];
    }
    // SAFETY: `len` readable bytes at `at`, mapped for good and never written (read-only).
    unsafe { std::slice::from_raw_parts(at as *const u8, len) }
}

impl Tier {
    /// Serves the first touch of `page`: zeros, and the untouched pages after it. The one
    /// place a first touch is served, so that a way of bringing pages in (write-protected,
    /// say) can be given here.
    pub fn first_touch(&self, st: &mut State, page: usize) {
        let zeros = zeros();
        let zeros = if zeros.is_empty() { &st.zero[..] } else { zeros };
        let run = self.untouched_run(st, page).min(zeros.len() / PAGE);
        let addr = self.addr(page);
        // The faulting page first, which wakes the thread: it runs on (on another CPU) while
        // the rest comes in, a chunk at a time, so that a touch of the next pages waits for
        // one chunk at most, never for the whole run.
        self.fill(addr, &zeros[..PAGE]);
        for at in (1..run).step_by(CHUNK) {
            let n = CHUNK.min(run - at);
            self.fill(addr + at * PAGE, &zeros[..n * PAGE]);
        }
        for p in page..page + run {
            self.arrive(st, p);
        }
        tier::stats().add(Field::FirstTouches, 1);
    }
}
