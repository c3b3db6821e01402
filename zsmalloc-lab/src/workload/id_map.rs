//! A trace's handle ids mapped to small values without a hash per operation where the trace
//! allows it. The lab's own traces name handles 0, 1, 2, ... (`--record`): those ids index a
//! vector. Ids far from that range (the C shim writes the address of each `struct zs_handle`)
//! go to a hash map. Either way an id keeps one home for the life of the map.

use std::collections::HashMap;

/// The value no entry holds: a vector cell without an entry.
const NONE: u32 = u32::MAX;

/// Ids below this always index the vector (a few MiB at most).
const DENSE_FLOOR: u64 = 1 << 20;

/// Handle ids to `u32` values (below `u32::MAX`).
#[derive(Debug, Default)]
pub struct IdMap {
    dense: Vec<u32>,
    sparse: HashMap<u64, u32>,
    len: u64,
}

impl IdMap {
    pub fn new() -> Self {
        IdMap::default()
    }

    /// Entries held.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `id` belongs to the vector: below the floor, or within four times the entries
    /// held (so the vector stays within a few words per entry). Invariant: an id below the
    /// vector's length is never in the hash map ([`IdMap::grow`] moves them).
    #[inline]
    fn is_dense(&self, id: u64) -> bool {
        (id as usize) < self.dense.len() || id < DENSE_FLOOR.max(self.len.saturating_mul(4))
    }

    /// Grows the vector to hold index `i`, moving the hash map's entries it now covers.
    #[cold]
    fn grow(&mut self, i: usize) {
        let len = (i + 1).next_power_of_two();
        self.dense.resize(len, NONE);
        let mut moved = Vec::new();
        self.sparse.retain(|&id, &mut v| {
            let inside = (id as usize) < len;
            if inside {
                moved.push((id as usize, v));
            }
            !inside
        });
        for (id, v) in moved {
            self.dense[id] = v;
        }
    }

    #[inline]
    pub fn get(&self, id: u64) -> Option<u32> {
        match self.dense.get(id as usize) {
            Some(&v) if v != NONE => Some(v),
            Some(_) => None,
            None => self.sparse.get(&id).copied(),
        }
    }

    /// Sets `id` to `value` (below `u32::MAX`); the value it held.
    #[inline]
    pub fn insert(&mut self, id: u64, value: u32) -> Option<u32> {
        debug_assert_ne!(value, NONE);
        if self.is_dense(id) {
            let i = id as usize;
            if i >= self.dense.len() {
                self.grow(i);
            }
            let old = std::mem::replace(&mut self.dense[i], value);
            if old == NONE {
                self.len += 1;
                return None;
            }
            return Some(old);
        }
        let old = self.sparse.insert(id, value);
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    #[inline]
    pub fn remove(&mut self, id: u64) -> Option<u32> {
        let old = match self.dense.get_mut(id as usize) {
            Some(v) if *v != NONE => Some(std::mem::replace(v, NONE)),
            Some(_) => None,
            None => self.sparse.remove(&id),
        };
        if old.is_some() {
            self.len -= 1;
        }
        old
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_and_sparse_ids_behave_as_one_map() {
        let mut m = IdMap::new();
        let mut model: HashMap<u64, u32> = HashMap::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for step in 0..200_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let id = match x % 4 {
                0 => x % 5000,
                1 => 0x7ffd_0000_0000 + (x % 64) * 16,
                2 => x % (3 << 20),
                _ => x,
            };
            if x.is_multiple_of(3) {
                assert_eq!(m.remove(id), model.remove(&id), "step {step}");
            } else {
                assert_eq!(m.insert(id, step), model.insert(id, step), "step {step}");
            }
            assert_eq!(m.get(id), model.get(&id).copied());
            assert_eq!(m.len(), model.len() as u64);
        }
        for (&id, &v) in &model {
            assert_eq!(m.get(id), Some(v));
        }
    }

    #[test]
    fn ids_the_vector_grows_over_move_into_it() {
        let mut m = IdMap::new();
        assert_eq!(m.insert(2 << 20, 7), None);
        for id in 0..600_000 {
            m.insert(id, 1);
        }
        assert_eq!(m.insert((2 << 20) + 1, 8), None, "the vector now reaches past 2 Mi");
        assert_eq!(m.get(2 << 20), Some(7));
        assert_eq!(m.insert(2 << 20, 9), Some(7));
        assert_eq!(m.remove(2 << 20), Some(9));
        assert_eq!(m.get(2 << 20), None);
        assert_eq!(m.len(), 600_001);
    }
}
