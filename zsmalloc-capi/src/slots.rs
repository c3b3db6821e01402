//! The pool-owned table of handle words behind `zsmalloc_compat.h`'s `unsigned long` handles
//! (the kernel's handle cache). A compat handle is the address of one of these words; every
//! value coming back from C is looked up here before use, so garbage values, handles of another
//! pool and double frees are refused instead of dereferenced.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicUsize;
use std::sync::{Mutex, MutexGuard};

use zsmalloc_core::{Error, Result};

const CHUNK: usize = 1024;

/// Handle words in chunks that are never moved nor freed before the table.
pub(crate) struct CompatSlots {
    inner: Mutex<Slots>,
}

#[derive(Default)]
struct Slots {
    chunks: Vec<Box<[AtomicUsize]>>,
    /// Chunk base address -> chunk number.
    by_base: BTreeMap<usize, usize>,
    free: Vec<usize>,
    live: Vec<bool>,
}

impl Slots {
    fn word_ptr(&self, id: usize) -> *const AtomicUsize {
        &self.chunks[id / CHUNK][id % CHUNK]
    }

    /// The slot number of a compat handle value, if it is one of this table's live slots.
    fn id_of(&self, value: usize) -> Option<usize> {
        let (&base, &n) = self.by_base.range(..=value).next_back()?;
        let off = value - base;
        let size = std::mem::size_of::<AtomicUsize>();
        if off & (size - 1) != 0 || off / size >= CHUNK {
            return None;
        }
        let id = n * CHUNK + off / size;
        self.live[id].then_some(id)
    }
}

impl CompatSlots {
    pub(crate) fn new() -> Self {
        CompatSlots { inner: Mutex::new(Slots::default()) }
    }

    fn lock(&self) -> MutexGuard<'_, Slots> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes an empty slot; returns its handle word.
    pub(crate) fn take(&self) -> &AtomicUsize {
        let mut s = self.lock();
        let id = match s.free.pop() {
            Some(id) => id,
            None => {
                let n = s.chunks.len();
                let chunk: Box<[AtomicUsize]> = (0..CHUNK).map(|_| AtomicUsize::new(0)).collect();
                s.by_base.insert(chunk.as_ptr() as usize, n);
                s.chunks.push(chunk);
                s.live.resize((n + 1) * CHUNK, false);
                s.free.extend((n * CHUNK + 1..(n + 1) * CHUNK).rev());
                n * CHUNK
            }
        };
        s.live[id] = true;
        let p = s.word_ptr(id);
        drop(s);
        // SAFETY: chunk storage is heap memory owned by `self`, never moved (the Vec holds boxes)
        // nor freed before `self` is dropped.
        unsafe { &*p }
    }

    /// The handle word of a live compat handle.
    pub(crate) fn get(&self, value: usize) -> Result<&AtomicUsize> {
        let s = self.lock();
        let id = s
            .id_of(value)
            .ok_or(Error::InvalidHandle("not a live handle of this pool's zs_malloc"))?;
        let p = s.word_ptr(id);
        drop(s);
        // SAFETY: as in `take`.
        Ok(unsafe { &*p })
    }

    /// Returns the slot of a compat handle (its word is empty).
    pub(crate) fn give_back(&self, value: usize) {
        let mut s = self.lock();
        if let Some(id) = s.id_of(value) {
            s.live[id] = false;
            s.free.push(id);
        }
    }
}
