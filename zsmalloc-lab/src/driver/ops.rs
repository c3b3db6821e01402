//! The driver's operations as workloads call them: store, malloc, write, free, reads (one,
//! many, scatter-gather), move and compaction, each recorded, checked and queued or run.

use super::batch::{Op, Payload, Reader};
use super::{Driver, Slot, State, BATCH_BYTES};
use crate::error::{LabError, LabResult};
use crate::trace_format::TraceOp;
use zsmalloc_core::{Backend, ReadKind, ReadMode};

impl<'p> Driver<'p> {
    pub(super) fn store_failed(&mut self, slot: usize, e: zsmalloc_core::Error) -> LabResult<bool> {
        self.telemetry.counters.store_failures += 1;
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
        self.objects.slots[slot] = Slot { key, len: len as u32, state };
        self.objects.live_objects += 1;
        self.objects.live_bytes += len as u64;
    }

    /// Takes a same-filled page out of `slot` before it is reused (not a pool operation).
    fn drop_same(&mut self, slot: usize) {
        if self.objects.slots[slot].state == State::Same {
            self.objects.slots[slot].state = State::Empty;
            self.objects.same_pages -= 1;
        }
    }

    /// Checks a store before it is queued; `Ok(false)`: refused now.
    #[inline]
    fn store_allowed(&mut self, slot: usize, len: usize) -> LabResult<bool> {
        if self.holds(slot) {
            self.refused("store", slot, &zsmalloc_core::Error::HandleInUse)?;
            return Ok(false);
        }
        if len == 0 || len > self.longest {
            let e = if len == 0 {
                zsmalloc_core::Error::InvalidArgument("zero length".into())
            } else {
                zsmalloc_core::Error::TooLarge { len, max: self.longest }
            };
            return self.store_failed(slot, e);
        }
        Ok(true)
    }

