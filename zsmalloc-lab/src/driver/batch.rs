//! The driver's queue: stores, frees and reads are queued and their pool calls run back to back
//! on the thread CPU clock, then settled (verification, counters, refusals); rare operations
//! run at once on the clock ([`Driver::timed_now`]).

use super::batch_arena::BatchArena;
use super::{Driver, Peak, Slot, Visitor, BATCH_BYTES, BATCH_OPS};
use crate::error::{LabError, LabResult};
use crate::timing::Clock;
use zsmalloc_core::HandleWords;
use zsmalloc_core::{AnyPool, Backend, PrefetchStage, ReadKind, HANDLE_SIZE};

/// A queued operation. Lengths and arena offsets are fixed when it is queued.
pub(super) enum Op {
    Store { slot: usize, payload: Payload, len: usize, objects: u64, bytes: u64 },
    Free { slot: usize },
    Read { slot: usize, len: usize, reader: Reader },
}

/// What a queued read does with the object's bytes while its section is open: what any reader
/// does, consume them once.
#[derive(Clone, Copy)]
pub(super) enum Reader {
    /// Compares them, in place, with the generated content of this key. A compare reads the
    /// object once, as a copy out would, and leaves nothing to check after the batch.
    Verify(u64),
    /// Copies them into the batch arena at this offset, for the visitor of
    /// [`Driver::read_each`] (`visit`) or only to consume them (bytes the lab did not generate);
    /// generated content (`key`) is verified in the copy after the batch.
    Copy { off: usize, key: Option<u64>, visit: bool },
}

/// Where a queued store's bytes are.
#[derive(Clone, Copy)]
pub(super) enum Payload {
    /// Generated content: [`super::content::Content::bytes`] of this key, copied straight from
    /// the pattern.
    Generated(u64),
    /// Caller-supplied bytes, staged in the batch arena at this offset.
    Arena(usize),
}

/// What the pool answered. Refusals are rare: their errors wait in a list of the batch, so an
/// answer is a few bytes with nothing to drop.
#[derive(Clone, Copy)]
pub(super) enum Answer {
    Done,
    /// The pool refused; the error's index in the batch's refusals.
    Refused(usize),
    /// `verified`: the bytes matched (always true for a [`Reader::Copy`]); `end_refused`: the
    /// index of the error that ended the section, if it did not end cleanly.
    Read {
        spanning: bool,
        verified: bool,
        end_refused: Option<usize>,
    },
}

/// The queue of pool calls and the buffers a batch run reuses.
pub(super) struct Batch {
    pub(super) queue: Vec<Op>,
    answers: Vec<Answer>,
    /// The errors of a batch's refused operations (see [`Answer::Refused`]).
    refusals: Vec<zsmalloc_core::Error>,
    /// Caller-supplied store payloads of the queued operations, and the copies of reads that a
    /// visitor looks at (or of bytes the lab did not generate).
    pub(super) arena: BatchArena,
    /// Operations per batch: [`BATCH_OPS`], or 1 under a memory limit, so that a refused store
    /// is known at once.
    pub(super) max_ops: usize,
    /// A queued store may be refused by its length: run the queue after this operation.
    pub(super) must_flush: bool,
    /// The reader's local copy (the longest object + header bytes): where `copy` mode copies a spanning
    /// object, and how a spanning read is told the kernel's way.
    local: Vec<u8>,
}

impl Batch {
    pub(super) fn new(longest: usize, limited: bool) -> Self {
        Batch {
            queue: Vec::with_capacity(BATCH_OPS),
            answers: Vec::with_capacity(BATCH_OPS),
            refusals: Vec::new(),
            arena: BatchArena::with_capacity(BATCH_BYTES + longest),
            max_ops: if limited { 1 } else { BATCH_OPS },
            must_flush: false,
            local: vec![0u8; longest + HANDLE_SIZE],
        }
    }

    /// Whether the queue must run now: full, its payloads at their limit, or a store whose
    /// answer the workload must know.
    #[inline(always)]
    pub(super) fn full(&self) -> bool {
        self.must_flush || self.queue.len() >= self.max_ops || self.arena.len() >= BATCH_BYTES
    }
}

