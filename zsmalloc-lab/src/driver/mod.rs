//! The driver: every workload's operations go through it. It owns the handle words (raw layer,
//! as zram keeps them), writes and verifies object contents, detects spanning reads the kernel
//! way (`returned pointer == local_copy + ZS_HANDLE_SIZE`), records traces, samples the
//! timeline and ticks the progress bar.
//!
//! Timing: stores, frees and reads are queued and run in batches. A batch's pool calls run back to
//! back on the thread CPU clock ([`crate::timing`]): generated store payloads are slices of the
//! content pattern and caller-supplied ones are staged before the batch; each read consumes its
//! object once inside its section, as any reader does: generated content is compared in place
//! with its pattern, other bytes are copied out for whoever looks at them after the batch. So the
//! timed phase is the pool calls and one pass over each object read, not the lab's payload
//! generation or bookkeeping. Other operations (malloc, write,
//! scatter-gather reads, moves, compaction) are rare and timed one by one. Under a memory limit
//! every operation is its own batch, so a refused store is known at once.
//!
//! By job: this file holds the driver and its phases, timeline samples and the outcome;
//! `state` its state grouped by job (the objects, the telemetry, the phase); `ops` the
//! operations workloads call; `batch` the queue and its timed runs; `outcome` what a finished
//! run hands back; `batch_arena` the batch's bytes and `content` the generated object contents.

mod batch;
mod batch_arena;
mod content;
mod ops;
mod outcome;
mod state;

pub use outcome::{Counters, Peak, RunOutcome};
pub use state::RunPhase;

use batch::Batch;
use state::{Objects, Slot, State, Telemetry};

use crate::error::{LabError, LabResult};
use crate::progress::Progress;
use crate::timeline::Sample;
use crate::trace_format::{TraceOp, TraceWriter};
use content::Content;
use zsmalloc_core::{AnyPool, Backend, ClassTable, HandleWords, HANDLE_SIZE};

/// Operations per batch, and payload bytes a batch may hold before it runs.
const BATCH_OPS: usize = 256;
const BATCH_BYTES: usize = 1 << 20;

/// Runs operations on one pool.
pub struct Driver<'p> {
    pool: &'p AnyPool,
    /// zsmalloc's class table, for the per-class figures (none for the other backends).
    table: Option<&'p ClassTable>,
    page: usize,
    /// The longest object the pool stores: the page, or with the multi-page band its size.
    longest: usize,
    huge_len: usize,
    /// `huge_class_size` of the multi-page band (the longest object + 1 without one).
    huge_len_multi: usize,
    /// Any refusal other than a full pool is an error (generated workloads); otherwise
    /// refusals are counted (traces).
    strict: bool,
    /// The pool keeps the objects' bytes; without them (placement only) reads report where
    /// objects lie, writes carry no content and nothing is verified.
    bytes: bool,
    content: Content,
    /// A buffer of the longest object for the rare operations run one by one (write,
    /// scatter-gather read).
    scratch: Vec<u8>,
    objects: Objects,
    batch: Batch,
    telemetry: Telemetry,
}

type Visitor<'a> = &'a mut dyn FnMut(usize, &[u8]) -> LabResult<()>;

impl<'p> Driver<'p> {
    /// `strict`: any refusal other than a full pool is an error (generated workloads);
    /// otherwise refusals are counted (`op_errors`), as a C program would see them (traces).
    /// `timeline_every`: sample every N operations (0 = no timeline).
    pub fn new(
        pool: &'p AnyPool,
        seed: u64,
        strict: bool,
        recorder: Option<TraceWriter>,
        timeline_every: u64,
        progress: Progress,
    ) -> Self {
        let page = pool.config().page_size as usize;
        let limited = pool.config().mem_limit_pages != 0;
        let table = pool.class_table();
        let longest = table.map_or(page, |t| t.max_size() as usize);
        Driver {
            pool,
            table,
            page,
            longest,
            huge_len: pool.huge_class_size(),
            huge_len_multi: pool.huge_class_size_of_band(1).unwrap_or(longest + 1),
            strict,
            bytes: pool.keeps_bytes(),
            content: Content::new(seed, longest),
            scratch: Vec::with_capacity(longest),
            objects: Objects::new(),
            batch: Batch::new(longest, limited),
            telemetry: Telemetry::new(recorder, timeline_every, progress),
        }
    }

