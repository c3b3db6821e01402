//! Second chance by writes (a clock whose reference bit is "written"). Every page comes in
//! write-protected (`UFFDIO_COPY_MODE_WP`, the reserve registered for write-protect under
//! `UFFD_FEATURE_WP_ASYNC`): the kernel lifts the protection at the page's first write, with
//! no message and no wait on the handler. Every eighth of a round of the hand (an eighth of the
//! resident pages evicted, at least 16), one `PAGEMAP_SCAN` over the reserve's used part
//! reports the pages written since the last and protects them again; they are marked. The hand
//! takes the oldest arrival: marked, it loses the mark and goes to the back (a second chance),
//! else it is the victim. So a page written at least once between two passes of the hand (an
//! eighth of a round before the second, at the latest) stays; a page written once when it came
//! in (a stream's) gets one more round. Scanning once per round would not do: when every page
//! is marked the hand passes all of them in one eviction, and a scan right after that sees no
//! writes, so a whole round would go by arrival. One call gives at most a ring's worth of
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

pub struct Clock {
    /// Resident pages by arrival, stale ones among them; the hand is at the front, and a
    /// second chance goes to the back.
    ring: Fifo,
    /// A bit per page of the reserve: written before the last scan and not passed by the
    /// hand since.
    written: Vec<u64>,
    /// Victims given since the last scan.
    since_scan: usize,
    /// `None` once a scan failed: the hand goes on by arrival alone.
    pagemap: Option<Pagemap>,
    regions: Vec<PageRegion>,
}

impl Clock {
    pub fn new() -> Result<Clock, String> {
        let pagemap = Pagemap::open().map_err(|e| format!("/proc/self/pagemap: {e}"))?;
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
            for page in (from - base) / PAGE..(to - base) / PAGE {
                if page / 64 >= written.len() {
                    written.resize(page / 64 + 1, 0);
                }
                written[page / 64] |= 1 << (page % 64);
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

    /// Whether `page` was marked written, unmarking it.
    fn take_mark(&mut self, page: u32) -> bool {
        let (word, bit) = (page as usize / 64, 1u64 << (page % 64));
        match self.written.get_mut(word) {
            Some(w) if *w & bit != 0 => {
                *w &= !bit;
                true
            }
            _ => false,
        }
    }
}

impl Policy for Clock {
    fn arrived(&mut self, page: u32, seq: u32) {
        // It comes in protected: what a scan saw of an earlier stay is no longer true.
        self.take_mark(page);
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
}
