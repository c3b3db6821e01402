//! What the userfaultfd layer's tests share: a descriptor or the reason this machine has none,
//! and the pages they serve.

// Each test binary uses some of these.
#![allow(dead_code)]

use std::io::Write;
use std::time::Duration;

use zsmalloc_tier::pattern::pattern_page;
use zsmalloc_tier::uffd::{page_size, Features, Uffd, UffdError, Wait};

pub const TIMEOUT: Duration = Duration::from_secs(10);

/// A userfaultfd with `features`, or `None` (and why, printed) where this machine has none.
pub fn open_or_skip(test: &str, features: Features) -> Option<Uffd> {
    match Uffd::open(Wait::NonBlocking, features) {
        Ok(u) => Some(u),
        Err(
            e @ (UffdError::NoPermission
            | UffdError::Unsupported
            | UffdError::FeaturesUnavailable { .. }),
        ) => {
            // Straight to stderr: the test harness hides what `eprintln!` prints for a pass.
            let _ = writeln!(std::io::stderr(), "{test}: skipped: {e}");
            None
        }
        Err(e) => panic!("{test}: {e}"),
    }
}

/// Page `seed` of the test pattern.
pub fn pattern(seed: usize) -> Vec<u8> {
    let mut page = vec![0u8; page_size()];
    pattern_page(seed as u64, &mut page);
    page
}
