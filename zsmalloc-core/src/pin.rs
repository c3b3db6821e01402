//! Zspage pins and migration locks: how a reader of a huge object (whose header lives in the
//! zspage's metadata) keeps its zspage in place while compaction and release run without
//! waiting. Readers of other objects register on the object's header instead
//! ([`crate::header`], claims included) and take no pin.
//!
//! Two words take part:
//! - a zspage's `pin` word: bits 0..31 count huge readers; `MIGRATING` is set by compaction
//!   while it moves the zspage's objects and by release.
//! - the object's header word: a small per-object reader count, so that freeing an object being
//!   read is refused while its neighbours stay freeable.
//!
//! Rules (the kernel's `zspage_read_lock`/`migrate_write_lock`, without waiting in compaction):
//! 1. A reader loads the handle word, pins the zspage it names, then re-loads the handle word;
//!    if it changed, the object moved: unpin and start again.
//! 2. Compaction takes `MIGRATING` only when the pin count is 0 (`try_lock_migration`), and
//!    skips the zspage otherwise; it never waits for a reader.
//! 3. A reader that finds `MIGRATING` backs off and re-loads the handle word; migration of one
//!    zspage is short and rewrites every moved handle before it ends.
//! 4. While pinned, the zspage is neither migrated nor released, so the object stays put.

use crate::sync::{backoff, AtomicU32, Ordering};

const MIGRATING: u32 = 1 << 31;

/// The pin word of one zspage.
#[derive(Debug, Default)]
pub struct PinWord(AtomicU32);

impl PinWord {
    /// Pins unless a migration is running. Returns false (without pinning) during migration.
    #[inline]
    pub fn try_pin(&self) -> bool {
        let prev = self.0.fetch_add(1, Ordering::Acquire);
        if prev & MIGRATING == 0 {
            return true;
        }
        self.0.fetch_sub(1, Ordering::Relaxed);
        false
    }

    #[inline]
    pub fn unpin(&self) {
        let prev = self.0.fetch_sub(1, Ordering::Release);
        debug_assert!(prev & !MIGRATING != 0, "unpin without pin");
    }

    /// Takes the migration lock if nobody holds a pin.
    #[inline]
    pub fn try_lock_migration(&self) -> bool {
        self.0.compare_exchange(0, MIGRATING, Ordering::Acquire, Ordering::Relaxed).is_ok()
    }

    #[inline]
    pub fn unlock_migration(&self) {
        self.0.fetch_and(!MIGRATING, Ordering::Release);
    }

    /// Readers currently pinning (a racy snapshot, for statistics and release checks).
    #[inline]
    pub fn pinned(&self) -> u32 {
        self.0.load(Ordering::Acquire) & !MIGRATING
    }
}

/// Rule 1 and 3: pins the zspage the handle word currently names. `load` reads the handle word
/// (Acquire); `resolve` maps a word to the zspage's pin (or refuses it). Returns the word, what
/// `resolve` found and the pin, which the caller must `unpin`.
#[inline]
pub fn pin_current<'a, T, E>(
    load: impl Fn() -> usize,
    resolve: impl Fn(usize) -> Result<(T, &'a PinWord), E>,
) -> Result<(usize, T, &'a PinWord), E> {
    loop {
        let word = load();
        let (found, pin) = match resolve(word) {
            Ok(r) => r,
            // Refused, but the word changed since we loaded it: compaction moved the object and
            // released the zspage the old word named. Follow the new word.
            Err(_) if load() != word => continue,
            Err(e) => return Err(e),
        };
        if !pin.try_pin() {
            backoff(); // a migration is moving this zspage's objects; the word will change
            continue;
        }
        if load() != word {
            pin.unpin();
            continue;
        }
        return Ok((word, found, pin));
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn migration_excludes_pins_and_pins_exclude_migration() {
        let p = PinWord::default();
        assert!(p.try_pin());
        assert!(!p.try_lock_migration());
        p.unpin();
        assert!(p.try_lock_migration());
        assert!(!p.try_pin());
        assert_eq!(p.pinned(), 0);
        p.unlock_migration();
        assert!(p.try_pin());
        assert_eq!(p.pinned(), 1);
    }
}
