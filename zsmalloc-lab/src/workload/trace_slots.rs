//! A trace's operations with their handle ids turned into the driver's slots, and those
//! operations run on a driver.
//!
//! Which slot an id gets depends on the trace alone (the order ids first appear), never on the
//! pool: so one [`SlotResolver`] serves every pool a trace drives ([`crate::replay_many`]), and
//! each driver only makes the slots an operation names before running it ([`apply`]).

use super::id_map::IdMap;
use crate::driver::Driver;
use crate::error::{LabError, LabResult};
use crate::trace_format::TraceOp;

/// New ids at most this far above the slots made so far keep a replay's ids its own slots (the
/// slots between are made, empty): a trace the lab wrote skips a few ids at a time, where pages
/// were same-filled.
const MAX_SKIPPED_IDS: u64 = 64;

/// One operation of a trace with slots in place of handle ids, and the slots a driver must
/// have made before running it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotOp {
    /// The operation; its `id`, `from` and `to` are slots.
    pub op: TraceOp,
    pub slots: u64,
}

/// Handle ids to slots, in order of first appearance.
///
/// Ids below `same` are their own slots: a trace the lab wrote names its handles 0, 1, 2, ...
/// in about the order it first uses them (a handle whose page was same-filled appears later, or
/// never), so a new id a little above the slots made so far gets the slots up to it made at
/// once, and its ids need no map at all (one random access less per operation; a skipped id's
/// slot waits, empty, for it). The first new id out of that order freezes `same`; it and every
/// later new id go to the map.
pub struct SlotResolver {
    map: IdMap,
    same: u64,
    in_order: bool,
    /// Slots made so far.
    made: u64,
    /// The trace as messages name it.
    name: String,
}

impl SlotResolver {
    pub fn new(name: &str) -> Self {
        SlotResolver { map: IdMap::new(), same: 0, in_order: true, made: 0, name: name.into() }
    }

    #[inline]
    fn slot(&mut self, id: u64) -> LabResult<u64> {
        if id < self.same {
            return Ok(id);
        }
        if let Some(s) = self.map.get(id) {
            return Ok(u64::from(s));
        }
        if self.in_order && id - self.same <= MAX_SKIPPED_IDS && self.made == self.same {
            self.made = id + 1;
            self.same = id + 1;
            return Ok(id);
        }
        self.in_order = false;
        let s = self.made;
        let value = u32::try_from(s).ok().filter(|&v| v != u32::MAX).ok_or_else(|| {
            LabError::usage(format!("{}: more handles than a replay holds", self.name))
        })?;
        self.made += 1;
        self.map.insert(id, value);
        Ok(s)
    }

    /// `op` with its ids resolved (a move's `from` before its `to`, as they are read).
    #[inline]
    pub fn resolve(&mut self, op: TraceOp) -> LabResult<SlotOp> {
        let op = match op {
            TraceOp::Store { id, len } => TraceOp::Store { id: self.slot(id)?, len },
            TraceOp::Free { id } => TraceOp::Free { id: self.slot(id)? },
            TraceOp::Read { id, len } => TraceOp::Read { id: self.slot(id)?, len },
            TraceOp::Compact => TraceOp::Compact,
            TraceOp::Malloc { id, len } => TraceOp::Malloc { id: self.slot(id)?, len },
            TraceOp::Write { id, len } => TraceOp::Write { id: self.slot(id)?, len },
            TraceOp::ReadSg { id, len } => TraceOp::ReadSg { id: self.slot(id)?, len },
            TraceOp::Move { from, to } => {
                let from = self.slot(from)?;
                TraceOp::Move { from, to: self.slot(to)? }
            }
        };
        Ok(SlotOp { op, slots: self.made })
    }
}

/// Runs one resolved operation on `d`, making the slots it needs first.
#[inline]
pub fn apply(d: &mut Driver<'_>, op: &SlotOp) -> LabResult<()> {
    while (d.slots() as u64) < op.slots {
        d.new_slot()?;
    }
    let s = |slot: u64| slot as usize;
    match op.op {
        TraceOp::Store { id, len } => d.store(s(id), len).map(drop),
        TraceOp::Free { id } => d.free(s(id)),
        TraceOp::Read { id, len } => d.read(s(id), Some(len)).map(drop),
        TraceOp::Compact => d.compact().map(drop),
        TraceOp::Malloc { id, len } => d.malloc(s(id), len).map(drop),
        TraceOp::Write { id, len } => d.write(s(id), len).map(drop),
        TraceOp::ReadSg { id, len } => d.read_sg(s(id), len).map(drop),
        TraceOp::Move { from, to } => d.move_handle(s(from), s(to)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(ids: &[u64]) -> Vec<(u64, u64)> {
        let mut r = SlotResolver::new("t");
        ids.iter()
            .map(|&id| {
                let o = r.resolve(TraceOp::Free { id }).unwrap();
                match o.op {
                    TraceOp::Free { id } => (id, o.slots),
                    _ => unreachable!(),
                }
            })
            .collect()
    }

    #[test]
    fn ids_in_order_are_their_own_slots_and_others_follow_the_slots_made() {
        // 0 and 2 in order (slot 1 made empty for the skipped id); then an address-like id
        // gets the next slot, and the order is frozen: 5 goes to the map too.
        assert_eq!(
            slots(&[0, 2, 1, 1 << 40, 5, 1 << 40, 2]),
            [(0, 1), (2, 3), (1, 3), (3, 4), (4, 5), (3, 5), (2, 5)]
        );
    }
}