impl<'p> Driver<'p> {
    /// Runs the queued operations: their pool calls back to back on the thread CPU clock, each
    /// read consuming its object inside its section ([`Reader`]), then the bookkeeping
    /// (counters, refusals, verdicts). `visit` sees the bytes of reads queued by
    /// [`Self::read_each`].
    pub(super) fn flush(&mut self, mut visit: Option<Visitor<'_>>) -> LabResult<()> {
        if self.batch.queue.is_empty() {
            return Ok(());
        }
        let ops = std::mem::take(&mut self.batch.queue);
        let mut answers = std::mem::take(&mut self.batch.answers);
        let mut refusals = std::mem::take(&mut self.batch.refusals);
        let mut arena = std::mem::replace(&mut self.batch.arena, BatchArena::with_capacity(0));
        answers.clear();
        refusals.clear();
        let (pool, words, content) = (self.pool, &self.objects.words, &self.content);
        let bytes_kept = self.bytes;
        let local = self.batch.local.as_mut_ptr();
        let mut peak_pages = self.telemetry.peak.pages;
        let mut peak_at = None;
        let mut refuse = |e: zsmalloc_core::Error| {
            refusals.push(e);
            refusals.len() - 1
        };
        let t0 = Clock::now_ns();
        if !bytes_kept {
            prefetch_batch(pool, words, &ops);
        }
        for (i, op) in ops.iter().enumerate() {
            let answer = match *op {
                Op::Store { slot, payload, len, .. } => {
                    let bytes = match payload {
                        Payload::Generated(key) => content.bytes(key, len),
                        Payload::Arena(off) => arena.get(off, len),
                    };
                    // SAFETY: handle words live in `self.objects.words`, never moved or freed
                    // while they hold objects (the driver is dropped before the pool).
                    match unsafe { pool.store_raw(super::word(words, slot), bytes) } {
                        Ok(()) => {
                            // The last store that leaves the pool at its peak.
                            let p = pool.total_pages();
                            if p >= peak_pages {
                                peak_pages = p;
                                peak_at = Some(i);
                            }
                            Answer::Done
                        }
                        Err(e) => Answer::Refused(refuse(e)),
                    }
                }
                // SAFETY: the word holds an object of this pool (checked when queued).
                Op::Free { slot, .. } => match unsafe { pool.free_raw(super::word(words, slot)) } {
                    Ok(()) => Answer::Done,
                    Err(e) => Answer::Refused(refuse(e)),
                },
                Op::Read { slot, len, .. } if !bytes_kept => {
                    match read_placement(pool, super::word(words, slot), len) {
                        Ok(answer) => answer,
                        Err(e) => Answer::Refused(refuse(e)),
                    }
                }
                Op::Read { slot, len, reader } => {
                    let word = super::word(words, slot);
                    // SAFETY: `local` holds page + HDR bytes; the word holds an object.
                    match unsafe { pool.read_begin_raw(word, len, local) } {
                        Ok(p) => {
                            // The kernel's test: a spanning object was copied to
                            // local_copy + ZS_HANDLE_SIZE.
                            let spanning = std::ptr::eq(p, local.wrapping_add(HANDLE_SIZE));
                            // SAFETY: the section is open: `p` points at `len` readable bytes
                            // until it ends below.
                            let data = unsafe { std::slice::from_raw_parts(p, len) };
                            let verified = match reader {
                                Reader::Verify(key) => content.verify(key, data),
                                Reader::Copy { off, .. } => {
                                    arena.get_mut(off, len).copy_from_slice(data);
                                    true
                                }
                            };
                            // SAFETY: ends the section begun above; `data` is not used after.
                            let end_refused = match unsafe { pool.read_end_raw(word, Some(len)) } {
                                Ok(()) => None,
                                Err(e) => Some(refuse(e)),
                            };
                            Answer::Read { spanning, verified, end_refused }
                        }
                        Err(e) => Answer::Refused(refuse(e)),
                    }
                }
            };
            answers.push(answer);
        }
        self.telemetry.cpu.add_ns(Clock::now_ns().saturating_sub(t0));
        if let Some(i) = peak_at {
            if let Op::Store { objects, bytes, .. } = ops[i] {
                self.telemetry.peak = Peak { pages: peak_pages, objects, bytes };
            }
        }
        let mut result = Ok(());
        for (op, &answer) in ops.iter().zip(&answers) {
            let r = self.settle(op, answer, &mut refusals, &arena, &mut visit);
            if r.is_err() {
                result = r;
                break;
            }
        }
        arena.clear();
        self.batch.arena = arena;
        self.batch.answers = answers;
        self.batch.refusals = refusals;
        let mut ops = ops;
        ops.clear();
        self.batch.queue = ops;
        result
    }