    pub fn pool(&self) -> &'p AnyPool {
        self.pool
    }

    pub fn page_size(&self) -> usize {
        self.page
    }

    /// Counters of the operations run so far (call [`Self::sync`] first for exact figures).
    pub fn counters(&self) -> &Counters {
        &self.telemetry.counters
    }

    /// Live objects in the pool (as the driver counts them).
    pub fn live_objects(&self) -> u64 {
        self.objects.live_objects
    }

    pub fn live_bytes(&self) -> u64 {
        self.objects.live_bytes
    }

    /// A new, empty slot; refused when the handle-word table is full
    /// ([`HandleWords::capacity`] words).
    pub fn new_slot(&mut self) -> LabResult<usize> {
        let i = self.objects.words.push().ok_or_else(|| {
            LabError::usage(format!(
                "more than {} objects: the lab's handle-word table is full",
                HandleWords::capacity()
            ))
        })?;
        self.objects.slots.push(Slot::EMPTY);
        Ok(i)
    }

    pub fn slots(&self) -> usize {
        self.objects.words.len()
    }

    /// Whether `slot` holds an object in the pool.
    pub fn holds(&self, slot: usize) -> bool {
        self.objects.slots.get(slot).is_some_and(|s| s.state.holds_object())
    }

    /// Whether `slot` holds a same-filled page kept outside the pool.
    pub fn is_same(&self, slot: usize) -> bool {
        self.objects.slots.get(slot).is_some_and(|s| s.state == State::Same)
    }

    /// Runs the queued operations, so the pool is up to date (before reading its figures).
    pub fn sync(&mut self) -> LabResult<()> {
        self.flush(None)
    }

    /// Starts a phase of the workload (a timeline sample is taken).
    pub fn phase(&mut self, phase: RunPhase) -> LabResult<()> {
        self.flush(None)?;
        self.telemetry.phase = phase;
        if self.telemetry.timeline_every > 0 {
            self.sample();
        }
        Ok(())
    }

    fn sample(&mut self) {
        let pages = self.pool.total_pages();
        self.telemetry.samples.push(Sample {
            op: self.telemetry.ops,
            phase: self.telemetry.phase.name().to_string(),
            objects: self.objects.live_objects,
            bytes_stored: self.objects.live_bytes,
            pages,
            utilization_permille: crate::result::utilization_permille(
                self.objects.live_bytes,
                pages,
                self.page as u64,
            ),
        });
    }

    /// Counts an operation; runs the batch when it is full or a timeline sample is due.
    #[inline(always)]
    fn op_done(&mut self) -> LabResult<()> {
        self.telemetry.ops += 1;
        let sample = self.telemetry.sample_due();
        if sample || self.batch.full() {
            self.batch_done(sample)?;
        }
        self.telemetry.progress.tick(self.telemetry.ops);
        Ok(())
    }

    /// [`Self::op_done`]'s rare branch, out of line so the common one stays a few instructions.
    #[inline(never)]
    fn batch_done(&mut self, sample: bool) -> LabResult<()> {
        self.batch.must_flush = false;
        self.flush(None)?;
        if sample {
            self.sample();
        }
        Ok(())
    }

    fn note_pages(&mut self) {
        let p = self.pool.total_pages();
        if p >= self.telemetry.peak.pages {
            self.telemetry.peak = Peak {
                pages: p,
                objects: self.objects.live_objects,
                bytes: self.objects.live_bytes,
            };
        }
    }

    #[inline]
    fn record(&mut self, op: TraceOp) -> LabResult<()> {
        match &mut self.telemetry.recorder {
            Some(r) => r.op(&op),
            None => Ok(()),
        }
    }

    fn check_slot(&self, slot: usize) -> LabResult<()> {
        if slot < self.objects.words.len() {
            Ok(())
        } else {
            Err(LabError::runtime(format!("slot {slot} does not exist")))
        }
    }

    /// A refusal by the pool: an error for generated workloads, a counted event for traces.
    fn refused(&mut self, what: &str, slot: usize, why: &dyn std::fmt::Display) -> LabResult<()> {
        if self.strict {
            Err(LabError::runtime(format!("{what} of object {slot} was refused: {why}")))
        } else {
            self.telemetry.counters.op_errors += 1;
            Ok(())
        }
    }

    /// Bytes the live objects lose to class merging, per class in the table's order (the
    /// pool's).
    fn merge_waste(&self, by_len: &[u64]) -> Vec<u64> {
        let Some(table) = self.table else { return Vec::new() };
        let classes = table.classes();
        let mut waste = vec![0u64; classes.len()];
        for (len, &n) in by_len.iter().enumerate().filter(|&(_, &n)| n > 0) {
            let size = len + HANDLE_SIZE;
            let pos = table.position(size);
            let own = table.own_size(size);
            waste[pos] += n * u64::from(classes[pos].size.saturating_sub(own.max(size as u32)));
        }
        waste
    }

    /// Ends the run: runs what is queued, flushes the trace, takes the last sample, removes
    /// the progress bar.
    pub fn finish(mut self) -> LabResult<RunOutcome> {
        self.flush(None)?;
        if self.telemetry.timeline_every > 0 {
            self.telemetry.phase = RunPhase::End;
            self.sample();
        }
        self.telemetry.progress.finish();
        if let Some(r) = self.telemetry.recorder.take() {
            r.finish()?;
        }
        let by_len = self.objects.by_len(self.longest);
        // Objects in huge classes: from huge_class_size to the page, and in the multi-page
        // band from its own.
        let huge_pages = by_len.iter().take(self.page + 1).skip(self.huge_len).sum::<u64>()
            + by_len.iter().skip(self.huge_len_multi.max(self.page + 1)).sum::<u64>();
        Ok(RunOutcome {
            huge_pages,
            merge_waste: self.merge_waste(&by_len),
            counters: std::mem::take(&mut self.telemetry.counters),
            samples: std::mem::take(&mut self.telemetry.samples),
            same_pages: self.objects.same_pages,
            cpu: self.telemetry.cpu,
            peak: self.telemetry.peak,
        })
    }
}

