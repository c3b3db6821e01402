//! The eviction policy: what the eviction loop asks for its next victim and tells of the
//! pages that arrive and of those it could not evict. A policy sees pages by number in the
//! reserve with their arrival number (an arrival that no longer matches the page's entry is
//! stale: the page left or was emptied since, and `live` says so). Two policies:
//!
//! - [`Fifo`]: the oldest arrival leaves first. The tier sees faults, not accesses, so a
//!   page's arrival is all it knows of its use.
//! - [`Clock`]: second chance by writes. Pages come in write-protected under async
//!   write-protect (the kernel lifts the protection at the first write, no message), and one
//!   `PAGEMAP_SCAN` per round reports the pages written since and protects them again; the
//!   hand gives a written page another round and evicts the first unwritten one.
//! - [`Lru`]: the kernel's two lists. The active list goes by arrival; its victims go to the
//!   inactive list (`inactive.rs`), uncompressed and out of the program's memory, where a
//!   touch is seen and brings them back.

mod clock;
mod fifo;
mod lru;

pub use clock::Clock;
pub use fifo::Fifo;
pub use lru::Lru;
use zsmalloc_tier::policy::PolicyName;

/// Stale entries are dropped when they are more than this beyond twice the resident pages.
const STALE_SLACK: usize = 4096;

pub trait Policy: Send {
    /// Page `page` came in (first touch or fault) as arrival `seq`: resident from now on.
    fn arrived(&mut self, page: u32, seq: u32);
    /// The next page to evict, one `live` says is resident with that arrival; `None` when
    /// there is none.
    fn next_victim(&mut self, live: &dyn Fn(u32, u32) -> bool) -> Option<(u32, u32)>;
    /// The victim could not be moved (shared or pinned): it stays, and is tried again later.
    fn kept(&mut self, page: u32, seq: u32);
    /// The pool refused the victim: it is back in place and the first tried when eviction
    /// resumes.
    fn refused(&mut self, page: u32, seq: u32);
    /// Drops stale entries once they outnumber the live ones by far.
    fn compact(&mut self, resident: u64, live: &dyn Fn(u32, u32) -> bool);
    /// Victims leave in the order of their arrival numbers (so the pages that arrived next
    /// may leave with a victim: `batch.rs`).
    fn by_arrival(&self) -> bool {
        false
    }
    /// Pages come in write-protected (`UFFDIO_COPY_MODE_WP`) and the reserve is registered
    /// for write-protect, so that this policy learns of writes.
    fn protects(&self) -> bool {
        false
    }
    /// Victims go to the inactive list first (`inactive.rs`), and leave for the pool from it.
    fn keeps_inactive(&self) -> bool {
        false
    }
    /// A descriptor the policy keeps open (-1: none), which the program may not close.
    fn own_fd(&self) -> i32 {
        -1
    }
    /// In a forked child tiered on its own: what the policy opened for the parent is made the
    /// child's.
    fn in_child(&mut self) -> Result<(), String> {
        Ok(())
    }
}

/// The policy `name` names; the clock opens `/proc/self/pagemap` here, at the start, or
/// refuses.
pub fn new(name: PolicyName) -> Result<Box<dyn Policy>, String> {
    Ok(match name {
        PolicyName::Fifo => Box::new(Fifo::default()),
        PolicyName::Clock => Box::new(Clock::new()?),
        PolicyName::Lru => Box::new(Lru::default()),
    })
}
