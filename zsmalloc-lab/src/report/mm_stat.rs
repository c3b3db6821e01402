//! zram's `mm_stat` line (Documentation/admin-guide/blockdev/zram.rst): nine columns —
//! orig_data_size compr_data_size mem_used_total mem_limit mem_used_max same_pages
//! pages_compacted huge_pages huge_pages_since.
//!
//! As in zram, each stored object stands for one page of original data, and so does each
//! same-filled page (`orig_data_size = (objects + same_pages) * page_size`); `huge_pages` are
//! live objects in huge classes, `huge_pages_since` stores into them ever.

use crate::result::RunResult;

pub fn line(r: &RunResult) -> String {
    let page = u64::from(r.config.page_size);
    format!(
        "{:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
        (r.objects + r.same_pages) * page,
        r.bytes_stored,
        r.pages * page,
        r.config.mem_limit_pages * page,
        r.pages_peak * page,
        r.same_pages,
        r.pages_compacted,
        r.huge_objects,
        r.huge_stores
    )
}