    /// The bookkeeping of one answered operation; `refusals` holds the batch's errors.
    fn settle(
        &mut self,
        op: &Op,
        answer: Answer,
        refusals: &mut [zsmalloc_core::Error],
        arena: &BatchArena,
        visit: &mut Option<Visitor<'_>>,
    ) -> LabResult<()> {
        let mut error =
            |i: usize| std::mem::replace(&mut refusals[i], zsmalloc_core::Error::OutOfMemory);
        match (op, answer) {
            (&Op::Store { len, .. }, Answer::Done) => {
                self.telemetry.counters.stores += 1;
                if len >= self.huge_len {
                    self.telemetry.counters.huge_stores += 1;
                }
                Ok(())
            }
            (&Op::Store { slot, len, .. }, Answer::Refused(i)) => {
                // Queued as stored: undo.
                let s = self.objects.slots[slot];
                if s.state.holds_object() && s.len as usize == len {
                    self.objects.slots[slot] = Slot::EMPTY;
                    self.objects.live_objects -= 1;
                    self.objects.live_bytes -= len as u64;
                }
                self.store_failed(slot, error(i)).map(|_| ())
            }
            (&Op::Free { .. }, Answer::Done) => {
                self.telemetry.counters.frees += 1;
                Ok(())
            }
            (&Op::Free { slot, .. }, Answer::Refused(i)) => self.refused("free", slot, &error(i)),
            (&Op::Read { slot, len, reader }, Answer::Read { spanning, verified, end_refused }) => {
                self.telemetry.counters.reads += 1;
                if spanning {
                    self.telemetry.counters.kernel_spanning += 1;
                    self.telemetry.counters.kernel_memcpy += len as u64;
                }
                if !verified {
                    return Err(mismatch(slot, len));
                }
                if let Reader::Copy { off, key, visit: v } = reader {
                    let data = arena.get(off, len);
                    if key.is_some_and(|k| !self.content.verify(k, data)) {
                        return Err(mismatch(slot, len));
                    }
                    if v {
                        if let Some(f) = visit.as_mut() {
                            f(slot, data)?;
                        }
                    }
                }
                match end_refused {
                    None => Ok(()),
                    Some(i) => self.refused("read end", slot, &error(i)),
                }
            }
            (&Op::Read { slot, .. }, Answer::Refused(i)) => self.refused("read", slot, &error(i)),
            (_, _) => Err(LabError::runtime("internal: an answer does not match its operation")),
        }
    }

    /// Runs one rare operation's pool call on the clock (after the queued ones).
    pub(super) fn timed_now<R>(
        &mut self,
        f: impl FnOnce(&'p AnyPool, &HandleWords) -> R,
    ) -> LabResult<R> {
        self.flush(None)?;
        let t0 = Clock::now_ns();
        let r = f(self.pool, &self.objects.words);
        self.telemetry.cpu.add_ns(Clock::now_ns().saturating_sub(t0));
        Ok(r)
    }
}

/// Starts loading what the queued operations will touch, a stage at a time over the whole
/// batch, so that their cache misses overlap instead of coming one after another (a pool
/// without payload spends most of a random free or read waiting on them). Stores are left out:
/// they go to the class's fullest zspage, whose lines are warm.
#[inline(never)]
fn prefetch_batch(pool: &AnyPool, words: &HandleWords, ops: &[Op]) {
    let slot = |op: &Op| match *op {
        Op::Free { slot } | Op::Read { slot, .. } => Some(slot),
        Op::Store { .. } => None,
    };
    for stage in [PrefetchStage::Word, PrefetchStage::Metadata, PrefetchStage::Header] {
        for s in ops.iter().filter_map(slot) {
            pool.prefetch_raw(super::word(words, s), stage);
        }
    }
}

/// A read of a pool without payload: where the object lies, as its section would have told it
/// (copied out, in `copy` mode, when it spans). Out of line: the reads of a pool with bytes do
/// not carry it.
#[inline(never)]
fn read_placement(
    pool: &AnyPool,
    word: &std::sync::atomic::AtomicUsize,
    len: usize,
) -> Result<Answer, zsmalloc_core::Error> {
    // SAFETY: the word holds an object of this pool (checked when queued).
    let placed = unsafe { pool.read_placement_raw(word, Some(len), ReadKind::Section) }?;
    Ok(Answer::Read { spanning: placed.copied > 0, verified: true, end_refused: None })
}

fn mismatch(slot: usize, len: usize) -> LabError {
    LabError::Verify(format!("object {slot} ({len} bytes) does not read back as written"))
}
