//! The driver: every workload's operations go through it. It owns the handle words (raw layer,
//! as zram keeps them), writes and verifies object contents, detects spanning reads the kernel
//! way (`returned pointer == local_copy + ZS_HANDLE_SIZE`), records traces, samples the
//! timeline and ticks the progress bar.

use crate::content::Content;
use crate::error::{LabError, LabResult};
use crate::handles::HandleWords;
use crate::progress::Progress;
use crate::timeline::Sample;
use crate::trace_format::{TraceOp, TraceWriter};
use zsmalloc_core::{Pool, HANDLE_SIZE};

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
    /// Stores of objects of `huge_class_size` bytes or more (zram's `huge_pages_since`).
    pub huge_stores: u64,
    /// Spanning reads detected the kernel way, and the object bytes they copied.
    pub kernel_spanning: u64,
    pub kernel_memcpy: u64,
    /// Same-filled pages seen (stored or skipped), and stores of them into the pool.
    pub same_seen: u64,
}

/// What a finished driver hands back.
pub struct Outcome {
    pub counters: Counters,
    pub samples: Vec<Sample>,
    /// Same-filled pages currently kept outside the pool.
    pub same_pages: u64,
}

/// Runs operations on one pool.
pub struct Driver<'p> {
    pool: &'p Pool,
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
}

impl<'p> Driver<'p> {
    /// `strict`: any refusal other than a full pool is an error (generated workloads);
    /// otherwise refusals are counted (`op_errors`), as a C program would see them (traces).
    /// `timeline_every`: sample every N operations (0 = no timeline).
    pub fn new(
        pool: &'p Pool,
        seed: u64,
        strict: bool,
        recorder: Option<TraceWriter>,
        timeline_every: u64,
        progress: Progress,
    ) -> Self {
        let page = pool.config().page_size as usize;
        Driver {
            pool,
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
        }
    }