    fn queue_store(&mut self, slot: usize, payload: Payload, len: usize, state: State, key: u64) {
        self.stored(slot, state, len, key);
        self.batch.queue.push(Op::Store {
            slot,
            payload,
            len,
            objects: self.objects.live_objects,
            bytes: self.objects.live_bytes,
        });
        // zblock and malloc refuse lengths from their `huge_class_size` up (zblock) or above
        // the page: run such a store at once, so that its answer is known to the workload.
        if self.table.is_none() && len >= self.huge_len {
            self.batch.must_flush = true;
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
            let key = self.objects.next_key;
            self.objects.next_key += 1;
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
            let off = self.batch.arena.push(data);
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
        if self.objects.slots[slot].state != State::Same {
            self.objects.slots[slot].state = State::Same;
            self.objects.same_pages += 1;
        }
        self.telemetry.counters.same_seen += 1;
        self.telemetry.progress.tick(self.telemetry.ops);
        Ok(())
    }

    /// Counts a same-filled page that is stored in the pool anyway (2012 zram).
    pub fn note_same_stored(&mut self) {
        self.telemetry.counters.same_seen += 1;
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
            match self.timed_now(|pool, w| unsafe { pool.malloc_raw(super::word(w, slot), len) })? {
                Ok(()) => {
                    self.stored(slot, State::Unwritten, len, 0);
                    self.telemetry.counters.stores += 1;
                    if len >= self.huge_len {
                        self.telemetry.counters.huge_stores += 1;
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
        let r = if !self.holds(slot) || self.objects.slots[slot].len as usize != len {
            let why = if self.holds(slot) { "wrong length" } else { "empty handle" };
            self.refused("write", slot, &why).map(|_| false)
        } else {
            let key = self.objects.next_key;
            self.objects.next_key += 1;
            if self.bytes {
                self.content.fill(key, len, &mut self.scratch);
            } else {
                self.scratch.resize(len, 0); // a placement-only pool keeps no content
            }
            let data = std::mem::take(&mut self.scratch);
            // SAFETY: single-threaded: no read section of this object is open.
            let r =
                self.timed_now(|pool, w| unsafe { pool.write_raw(super::word(w, slot), &data) });
            self.scratch = data;
            match r? {
                Ok(()) => {
                    self.objects.slots[slot].state = State::Pattern;
                    self.objects.slots[slot].key = key;
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
        if self.objects.slots[slot].state == State::Same {
            self.drop_same(slot);
            return Ok(());
        }
        self.record(TraceOp::Free { id: slot as u64 })?;
        if self.holds(slot) {
            let len = self.objects.slots[slot].len as usize;
            self.objects.live_objects -= 1;
            self.objects.live_bytes -= len as u64;
            self.objects.slots[slot] = Slot::EMPTY;
            self.batch.queue.push(Op::Free { slot });
        }
        self.op_done()
    }

    /// Queues a read (`visit`: for [`Self::read_each`]'s visitor, which a pool without bytes
    /// never calls: there is nothing to look at).
    fn queue_read(&mut self, slot: usize, visit: bool) {
        let Slot { key, len, state } = self.objects.slots[slot];
        let len = len as usize;
        let key = (state == State::Pattern).then_some(key);
        let reader = match key {
            // Without bytes nothing is copied for a visitor (nor verified: see `flush`).
            Some(key) if !visit || !self.bytes => Reader::Verify(key),
            None if !self.bytes => Reader::Verify(0),
            _ => Reader::Copy { off: self.batch.arena.reserve(len), key, visit },
        };
        self.batch.queue.push(Op::Read { slot, len, reader });
    }

    /// A read section on the object of `slot`, verifying generated content. `len`: the length
    /// the reader claims (a trace's), or `None` for the stored one. Returns whether the read
    /// was accepted (it may still be queued: counts and spanning are known after
    /// [`Self::sync`]).
    pub fn read(&mut self, slot: usize, len: Option<usize>) -> LabResult<bool> {
        self.check_slot(slot)?;
        let stored = self.objects.slots[slot].len as usize;
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
        for chunk in slots.chunks(self.batch.max_ops) {
            for &slot in chunk {
                self.check_slot(slot)?;
                let len = self.objects.slots[slot].len as usize;
                self.record(TraceOp::Read { id: slot as u64, len })?;
                if self.holds(slot) {
                    self.queue_read(slot, true);
                } else {
                    self.refused("read", slot, &"empty handle")?;
                }
                self.telemetry.ops += 1;
                if self.telemetry.sample_due() {
                    self.flush(Some(&mut f))?;
                    self.sample();
                }
                if self.batch.arena.len() >= BATCH_BYTES {
                    self.flush(Some(&mut f))?;
                }
                self.telemetry.progress.tick(self.telemetry.ops);
            }
            self.flush(Some(&mut f))?;
        }
        Ok(())
    }

    /// A scatter-gather read section (`zs_obj_read_sg_begin`); verifies generated content.
    pub fn read_sg(&mut self, slot: usize, len: usize) -> LabResult<bool> {
        self.check_slot(slot)?;
        self.record(TraceOp::ReadSg { id: slot as u64, len })?;
        let stored = self.objects.slots[slot].len as usize;
        let r = if !self.holds(slot) || len != stored {
            let why = if self.holds(slot) { "wrong length" } else { "empty handle" };
            self.refused("read_sg", slot, &why).map(|_| false)
        } else {
            let mut buf = std::mem::take(&mut self.scratch);
            buf.clear();
            let bytes_kept = self.bytes;
            let answer = self.timed_now(|pool, w| {
                let word = super::word(w, slot);
                if !bytes_kept {
                    let kind = ReadKind::ScatterGather;
                    // SAFETY: the word holds an object of this pool.
                    return unsafe { pool.read_placement_raw(word, Some(len), kind) }.map(|p| {
                        let contiguous = pool.config().read_mode == ReadMode::Contiguous;
                        (if p.spanning && !contiguous { 2 } else { 1 }, Ok(()))
                    });
                }
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
                    self.telemetry.counters.reads += 1;
                    if self.bytes
                        && self.objects.slots[slot].state == State::Pattern
                        && !self.content.verify(self.objects.slots[slot].key, &self.scratch)
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
            let r = self.timed_now(|pool, w| unsafe {
                pool.handle_move_raw(super::word(w, from), super::word(w, to))
            })?;
            match r {
                Ok(()) => {
                    self.objects.slots[to] = self.objects.slots[from];
                    self.objects.slots[from] = Slot::EMPTY;
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
        self.telemetry.counters.compactions += 1;
        self.op_done()?;
        Ok(freed)
    }
}