/// The handle word of `slot`: slots are checked before their operations are queued or run.
#[inline]
fn word(words: &HandleWords, slot: usize) -> &std::sync::atomic::AtomicUsize {
    words.get(slot).expect("a checked slot has a handle word")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::{Progress, ProgressSink};
    use zsmalloc_core::PoolConfig;

    fn driver(pool: &AnyPool, strict: bool) -> Driver<'_> {
        Driver::new(pool, 1, strict, None, 0, Progress::new(&ProgressSink::silent(), "t"))
    }

    #[test]
    fn queued_operations_answer_as_the_pool_would() {
        let pool = AnyPool::with_name("t", PoolConfig::default()).unwrap();
        let mut d = driver(&pool, false);
        let (a, b) = (d.new_slot().unwrap(), d.new_slot().unwrap());
        assert!(d.store(a, 100).unwrap());
        assert!(!d.store(a, 200).unwrap(), "a handle holding an object refuses a store");
        assert!(!d.store(b, 0).unwrap(), "zero length");
        assert!(d.read(a, Some(100)).unwrap());
        assert!(!d.read(a, Some(99)).unwrap(), "wrong length");
        assert!(d.store(b, 3000).unwrap());
        d.free(a).unwrap();
        d.sync().unwrap();
        let c = d.counters().clone();
        assert_eq!((c.stores, c.frees, c.reads, c.op_errors, c.store_failures), (2, 1, 1, 2, 1));
        assert_eq!(pool.stats().objs_inuse, 1);
        let out = d.finish().unwrap();
        assert!(out.peak.pages > 0 && out.peak.objects == 2, "{:?}", out.peak);
        assert!(out.cpu.sections() > 0);
    }

    /// Overwrites the object of `slot` behind the driver's back, as a faulty pool would.
    fn corrupt(pool: &AnyPool, d: &Driver<'_>, slot: usize) {
        let len = d.objects.slots[slot].len as usize;
        let mut bytes = d.content.bytes(d.objects.slots[slot].key, len).to_vec();
        bytes[len / 2] ^= 1;
        // SAFETY: the word holds an object of `len` bytes of this pool; no section is open.
        unsafe { pool.write_raw(word(&d.objects.words, slot), &bytes) }.unwrap();
    }

    #[test]
    fn a_changed_object_fails_verification_in_every_read_path() {
        let pool = AnyPool::with_name("t", PoolConfig::default()).unwrap();
        let mut d = driver(&pool, true);
        // One object inside a page, one spanning two (the kernel test's second 3000-byte
        // object straddles a page boundary of its class).
        let slots: Vec<usize> = (0..4).map(|_| d.new_slot().unwrap()).collect();
        for (&s, len) in slots.iter().zip([100, 3000, 3000, 3000]) {
            assert!(d.store(s, len).unwrap());
        }
        d.sync().unwrap();
        for &s in &slots {
            d.read(s, None).unwrap();
        }
        d.sync().expect("untouched objects verify");
        assert!(d.counters().kernel_spanning > 0, "one of the objects spans two pages");
        for &s in &slots {
            corrupt(&pool, &d, s);
            d.read(s, None).unwrap();
            let e = d.sync().expect_err("read in place");
            assert!(matches!(e, LabError::Verify(_)), "{e}");
            let e = d.read_each(&[s], |_, _| Ok(())).expect_err("copied for a visitor");
            assert!(matches!(e, LabError::Verify(_)), "{e}");
            let len = d.objects.slots[s].len as usize;
            let e = d.read_sg(s, len).expect_err("scatter-gather");
            assert!(matches!(e, LabError::Verify(_)), "{e}");
        }
    }

    #[test]
    fn a_full_pool_is_known_at_once() {
        let cfg = PoolConfig { mem_limit_pages: 2, ..PoolConfig::default() };
        let pool = AnyPool::with_name("t", cfg).unwrap();
        let mut d = driver(&pool, true);
        let mut refused = 0;
        for _ in 0..20 {
            let s = d.new_slot().unwrap();
            if !d.store(s, 1000).unwrap() {
                refused += 1;
                assert!(!d.holds(s));
            }
        }
        assert!(refused > 0);
        assert_eq!(d.counters().store_failures, refused);
        assert_eq!(d.live_objects(), pool.stats().objs_inuse);
    }
}
