//! The driver: every workload's operations go through it. It owns the handle words (raw layer,
//! as zram keeps them), writes and verifies object contents, detects spanning reads the kernel
//! way (`returned pointer == local_copy + ZS_HANDLE_SIZE`), records traces, samples the
//! timeline and ticks the progress bar.
//!
//! Timing: stores, frees and reads are queued and run in batches. A batch's pool calls run back to
//! back on the thread CPU clock ([`crate::timing`]): generated store payloads are slices of the
//! content pattern and caller-supplied ones are staged before the batch, and each read copies its
//! object out (as any reader consumes it) to be verified after the batch. So the timed phase is the
//! pool calls, not the lab's payload generation and verification. Other operations (malloc, write,
//! scatter-gather reads, moves, compaction) are rare and timed one by one. Under a memory limit
//! every operation is its own batch, so a refused store is known at once.

use crate::batch_arena::BatchArena;
use crate::content::Content;
use crate::error::{LabError, LabResult};
use crate::handles::HandleWords;
use crate::progress::Progress;
use crate::timeline::Sample;
use crate::timing::{Clock, CpuTimer};
use crate::trace_format::{TraceOp, TraceWriter};
use zsmalloc_core::{AnyPool, Backend, ClassTable, HANDLE_SIZE};

/// Operations per batch, and payload bytes a batch may hold before it runs.
const BATCH_OPS: usize = 256;
const BATCH_BYTES: usize = 1 << 20;
/// The kernel's `ZS_MIN_ALLOC_SIZE`: the smallest class.
const MIN_ALLOC: u32 = 32;

/// What a slot (one handle word) holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Empty,
    /// An object whose bytes the driver generated and verifies.
    Pattern,
    /// Allocated by `malloc`, not yet written.
    Unwritten,
    /// An object whose bytes the workload supplied (and verifies itself).
    Bytes,
    /// A same-filled page kept outside the pool (as modern zram does).
    Same,
}

impl State {
    fn holds_object(self) -> bool {
        matches!(self, State::Pattern | State::Unwritten | State::Bytes)
    }
}

/// Operation counters of one run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters {
    /// Successful stores (and mallocs).
    pub stores: u64,
    pub frees: u64,
    /// Read sections (copy and scatter-gather).
    pub reads: u64,
    /// Stores the pool refused (memory limit, bad length).
    pub store_failures: u64,
    /// Trace operations the pool refused (unknown handle, wrong length, double use).
    pub op_errors: u64,
    pub compactions: u64,
    /// Stores of objects of `huge_class_size` bytes or more: pages zram stores whole
    /// (`ZRAM_HUGE`), ever (zram's `huge_pages_since`).
    pub huge_stores: u64,
    /// Spanning reads detected the kernel way, and the object bytes they copied.
    pub kernel_spanning: u64,
    pub kernel_memcpy: u64,
    /// Same-filled pages seen (stored or skipped), and stores of them into the pool.
    pub same_seen: u64,
}

/// The pool's state when its page count peaked.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Peak {
    pub pages: u64,
    /// Live objects and their bytes after the last store that left the pool at its peak.
    pub objects: u64,
    pub bytes: u64,
}

/// What a finished driver hands back.
pub struct Outcome {
    pub counters: Counters,
    pub samples: Vec<Sample>,
    /// Same-filled pages currently kept outside the pool.
    pub same_pages: u64,
    /// Thread CPU time of the pool calls (the timed phase).
    pub cpu: CpuTimer,
    pub peak: Peak,
    /// Per class index: bytes the live objects lose to class merging (the class they are in is
    /// larger than the class of their size would be without merging).
    pub merge_waste: Vec<(u32, u64)>,
    /// Per class index: read sections that found the object spanning two pages.
    pub spanning_reads: Vec<(u32, u64)>,
    /// Live objects of `huge_class_size` bytes or more: the pages zram would hold whole
    /// (zram's `huge_pages`; never above [`Counters::huge_stores`]).
    pub huge_pages: u64,
}