    pub fn pool(&self) -> &'p Pool {
        self.pool
    }

    pub fn page_size(&self) -> usize {
        self.page
    }

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

    /// Starts a named phase (a timeline sample is taken).
    pub fn phase(&mut self, name: &str) {
        self.phase = name.to_string();
        if self.timeline_every > 0 {
            self.sample();
        }
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

    #[inline]
    fn op_done(&mut self) {
        self.ops += 1;
        if self.timeline_every > 0 && self.ops % self.timeline_every == 0 {
            self.sample();
        }
        self.progress.tick(self.ops);
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
        if self.strict && e != zsmalloc_core::Error::OutOfMemory {
            return Err(LabError::runtime(format!("store of object {slot} was refused: {e}")));
        }
        Ok(false)
    }

    fn stored(&mut self, slot: usize, state: State, len: usize, key: u64) {
        self.state[slot] = state;
        self.lens[slot] = len as u32;
        self.keys[slot] = key;
        self.live_objects += 1;
        self.live_bytes += len as u64;
        self.counters.stores += 1;
        if len >= self.huge_len {
            self.counters.huge_stores += 1;
        }
    }

    /// Takes a same-filled page out of `slot` before it is reused (not a pool operation).
    fn drop_same(&mut self, slot: usize) {
        if self.state[slot] == State::Same {
            self.state[slot] = State::Empty;
            self.same_pages -= 1;
        }
    }

    /// Stores a generated object of `len` bytes in `slot`. `Ok(false)`: the pool refused
    /// (full, or a bad length in a trace).
    pub fn store(&mut self, slot: usize, len: usize) -> LabResult<bool> {
        self.check_slot(slot)?;
        self.record(TraceOp::Store { id: slot as u64, len })?;
        self.drop_same(slot);
        let r = self.store_generated(slot, len);
        self.op_done();
        r
    }

    fn store_generated(&mut self, slot: usize, len: usize) -> LabResult<bool> {
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
        let key = self.next_key;
        self.next_key += 1;
        self.content.fill(key, len, &mut self.scratch);
        // SAFETY: handle words live in `self.words`, never moved or freed while they hold
        // objects (they outlive every object: the driver is dropped before the pool).
        let r = unsafe { self.pool.store_raw(self.words.get(slot), &self.scratch) };
        match r {
            Ok(()) => {
                self.stored(slot, State::Pattern, len, key);
                Ok(true)
            }
            Err(e) => self.store_failed(slot, e),
        }
    }

    /// Stores caller-supplied bytes in `slot` (the caller verifies them on read).
    pub fn store_bytes(&mut self, slot: usize, data: &[u8]) -> LabResult<bool> {
        self.check_slot(slot)?;
        self.record(TraceOp::Store { id: slot as u64, len: data.len() })?;
        self.drop_same(slot);
        let r = if self.holds(slot) {
            self.refused("store", slot, &zsmalloc_core::Error::HandleInUse).map(|_| false)
        } else {
            // SAFETY: as in `store_generated`.
            match unsafe { self.pool.store_raw(self.words.get(slot), data) } {
                Ok(()) => {
                    self.stored(slot, State::Bytes, data.len(), 0);
                    Ok(true)
                }
                Err(e) => self.store_failed(slot, e),
            }
        };
        self.op_done();
        r
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
            // SAFETY: as in `store_generated`.
            match unsafe { self.pool.malloc_raw(self.words.get(slot), len) } {
                Ok(()) => {
                    self.stored(slot, State::Unwritten, len, 0);
                    Ok(true)
                }
                Err(e) => self.store_failed(slot, e),
            }
        };
        self.op_done();
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
            // SAFETY: single-threaded: no read section of this object is open.
            match unsafe { self.pool.write_raw(self.words.get(slot), &self.scratch) } {
                Ok(()) => {
                    self.state[slot] = State::Pattern;
                    self.keys[slot] = key;
                    Ok(true)
                }
                Err(e) => self.refused("write", slot, &e).map(|_| false),
            }
        };
        self.op_done();
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
            // SAFETY: the word holds an object of this pool.
            match unsafe { self.pool.free_raw(self.words.get(slot)) } {
                Ok(()) => {
                    self.live_objects -= 1;
                    self.live_bytes -= u64::from(self.lens[slot]);
                    self.state[slot] = State::Empty;
                    self.lens[slot] = 0;
                    self.counters.frees += 1;
                }
                Err(e) => self.refused("free", slot, &e)?,
            }
        }
        self.op_done();
        Ok(())
    }

    /// A read section on the object of `slot`, verifying generated content. Returns whether
    /// the object was copied (spanning). `len`: the length the reader claims (a trace's), or
    /// `None` for the stored one.
    pub fn read(&mut self, slot: usize, len: Option<usize>) -> LabResult<bool> {
        self.check_slot(slot)?;
        let stored = self.lens[slot] as usize;
        let len = len.unwrap_or(stored);
        self.record(TraceOp::Read { id: slot as u64, len })?;
        let r = if !self.holds(slot) || len != stored {
            let why = if self.holds(slot) { "wrong length" } else { "empty handle" };
            self.refused("read", slot, &why).map(|_| false)
        } else {
            self.read_section(slot, |_| Ok(()))
        };
        self.op_done();
        r
    }

    /// A read section on the object of `slot`; `f` sees its bytes. Returns whether it spanned.
    pub fn read_with(
        &mut self,
        slot: usize,
        f: impl FnOnce(&[u8]) -> LabResult<()>,
    ) -> LabResult<bool> {
        self.check_slot(slot)?;
        let len = self.lens[slot] as usize;
        self.record(TraceOp::Read { id: slot as u64, len })?;
        let r = if self.holds(slot) {
            self.read_section(slot, f)
        } else {
            self.refused("read", slot, &"empty handle").map(|_| false)
        };
        self.op_done();
        r
    }

    /// One read section; generated content is verified, then `f` sees the bytes.
    fn read_section(
        &mut self,
        slot: usize,
        f: impl FnOnce(&[u8]) -> LabResult<()>,
    ) -> LabResult<bool> {
        let len = self.lens[slot] as usize;
        let key = (self.state[slot] == State::Pattern).then_some(self.keys[slot]);
        let word = self.words.get(slot);
        let local = self.local.as_mut_ptr();
        // SAFETY: `local` holds page + HDR bytes; the word holds an object of this pool.
        let p = match unsafe { self.pool.read_begin_raw(word, len, local) } {
            Ok(p) => p,
            Err(e) => return self.refused("read", slot, &e).map(|_| false),
        };
        // The kernel's test: a spanning object was copied to local_copy + ZS_HANDLE_SIZE.
        let spanning = std::ptr::eq(p, self.local.as_ptr().wrapping_add(HANDLE_SIZE));
        // SAFETY: the section is open; `p` points at `len` readable bytes until it ends.
        let data = unsafe { std::slice::from_raw_parts(p, len) };
        let checked = match key {
            Some(k) if !self.content.verify(k, data) => Err(LabError::Verify(format!(
                "object {slot} ({len} bytes) does not read back as written"
            ))),
            _ => f(data),
        };
        // SAFETY: ends the section begun above.
        let ended = unsafe { self.pool.read_end_raw(word, Some(len)) };
        self.counters.reads += 1;
        if spanning {
            self.counters.kernel_spanning += 1;
            self.counters.kernel_memcpy += len as u64;
        }
        checked?;
        if let Err(e) = ended {
            self.refused("read end", slot, &e)?;
        }
        Ok(spanning)
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
            let word = self.words.get(slot);
            // SAFETY: the word holds an object of this pool; segments are read before the end.
            match unsafe { self.pool.read_sg_begin_raw(word, len) } {
                Err(e) => self.refused("read_sg", slot, &e).map(|_| false),
                Ok((segs, n)) => {
                    self.scratch.clear();
                    for &(ptr, l) in &segs[..n.min(2)] {
                        // SAFETY: each segment is readable until the section ends.
                        self.scratch
                            .extend_from_slice(unsafe { std::slice::from_raw_parts(ptr, l) });
                    }
                    // SAFETY: ends the section begun above.
                    let ended = unsafe { self.pool.read_end_raw(word, Some(len)) };
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
        self.op_done();
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
            match unsafe { self.pool.handle_move_raw(self.words.get(from), self.words.get(to)) } {
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
        self.op_done();
        Ok(())
    }

    /// `zs_compact()`; returns pages freed.
    pub fn compact(&mut self) -> LabResult<u64> {
        self.record(TraceOp::Compact)?;
        let freed = self.pool.compact();
        self.counters.compactions += 1;
        self.op_done();
        Ok(freed)
    }

    /// Ends the run: flushes the trace, takes the last sample, removes the progress bar.
    pub fn finish(mut self) -> LabResult<Outcome> {
        if self.timeline_every > 0 {
            self.phase = "end".into();
            self.sample();
        }
        self.progress.finish();
        if let Some(r) = self.recorder.take() {
            r.finish()?;
        }
        Ok(Outcome {
            counters: std::mem::take(&mut self.counters),
            samples: std::mem::take(&mut self.samples),
            same_pages: self.same_pages,
        })
    }
}
