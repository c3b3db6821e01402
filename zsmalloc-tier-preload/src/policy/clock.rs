//! Second chance by writes (a clock whose reference is "written"). Every page comes in
//! write-protected (`UFFDIO_COPY_MODE_WP`, the reserve registered for write-protect under
//! `UFFD_FEATURE_WP_ASYNC`): the kernel lifts the protection at the page's first write, with
//! no message and no wait on the handler. Every eighth of a round of the hand (an eighth of the
//! resident pages evicted, at least 16), one `PAGEMAP_SCAN` over the reserve's used part
//! reports the pages written since the last and protects them again; each scan that sees a page
//! written adds one to its count, up to three (a generalized clock). The hand takes the oldest
//! arrival: counted, it loses one and goes to the back (a second chance), else it is the
//! victim. So a page written between every two scans stays through up to three passes of the
//! hand with nothing new seen, and a page written once when it came in (a stream's) gets one
//! more round. A count of one would not do: the hand moves in batches while the program waits
//! for a fault (no scan in a batch sees a write), and a batch that meets every page counted
//! passes all of them, then evicts by arrival what it met counted a moment before, hot pages
//! among them. Scanning once per round would not do either (a scan right after such a pass sees
//! no writes, so a whole round would go by arrival). One call gives at most a ring's worth of
//! second chances, so a program that writes everything still gets its pages evicted.
//!
//! Reads are not seen (a page read and never written is evicted as in FIFO), nor are writes
//! after the last scan until the next. `MADV_POPULATE_WRITE` (before moving a page a fork left
//! shared) counts as a write. No write is lost whatever the marks say: a page still leaves by
//! `UFFDIO_MOVE`, so a write before the move goes with it and one after it faults and waits.

use zsmalloc_tier::pagemap::{PageRegion, Pagemap};
use zsmalloc_tier::stats::Field;

use super::{Fifo, Policy};
use crate::figures;
use crate::reserve;
use crate::sys::PAGE;

/// Page runs one scan ioctl answers with (more take another ioctl).
const REGIONS: usize = 512;
/// Scans per round of the hand.
const SCANS_PER_ROUND: usize = 8;
/// The fewest evictions between two scans.
const MIN_SCAN_INTERVAL: usize = 16;
/// The most passes of the hand a page's writes earn it.
const MAX_COUNT: u8 = 3;

pub struct Clock {
    /// Resident pages by arrival, stale ones among them; the hand is at the front, and a
    /// second chance goes to the back.
    ring: Fifo,
    /// A count per page of the reserve: the scans that saw it written, less the passes of the
    /// hand since, at most `MAX_COUNT`.
    written: Vec<u8>,
    /// Victims given since the last scan.
    since_scan: usize,
    /// `None` once a scan failed: the hand goes on by arrival alone.
    pagemap: Option<Pagemap>,
    regions: Vec<PageRegion>,
}

impl Clock {
    pub fn new() -> Result<Clock, String> {
        let pagemap = Pagemap::open()
            .and_then(|p| p.raised(zsmalloc_tier::fd_number::high_floor()))
            .map_err(|e| format!("/proc/self/pagemap: {e}"))?;
        Ok(Clock {
            ring: Fifo::default(),
            written: Vec::new(),
            since_scan: usize::MAX,
            pagemap: Some(pagemap),
            regions: vec![PageRegion::default(); REGIONS],
        })
    }

    /// Marks the pages written since the last scan and protects them again.
    fn scan(&mut self) {
        let Some(pm) = &self.pagemap else { return };
        let base = reserve::base();
        let end = base + reserve::high_water_pages() * PAGE;
        let written = &mut self.written;
        let mut seen = 0;
        let t0 = std::time::Instant::now();
        let scanned = pm.written(base, end, true, &mut self.regions, |from, to| {
            let (first, end) = ((from - base) / PAGE, (to - base) / PAGE);
            if end > written.len() {
                written.resize(end, 0);
            }
            for count in &mut written[first..end] {
                *count = (*count + 1).min(MAX_COUNT);
            }
            seen += ((to - from) / PAGE) as u64;
        });
        let w = figures::stats();
        w.add(Field::WrittenScanNs, t0.elapsed().as_nanos() as u64);
        match scanned {
            Ok(calls) => {
                w.add(Field::WrittenScans, calls);
                w.add(Field::WrittenSeen, seen);
            }
            Err(e) => {
                w.set(Field::ScanErrno, e.raw_os_error().unwrap_or(libc::EIO) as u64);
                self.pagemap = None;
            }
        }
    }

    /// Whether `page` was counted written, one taken off.
    fn take_mark(&mut self, page: u32) -> bool {
        match self.written.get_mut(page as usize) {
            Some(count) if *count > 0 => {
                *count -= 1;
                true
            }
            _ => false,
        }
    }
}

impl Policy for Clock {
    fn arrived(&mut self, page: u32, seq: u32) {
        // It comes in protected: what a scan saw of an earlier stay is no longer true.
        if let Some(count) = self.written.get_mut(page as usize) {
            *count = 0;
        }
        self.ring.arrived(page, seq);
    }

    fn next_victim(&mut self, live: &dyn Fn(u32, u32) -> bool) -> Option<(u32, u32)> {
        let round = self.ring.len();
        if self.since_scan >= (round / SCANS_PER_ROUND).max(MIN_SCAN_INTERVAL) {
            self.scan();
            self.since_scan = 0;
        }
        let mut chances = 0;
        loop {
            let (page, seq) = self.ring.next_victim(live)?;
            if chances < round && self.take_mark(page) {
                chances += 1;
                figures::stats().add(Field::SecondChances, 1);
                self.ring.kept(page, seq);
                continue;
            }
            self.since_scan += 1;
            return Some((page, seq));
        }
    }

    fn kept(&mut self, page: u32, seq: u32) {
        self.ring.kept(page, seq);
    }

    fn refused(&mut self, page: u32, seq: u32) {
        self.ring.refused(page, seq);
    }

    fn compact(&mut self, resident: u64, live: &dyn Fn(u32, u32) -> bool) {
        self.ring.compact(resident, live);
    }

    fn protects(&self) -> bool {
        true
    }

    fn own_fd(&self) -> i32 {
        self.pagemap.as_ref().map_or(-1, Pagemap::raw_fd)
    }

    /// The inherited `/proc/self/pagemap` is the parent's (the file names the process that
    /// opened it): scanning it would report, and protect again, the parent's pages.
    fn in_child(&mut self) -> Result<(), String> {
        let Some(_) = &self.pagemap else { return Ok(()) };
        let fresh = Pagemap::open()
            .and_then(|p| p.raised(zsmalloc_tier::fd_number::high_floor()))
            .map_err(|e| format!("the child's /proc/self/pagemap: {e}"))?;
        crate::own_fds::keep(crate::own_fds::Own::Pagemap, fresh.raw_fd());
        self.pagemap = Some(fresh);
        Ok(())
    }
}