/// A queued operation. Lengths and arena offsets are fixed when it is queued.
enum Op {
    Store { slot: usize, payload: Payload, len: usize, objects: u64, bytes: u64 },
    Free { slot: usize },
    Read { slot: usize, off: usize, len: usize, key: Option<u64>, visit: bool },
}

/// Where a queued store's bytes are.
#[derive(Clone, Copy)]
enum Payload {
    /// Generated content: [`Content::bytes`] of this key, copied straight from the pattern.
    Generated(u64),
    /// Caller-supplied bytes, staged in the batch arena at this offset.
    Arena(usize),
}

/// What the pool answered.
enum Answer {
    Done,
    Refused(zsmalloc_core::Error),
    Read { spanning: bool, end: zsmalloc_core::Result<()> },
}

/// Runs operations on one pool.
pub struct Driver<'p> {
    pool: &'p AnyPool,
    /// zsmalloc's class table, for the per-class figures (none for the other backends).
    table: Option<&'p ClassTable>,
    page: usize,
    huge_len: usize,
    words: HandleWords,
    state: Vec<State>,
    lens: Vec<u32>,
    keys: Vec<u64>,
    content: Content,
    scratch: Vec<u8>,
    local: Vec<u8>,
    counters: Counters,
    next_key: u64,
    live_objects: u64,
    live_bytes: u64,
    same_pages: u64,
    strict: bool,
    recorder: Option<TraceWriter>,
    timeline_every: u64,
    samples: Vec<Sample>,
    phase: String,
    progress: Progress,
    ops: u64,
    queue: Vec<Op>,
    answers: Vec<Answer>,
    /// Caller-supplied store payloads and read copies of the queued operations.
    arena: BatchArena,
    batch_ops: usize,
    cpu: CpuTimer,
    peak: Peak,
    /// Spanning reads per class position.
    class_spanning: Vec<u64>,
    /// A queued store may be refused by its length: run the queue after this operation.
    must_flush: bool,
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
        let table = pool.as_zsmalloc().map(|z| z.class_table());
        Driver {
            pool,
            table,
            page,
            huge_len: pool.huge_class_size(),
            words: HandleWords::new(),
            state: Vec::new(),
            lens: Vec::new(),
            keys: Vec::new(),
            content: Content::new(seed, page),
            scratch: Vec::with_capacity(page),
            local: vec![0u8; page + HANDLE_SIZE],
            counters: Counters::default(),
            next_key: 0,
            live_objects: 0,
            live_bytes: 0,
            same_pages: 0,
            strict,
            recorder,
            timeline_every,
            samples: Vec::new(),
            phase: "start".into(),
            progress,
            ops: 0,
            queue: Vec::with_capacity(BATCH_OPS),
            answers: Vec::with_capacity(BATCH_OPS),
            arena: BatchArena::with_capacity(BATCH_BYTES + page),
            batch_ops: if limited { 1 } else { BATCH_OPS },
            cpu: CpuTimer::new(),
            peak: Peak::default(),
            class_spanning: vec![0; table.map_or(0, |t| t.classes().len())],
            must_flush: false,
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
        &self.counters
    }

    /// Live objects in the pool (as the driver counts them).
    pub fn live_objects(&self) -> u64 {
        self.live_objects
    }

    pub fn live_bytes(&self) -> u64 {
        self.live_bytes
    }

    pub fn set_total_ops(&mut self, total: u64) {
        self.progress.set_total(total);
    }

    /// A new, empty slot.
    pub fn new_slot(&mut self) -> usize {
        let i = self.words.push();
        self.state.push(State::Empty);
        self.lens.push(0);
        self.keys.push(0);
        i
    }

    pub fn slots(&self) -> usize {
        self.words.len()
    }

    /// Whether `slot` holds an object in the pool.
    pub fn holds(&self, slot: usize) -> bool {
        self.state.get(slot).is_some_and(|s| s.holds_object())
    }

    /// Whether `slot` holds a same-filled page kept outside the pool.
    pub fn is_same(&self, slot: usize) -> bool {
        self.state.get(slot) == Some(&State::Same)
    }

    /// Length of the object of `slot` (0 when empty).
    pub fn len_of(&self, slot: usize) -> usize {
        if self.holds(slot) {
            self.lens[slot] as usize
        } else {
            0
        }
    }

    /// Runs the queued operations, so the pool is up to date (before reading its figures).
    pub fn sync(&mut self) -> LabResult<()> {
        self.flush(None)
    }

    /// Starts a named phase (a timeline sample is taken).
    pub fn phase(&mut self, name: &str) -> LabResult<()> {
        self.flush(None)?;
        self.phase = name.to_string();
        if self.timeline_every > 0 {
            self.sample();
        }
        Ok(())
    }

    fn sample(&mut self) {
        let pages = self.pool.total_pages();
        self.samples.push(Sample {
            op: self.ops,
            phase: self.phase.clone(),
            objects: self.live_objects,
            bytes_stored: self.live_bytes,
            pages,
            utilization_permille: crate::result::utilization_permille(
                self.live_bytes,
                pages,
                self.page as u64,
            ),
        });
    }

    /// Counts an operation; runs the batch when it is full or a timeline sample is due.
    #[inline]
    fn op_done(&mut self) -> LabResult<()> {
        self.ops += 1;
        let sample = self.timeline_every > 0 && self.ops.is_multiple_of(self.timeline_every);
        if sample
            || self.must_flush
            || self.queue.len() >= self.batch_ops
            || self.arena.len() >= BATCH_BYTES
        {
            self.must_flush = false;
            self.flush(None)?;
        }
        if sample {
            self.sample();
        }
        self.progress.tick(self.ops);
        Ok(())
    }

    /// Runs the queued operations: their pool calls back to back on the thread CPU clock, then
    /// the bookkeeping (verification, counters, refusals). `visit` sees the bytes of reads
    /// queued by [`Self::read_each`].
    fn flush(&mut self, mut visit: Option<Visitor<'_>>) -> LabResult<()> {
        if self.queue.is_empty() {
            return Ok(());
        }
        let ops = std::mem::take(&mut self.queue);
        let mut answers = std::mem::take(&mut self.answers);
        let mut arena = std::mem::replace(&mut self.arena, BatchArena::with_capacity(0));
        answers.clear();
        let (pool, words, content) = (self.pool, &self.words, &self.content);
        let local = self.local.as_mut_ptr();
        let mut peak_pages = self.peak.pages;
        let mut peak_at = None;
        let t0 = Clock::now_ns();
        for (i, op) in ops.iter().enumerate() {
            let answer = match *op {
                Op::Store { slot, payload, len, .. } => {
                    let bytes = match payload {
                        Payload::Generated(key) => content.bytes(key, len),
                        Payload::Arena(off) => arena.get(off, len),
                    };
                    // SAFETY: handle words live in `self.words`, never moved or freed while
                    // they hold objects (the driver is dropped before the pool).
                    match unsafe { pool.store_raw(words.get(slot), bytes) } {
                        Ok(()) => {
                            // The last store that leaves the pool at its peak.
                            let p = pool.total_pages();
                            if p >= peak_pages {
                                peak_pages = p;
                                peak_at = Some(i);
                            }
                            Answer::Done
                        }
                        Err(e) => Answer::Refused(e),
                    }
                }
                // SAFETY: the word holds an object of this pool (checked when queued).
                Op::Free { slot, .. } => match unsafe { pool.free_raw(words.get(slot)) } {
                    Ok(()) => Answer::Done,
                    Err(e) => Answer::Refused(e),
                },
                Op::Read { slot, off, len, .. } => {
                    let word = words.get(slot);
                    // SAFETY: `local` holds page + HDR bytes; the word holds an object.
                    match unsafe { pool.read_begin_raw(word, len, local) } {
                        Ok(p) => {
                            // The kernel's test: a spanning object was copied to
                            // local_copy + ZS_HANDLE_SIZE.
                            let spanning = std::ptr::eq(p, local.wrapping_add(HANDLE_SIZE));
                            // SAFETY: the section is open, `p` points at `len` readable
                            // bytes; the arena holds `len` bytes at `off` for this read.
                            unsafe {
                                std::ptr::copy_nonoverlapping(
                                    p,
                                    arena.get_mut(off, len).as_mut_ptr(),
                                    len,
                                )
                            };
                            // SAFETY: ends the section begun above.
                            let end = unsafe { pool.read_end_raw(word, Some(len)) };
                            Answer::Read { spanning, end }
                        }
                        Err(e) => Answer::Refused(e),
                    }
                }
            };
            answers.push(answer);
        }
        self.cpu.add_ns(Clock::now_ns().saturating_sub(t0));
        if let Some(i) = peak_at {
            if let Op::Store { objects, bytes, .. } = ops[i] {
                self.peak = Peak { pages: peak_pages, objects, bytes };
            }
        }
        let mut result = Ok(());
        for (op, answer) in ops.iter().zip(answers.drain(..)) {
            let r = self.settle(op, answer, &arena, &mut visit);
            if r.is_err() {
                result = r;
                break;
            }
        }
        arena.clear();
        self.arena = arena;
        self.answers = answers;
        let mut ops = ops;
        ops.clear();
        self.queue = ops;
        result
    }

    /// The bookkeeping of one answered operation.
    fn settle(
        &mut self,
        op: &Op,
        answer: Answer,
        arena: &BatchArena,
        visit: &mut Option<Visitor<'_>>,
    ) -> LabResult<()> {
        match (op, answer) {
            (&Op::Store { len, .. }, Answer::Done) => {
                self.counters.stores += 1;
                if len >= self.huge_len {
                    self.counters.huge_stores += 1;
                }
                Ok(())
            }
            (&Op::Store { slot, len, .. }, Answer::Refused(e)) => {
                // Queued as stored: undo.
                if self.state[slot].holds_object() && self.lens[slot] as usize == len {
                    self.state[slot] = State::Empty;
                    self.lens[slot] = 0;
                    self.live_objects -= 1;
                    self.live_bytes -= len as u64;
                }
                self.store_failed(slot, e).map(|_| ())
            }
            (&Op::Free { .. }, Answer::Done) => {
                self.counters.frees += 1;
                Ok(())
            }
            (&Op::Free { slot, .. }, Answer::Refused(e)) => self.refused("free", slot, &e),
            (&Op::Read { slot, off, len, key, visit: v }, Answer::Read { spanning, end }) => {
                self.counters.reads += 1;
                if spanning {
                    self.counters.kernel_spanning += 1;
                    self.counters.kernel_memcpy += len as u64;
                    if let Some(t) = self.table {
                        let pos = t.position(len + HANDLE_SIZE);
                        if let Some(n) = self.class_spanning.get_mut(pos) {
                            *n += 1;
                        }
                    }
                }
                let data = arena.get(off, len);
                if let Some(k) = key {
                    if !self.content.verify(k, data) {
                        return Err(LabError::Verify(format!(
                            "object {slot} ({len} bytes) does not read back as written"
                        )));
                    }
                }
                if v {
                    if let Some(f) = visit.as_mut() {
                        f(slot, data)?;
                    }
                }
                match end {
                    Ok(()) => Ok(()),
                    Err(e) => self.refused("read end", slot, &e),
                }
            }
            (&Op::Read { slot, .. }, Answer::Refused(e)) => self.refused("read", slot, &e),
            (_, _) => Err(LabError::runtime("internal: an answer does not match its operation")),
        }
    }

    /// Runs one rare operation's pool call on the clock (after the queued ones).
    fn timed_now<R>(&mut self, f: impl FnOnce(&'p AnyPool, &HandleWords) -> R) -> LabResult<R> {
        self.flush(None)?;
        let t0 = Clock::now_ns();
        let r = f(self.pool, &self.words);
        self.cpu.add_ns(Clock::now_ns().saturating_sub(t0));
        Ok(r)
    }

    fn note_pages(&mut self) {
        let p = self.pool.total_pages();
        if p >= self.peak.pages {
            self.peak = Peak { pages: p, objects: self.live_objects, bytes: self.live_bytes };
        }
    }

    #[inline]
    fn record(&mut self, op: TraceOp) -> LabResult<()> {
        match &mut self.recorder {
            Some(r) => r.op(&op),
            None => Ok(()),
        }
    }

    fn check_slot(&self, slot: usize) -> LabResult<()> {
        if slot < self.words.len() {
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
            self.counters.op_errors += 1;
            Ok(())
        }
    }

    fn store_failed(&mut self, slot: usize, e: zsmalloc_core::Error) -> LabResult<bool> {
        self.counters.store_failures += 1;
        // A length the backend does not store (zblock's top lengths) is a fact of that backend,
        // counted like a full pool's refusals.
        let backend_refuses =
            self.table.is_none() && matches!(e, zsmalloc_core::Error::TooLarge { .. });
        if self.strict && e != zsmalloc_core::Error::OutOfMemory && !backend_refuses {
            return Err(LabError::runtime(format!("store of object {slot} was refused: {e}")));
        }
        Ok(false)
    }

    /// Marks `slot` as holding an object (the pool call may still be queued).
    fn stored(&mut self, slot: usize, state: State, len: usize, key: u64) {
        self.state[slot] = state;
        self.lens[slot] = len as u32;
        self.keys[slot] = key;
        self.live_objects += 1;
        self.live_bytes += len as u64;
    }

    /// Takes a same-filled page out of `slot` before it is reused (not a pool operation).
    fn drop_same(&mut self, slot: usize) {
        if self.state[slot] == State::Same {
            self.state[slot] = State::Empty;
            self.same_pages -= 1;
        }
    }

    /// Checks a store before it is queued; `Ok(false)`: refused now.
    fn store_allowed(&mut self, slot: usize, len: usize) -> LabResult<bool> {
        if self.holds(slot) {
            self.refused("store", slot, &zsmalloc_core::Error::HandleInUse)?;
            return Ok(false);
        }
        if len == 0 || len > self.page {
            let e = if len == 0 {
                zsmalloc_core::Error::InvalidArgument("zero length".into())
            } else {
                zsmalloc_core::Error::TooLarge { len, max: self.page }
            };
            return self.store_failed(slot, e);
        }
        Ok(true)
    }

    fn queue_store(&mut self, slot: usize, payload: Payload, len: usize, state: State, key: u64) {
        self.stored(slot, state, len, key);
        self.queue.push(Op::Store {
            slot,
            payload,
            len,
            objects: self.live_objects,
            bytes: self.live_bytes,
        });
        // zblock and malloc refuse lengths from their `huge_class_size` up (zblock) or above
        // the page: run such a store at once, so that its answer is known to the workload.
        if self.table.is_none() && len >= self.huge_len {
            self.must_flush = true;
        }
    }

    /// Stores a generated object of `len` bytes in `slot`. `Ok(false)`: the pool refused
    /// (full, or a bad length in a trace). Without a memory limit the store may still be
    /// queued: the answer is then the expected one, and a refusal is reported when it runs.
    pub fn store(&mut self, slot: usize, len: usize) -> LabResult<bool> {
        self.check_slot(slot)?;
        self.record(TraceOp::Store { id: slot as u64, len })?;
        self.drop_same(slot);
        let allowed = self.store_allowed(slot, len)?;
        if allowed {
            let key = self.next_key;
            self.next_key += 1;
            self.queue_store(slot, Payload::Generated(key), len, State::Pattern, key);
        }
        self.op_done()?;
        Ok(allowed && self.holds(slot))
    }

    /// Stores caller-supplied bytes in `slot` (the caller verifies them on read).
    pub fn store_bytes(&mut self, slot: usize, data: &[u8]) -> LabResult<bool> {
        self.check_slot(slot)?;
        self.record(TraceOp::Store { id: slot as u64, len: data.len() })?;
        self.drop_same(slot);
        let allowed = self.store_allowed(slot, data.len())?;
        if allowed {
            let off = self.arena.push(data);
            self.queue_store(slot, Payload::Arena(off), data.len(), State::Bytes, 0);
        }
        self.op_done()?;
        Ok(allowed && self.holds(slot))
    }

    /// Marks `slot` as a same-filled page kept outside the pool (zram's `same_pages`).
    pub fn keep_same(&mut self, slot: usize) -> LabResult<()> {
        self.check_slot(slot)?;
        if self.holds(slot) {
            return Err(LabError::runtime(format!("slot {slot} already holds an object")));
        }
        if self.state[slot] != State::Same {
            self.state[slot] = State::Same;
            self.same_pages += 1;
        }
        self.counters.same_seen += 1;
        self.progress.tick(self.ops);
        Ok(())
    }

    /// Counts a same-filled page that is stored in the pool anyway (2012 zram).
    pub fn note_same_stored(&mut self) {
        self.counters.same_seen += 1;
    }

    /// Allocates an object of `len` bytes without writing it (`zs_malloc`).
    pub fn malloc(&mut self, slot: usize, len: usize) -> LabResult<bool> {
        self.check_slot(slot)?;
        self.record(TraceOp::Malloc { id: slot as u64, len })?;
        self.drop_same(slot);
        let r = if self.holds(slot) {
            self.refused("malloc", slot, &zsmalloc_core::Error::HandleInUse).map(|_| false)
        } else {
            // SAFETY: as in `flush`.
            match self.timed_now(|pool, w| unsafe { pool.malloc_raw(w.get(slot), len) })? {
                Ok(()) => {
                    self.stored(slot, State::Unwritten, len, 0);
                    self.counters.stores += 1;
                    if len >= self.huge_len {
                        self.counters.huge_stores += 1;
                    }
                    self.note_pages();
                    Ok(true)
                }
                Err(e) => self.store_failed(slot, e),
            }
        };
        self.op_done()?;
        r
    }

    /// Writes generated content over the whole object of `slot` (`zs_obj_write`).
    pub fn write(&mut self, slot: usize, len: usize) -> LabResult<bool> {
        self.check_slot(slot)?;
        self.record(TraceOp::Write { id: slot as u64, len })?;
        let r = if !self.holds(slot) || self.lens[slot] as usize != len {
            let why = if self.holds(slot) { "wrong length" } else { "empty handle" };
            self.refused("write", slot, &why).map(|_| false)
        } else {
            let key = self.next_key;
            self.next_key += 1;
            self.content.fill(key, len, &mut self.scratch);
            let data = std::mem::take(&mut self.scratch);
            // SAFETY: single-threaded: no read section of this object is open.
            let r = self.timed_now(|pool, w| unsafe { pool.write_raw(w.get(slot), &data) });
            self.scratch = data;
            match r? {
                Ok(()) => {
                    self.state[slot] = State::Pattern;
                    self.keys[slot] = key;
                    Ok(true)
                }
                Err(e) => self.refused("write", slot, &e).map(|_| false),
            }
        };
        self.op_done()?;
        r
    }

    /// Frees the object of `slot` (an empty slot: no-op; a same-filled page: dropped).
    pub fn free(&mut self, slot: usize) -> LabResult<()> {
        self.check_slot(slot)?;
        if self.state[slot] == State::Same {
            self.drop_same(slot);
            return Ok(());
        }
        self.record(TraceOp::Free { id: slot as u64 })?;
        if self.holds(slot) {
            let len = self.lens[slot] as usize;
            self.live_objects -= 1;
            self.live_bytes -= len as u64;
            self.state[slot] = State::Empty;
            self.lens[slot] = 0;
            self.queue.push(Op::Free { slot });
        }
        self.op_done()
    }

    fn queue_read(&mut self, slot: usize, visit: bool) {
        let len = self.lens[slot] as usize;
        let key = (self.state[slot] == State::Pattern).then_some(self.keys[slot]);
        let off = self.arena.reserve(len);
        self.queue.push(Op::Read { slot, off, len, key, visit });
    }

    /// A read section on the object of `slot`, verifying generated content. `len`: the length
    /// the reader claims (a trace's), or `None` for the stored one. Returns whether the read
    /// was accepted (it may still be queued: counts and spanning are known after
    /// [`Self::sync`]).
    pub fn read(&mut self, slot: usize, len: Option<usize>) -> LabResult<bool> {
        self.check_slot(slot)?;
        let stored = self.lens[slot] as usize;
        let len = len.unwrap_or(stored);
        self.record(TraceOp::Read { id: slot as u64, len })?;
        let r = if !self.holds(slot) || len != stored {
            let why = if self.holds(slot) { "wrong length" } else { "empty handle" };
            self.refused("read", slot, &why).map(|_| false)
        } else {
            self.queue_read(slot, false);
            Ok(true)
        };
        self.op_done()?;
        r
    }

    /// Read sections on the objects of `slots` (empty slots are refused); `f` sees each
    /// object's bytes after its batch ran (generated content is verified first).
    pub fn read_each(
        &mut self,
        slots: &[usize],
        mut f: impl FnMut(usize, &[u8]) -> LabResult<()>,
    ) -> LabResult<()> {
        self.flush(None)?;
        for chunk in slots.chunks(self.batch_ops) {
            for &slot in chunk {
                self.check_slot(slot)?;
                let len = self.lens[slot] as usize;
                self.record(TraceOp::Read { id: slot as u64, len })?;
                if self.holds(slot) {
                    self.queue_read(slot, true);
                } else {
                    self.refused("read", slot, &"empty handle")?;
                }
                self.ops += 1;
                if self.timeline_every > 0 && self.ops.is_multiple_of(self.timeline_every) {
                    self.flush(Some(&mut f))?;
                    self.sample();
                }
                if self.arena.len() >= BATCH_BYTES {
                    self.flush(Some(&mut f))?;
                }
                self.progress.tick(self.ops);
            }
            self.flush(Some(&mut f))?;
        }
        Ok(())
    }

    /// A scatter-gather read section (`zs_obj_read_sg_begin`); verifies generated content.
    pub fn read_sg(&mut self, slot: usize, len: usize) -> LabResult<bool> {
        self.check_slot(slot)?;
        self.record(TraceOp::ReadSg { id: slot as u64, len })?;
        let stored = self.lens[slot] as usize;
        let r = if !self.holds(slot) || len != stored {
            let why = if self.holds(slot) { "wrong length" } else { "empty handle" };
            self.refused("read_sg", slot, &why).map(|_| false)
        } else {
            let mut buf = std::mem::take(&mut self.scratch);
            buf.clear();
            let answer = self.timed_now(|pool, w| {
                let word = w.get(slot);
                // SAFETY: the word holds an object of this pool; segments are read before
                // the section ends.
                match unsafe { pool.read_sg_begin_raw(word, len) } {
                    Err(e) => Err(e),
                    Ok((segs, n)) => {
                        for &(ptr, l) in &segs[..n.min(2)] {
                            // SAFETY: each segment is readable until the section ends.
                            buf.extend_from_slice(unsafe { std::slice::from_raw_parts(ptr, l) });
                        }
                        // SAFETY: ends the section begun above.
                        Ok((n, unsafe { pool.read_end_raw(word, Some(len)) }))
                    }
                }
            })?;
            self.scratch = buf;
            match answer {
                Err(e) => self.refused("read_sg", slot, &e).map(|_| false),
                Ok((n, ended)) => {
                    self.counters.reads += 1;
                    if self.state[slot] == State::Pattern
                        && !self.content.verify(self.keys[slot], &self.scratch)
                    {
                        return Err(LabError::Verify(format!(
                            "object {slot} ({len} bytes) does not read back as written (sg)"
                        )));
                    }
                    if let Err(e) = ended {
                        self.refused("read_sg end", slot, &e)?;
                    }
                    Ok(n > 1)
                }
            }
        };
        self.op_done()?;
        r
    }

    /// Moves the object of `from` to the empty slot `to` (`zs_handle_move`).
    pub fn move_handle(&mut self, from: usize, to: usize) -> LabResult<()> {
        self.check_slot(from)?;
        self.check_slot(to)?;
        self.record(TraceOp::Move { from: from as u64, to: to as u64 })?;
        if !self.holds(from) || self.holds(to) || from == to {
            self.refused("move", from, &"source empty or destination in use")?;
        } else {
            self.drop_same(to);
            // SAFETY: both words are ours and stay put; `to` is empty.
            let r =
                self.timed_now(|pool, w| unsafe { pool.handle_move_raw(w.get(from), w.get(to)) })?;
            match r {
                Ok(()) => {
                    self.state[to] = self.state[from];
                    self.lens[to] = self.lens[from];
                    self.keys[to] = self.keys[from];
                    self.state[from] = State::Empty;
                    self.lens[from] = 0;
                }
                Err(e) => self.refused("move", from, &e)?,
            }
        }
        self.op_done()
    }

    /// `zs_compact()`; returns pages freed.
    pub fn compact(&mut self) -> LabResult<u64> {
        self.record(TraceOp::Compact)?;
        let freed = self.timed_now(|pool, _| pool.compact())?;
        self.counters.compactions += 1;
        self.op_done()?;
        Ok(freed)
    }

    /// Bytes the live objects lose to class merging, per class index.
    fn merge_waste(&self) -> Vec<(u32, u64)> {
        let Some(table) = self.table else { return Vec::new() };
        let classes = table.classes();
        let mut waste = vec![0u64; classes.len()];
        let page = self.page as u32;
        for slot in 0..self.words.len() {
            if !self.holds(slot) {
                continue;
            }
            let size = self.lens[slot] as usize + HANDLE_SIZE;
            let pos = table.position(size);
            let own = (MIN_ALLOC + table.raw_index(size) * table.delta()).min(page);
            waste[pos] += u64::from(classes[pos].size.saturating_sub(own.max(size as u32)));
        }
        classes.iter().zip(waste).map(|(c, w)| (c.index, w)).collect()
    }

    /// Ends the run: runs what is queued, flushes the trace, takes the last sample, removes
    /// the progress bar.
    pub fn finish(mut self) -> LabResult<Outcome> {
        self.flush(None)?;
        if self.timeline_every > 0 {
            self.phase = "end".into();
            self.sample();
        }
        self.progress.finish();
        if let Some(r) = self.recorder.take() {
            r.finish()?;
        }
        let classes = self.table.map_or(&[][..], |t| t.classes());
        let spanning_reads =
            classes.iter().zip(&self.class_spanning).map(|(c, &n)| (c.index, n)).collect();
        let huge_pages = (0..self.words.len())
            .filter(|&s| self.holds(s) && self.lens[s] as usize >= self.huge_len)
            .count() as u64;
        Ok(Outcome {
            huge_pages,
            merge_waste: self.merge_waste(),
            spanning_reads,
            counters: std::mem::take(&mut self.counters),
            samples: std::mem::take(&mut self.samples),
            same_pages: self.same_pages,
            cpu: self.cpu,
            peak: self.peak,
        })
    }
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
        let (a, b) = (d.new_slot(), d.new_slot());
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

    #[test]
    fn a_full_pool_is_known_at_once() {
        let cfg = PoolConfig { mem_limit_pages: 2, ..PoolConfig::default() };
        let pool = AnyPool::with_name("t", cfg).unwrap();
        let mut d = driver(&pool, true);
        let mut refused = 0;
        for _ in 0..20 {
            let s = d.new_slot();
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
