//! The pool-owned handle words behind `zsmalloc_compat.h`'s `unsigned long` handles (the
//! kernel's handle cache): words of the core's address-stable [`HandleWords`] table, which a
//! compat handle names by address. Every value coming back from C is looked up here before use
//! (one of this table's words, and live), so garbage values, handles of another pool and double
//! frees are refused instead of dereferenced.

use std::sync::atomic::AtomicUsize;
use std::sync::{Mutex, MutexGuard, OnceLock};

use zsmalloc_core::{Error, HandleWords, Result};

/// Compat handle words, made on the first `zs_compat_malloc` (a pool that never uses the compat
/// API holds none), and which of them are handed out.
pub(crate) struct CompatSlots {
    words: OnceLock<HandleWords>,
    vacancy: Mutex<Vacancy>,
}

/// Which words are handed out, and the free ones.
#[derive(Default)]
struct Vacancy {
    live: Vec<bool>,
    free: Vec<usize>,
}

impl CompatSlots {
    pub(crate) fn new() -> Self {
        CompatSlots { words: OnceLock::new(), vacancy: Mutex::new(Vacancy::default()) }
    }

    fn lock(&self) -> MutexGuard<'_, Vacancy> {
        self.vacancy.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The index of a compat handle value, if it names one of this table's live words.
    fn live_index(&self, value: usize) -> Option<usize> {
        let i = self.words.get()?.index_of(value)?;
        self.lock().live.get(i).copied().unwrap_or(false).then_some(i)
    }

    /// Takes an empty word; `OutOfMemory` when all of the table's words are handed out.
    pub(crate) fn take(&self) -> Result<&AtomicUsize> {
        let words = self.words.get_or_init(HandleWords::new);
        let mut v = self.lock();
        let i = match v.free.pop() {
            Some(i) => i,
            None => {
                let i = words.push().ok_or(Error::OutOfMemory)?;
                v.live.resize(i + 1, false);
                i
            }
        };
        v.live[i] = true;
        drop(v);
        Ok(words.get(i).expect("a pushed word"))
    }

    /// The handle word of a live compat handle.
    pub(crate) fn get(&self, value: usize) -> Result<&AtomicUsize> {
        let i = self
            .live_index(value)
            .ok_or(Error::InvalidHandle("not a live handle of this pool's zs_malloc"))?;
        Ok(self.words.get().and_then(|w| w.get(i)).expect("a live word"))
    }

    /// Returns the word of a compat handle (its word is empty).
    pub(crate) fn give_back(&self, value: usize) {
        let Some(i) = self.words.get().and_then(|w| w.index_of(value)) else { return };
        let mut v = self.lock();
        if v.live.get(i).copied().unwrap_or(false) {
            v.live[i] = false;
            v.free.push(i);
        }
    }
}
