//! First in, first out by arrival: the page resident longest leaves first.

use std::collections::VecDeque;

use super::{Policy, STALE_SLACK};

#[derive(Default)]
pub struct Fifo {
    /// Resident pages by arrival (page, arrival number), stale ones among them.
    queue: VecDeque<(u32, u32)>,
}

impl Fifo {
    /// Arrivals held, stale ones among them.
    pub fn len(&self) -> usize {
        self.queue.len()
    }
}

impl Policy for Fifo {
    fn arrived(&mut self, page: u32, seq: u32) {
        self.queue.push_back((page, seq));
    }

    fn next_victim(&mut self, live: &dyn Fn(u32, u32) -> bool) -> Option<(u32, u32)> {
        while let Some((page, seq)) = self.queue.pop_front() {
            if live(page, seq) {
                return Some((page, seq));
            }
        }
        None
    }

    fn kept(&mut self, page: u32, seq: u32) {
        self.queue.push_back((page, seq));
    }

    fn refused(&mut self, page: u32, seq: u32) {
        self.queue.push_front((page, seq));
    }

    fn by_arrival(&self) -> bool {
        true
    }

    fn compact(&mut self, resident: u64, live: &dyn Fn(u32, u32) -> bool) {
        if self.queue.len() > 2 * resident as usize + STALE_SLACK {
            self.queue.retain(|&(p, s)| live(p, s));
        }
    }
}
