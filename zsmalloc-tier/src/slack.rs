//! How far above the budget the tier's resident pages may go. Eviction is deferred while faults
//! are pending (the handler shares its CPU with the program's threads, and an eviction right
//! after a fault delays the next one), up to this slack; beyond it a fault evicts down to the
//! budget at once. One fault also brings its pages in before the evictions it causes: one for
//! an evicted page, up to [`FAULT_PAGES`] for a first touch.

/// The most pages the deferred evictions leave above the budget: 1 MiB.
pub const DEFERRED_PAGES: u64 = 256;

/// The most pages one fault brings in before the evictions it causes, near the budget: a first
/// touch with the untouched pages after it, a folio's group, or a page with its readahead
/// cluster (longer first-touch runs come only while the budget has room for them).
pub const FAULT_PAGES: u64 = 16;

/// The pages by which the resident ones may exceed a budget of `budget` pages before a fault
/// evicts: [`DEFERRED_PAGES`], or a quarter of the budget when that is less.
pub fn deferred_pages(budget: u64) -> u64 {
    (budget / 4).min(DEFERRED_PAGES)
}

/// The most pages resident above a budget of `budget` pages: the deferred evictions and one
/// fault's pages (the staging pages not yet dropped are not the program's and not counted).
pub fn slack_pages(budget: u64) -> u64 {
    deferred_pages(budget) + FAULT_PAGES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slack_is_a_quarter_of_a_small_budget_and_at_most_a_mebibyte_of_deferral() {
        assert_eq!(slack_pages(16), 4 + 16);
        assert_eq!(slack_pages(1024), 256 + 16);
        assert_eq!(slack_pages(1 << 20), 256 + 16);
    }
}
