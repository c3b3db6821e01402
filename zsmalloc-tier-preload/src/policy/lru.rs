//! The active list of the kernel's two (the inactive list is the tier's: `inactive.rs`). The
//! tier cannot see a touch of a page in the program's memory, so the active list goes by
//! arrival: its oldest page moves to the inactive list, where a touch is seen (it faults) and
//! brings the page back here as a new arrival.

use super::{Fifo, Policy};

#[derive(Default)]
pub struct Lru {
    active: Fifo,
}

impl Policy for Lru {
    fn arrived(&mut self, page: u32, seq: u32) {
        self.active.arrived(page, seq);
    }

    fn next_victim(&mut self, live: &dyn Fn(u32, u32) -> bool) -> Option<(u32, u32)> {
        self.active.next_victim(live)
    }

    fn kept(&mut self, page: u32, seq: u32) {
        self.active.kept(page, seq);
    }

    fn refused(&mut self, page: u32, seq: u32) {
        self.active.refused(page, seq);
    }

    fn compact(&mut self, resident: u64, live: &dyn Fn(u32, u32) -> bool) {
        self.active.compact(resident, live);
    }

    fn by_arrival(&self) -> bool {
        true
    }

    fn keeps_inactive(&self) -> bool {
        true
    }
}
