//! The run's modes, read once at the start: `--follow-children` and `--user-faults-only`.

use std::sync::atomic::{AtomicBool, Ordering};

use zsmalloc_tier::uffd::Faults;

/// `--follow-children` is in force.
pub static FOLLOW: AtomicBool = AtomicBool::new(false);
/// `--user-faults-only` is in force: the userfaultfd takes user-mode faults only.
pub static USER_FAULTS_ONLY: AtomicBool = AtomicBool::new(false);

pub fn following() -> bool {
    FOLLOW.load(Ordering::Relaxed)
}

/// The faults the tier's userfaultfd takes.
pub fn faults() -> Faults {
    if USER_FAULTS_ONLY.load(Ordering::Relaxed) {
        Faults::UserModeOnly
    } else {
        Faults::All
    }
}
