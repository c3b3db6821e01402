//! The driver's queue: stores, frees and reads are queued and their pool calls run back to back
//! on the thread CPU clock, then settled (verification, counters, refusals); rare operations
//! run at once on the clock ([`Driver::timed_now`]).

use super::{Driver, Peak, State, Visitor};
use crate::batch_arena::BatchArena;
use crate::error::{LabError, LabResult};
use crate::timing::Clock;
use zsmalloc_core::HandleWords;
use zsmalloc_core::{AnyPool, Backend, HANDLE_SIZE};

/// A queued operation. Lengths and arena offsets are fixed when it is queued.
pub(super) enum Op {
    Store { slot: usize, payload: Payload, len: usize, objects: u64, bytes: u64 },
    Free { slot: usize },
    Read { slot: usize, off: usize, len: usize, key: Option<u64>, visit: bool },
}

/// Where a queued store's bytes are.
#[derive(Clone, Copy)]
pub(super) enum Payload {
    /// Generated content: [`crate::content::Content::bytes`] of this key, copied straight from
    /// the pattern.
    Generated(u64),
    /// Caller-supplied bytes, staged in the batch arena at this offset.
    Arena(usize),
}

/// What the pool answered.
pub(super) enum Answer {
    Done,
    Refused(zsmalloc_core::Error),
    Read { spanning: bool, end: zsmalloc_core::Result<()> },
}

impl<'p> Driver<'p> {
    /// Runs the queued operations: their pool calls back to back on the thread CPU clock, then
    /// the bookkeeping (verification, counters, refusals). `visit` sees the bytes of reads
    /// queued by [`Self::read_each`].
    pub(super) fn flush(&mut self, mut visit: Option<Visitor<'_>>) -> LabResult<()> {
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
                        Err(e) => Answer::Refused(e),
                    }
                }
                // SAFETY: the word holds an object of this pool (checked when queued).
                Op::Free { slot, .. } => match unsafe { pool.free_raw(super::word(words, slot)) } {
                    Ok(()) => Answer::Done,
                    Err(e) => Answer::Refused(e),
                },
                Op::Read { slot, off, len, .. } => {
                    let word = super::word(words, slot);
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
    pub(super) fn timed_now<R>(
        &mut self,
        f: impl FnOnce(&'p AnyPool, &HandleWords) -> R,
    ) -> LabResult<R> {
        self.flush(None)?;
        let t0 = Clock::now_ns();
        let r = f(self.pool, &self.words);
        self.cpu.add_ns(Clock::now_ns().saturating_sub(t0));
        Ok(r)
    }
}
