//! zram's `mm_stat` line (Documentation/admin-guide/blockdev/zram.rst): nine columns —
//! orig_data_size compr_data_size mem_used_total mem_limit mem_used_max same_pages
//! pages_compacted huge_pages huge_pages_since.
//!
//! As in zram, each stored object stands for one page of original data, and so does each
//! same-filled page (`orig_data_size = (objects + same_pages) * page_size`). `huge_pages` and
//! `huge_pages_since` follow zram's definitions: a page whose compressed length reaches
//! `huge_class_size` is stored whole (`ZRAM_HUGE`); `huge_pages` counts the live ones (live
//! objects of `huge_class_size` bytes or more), `huge_pages_since` every such store ever, so
//! `huge_pages <= huge_pages_since` always. Neither counts objects by the class they land in:
//! under the heuristic chain policy some classes below `huge_class_size` are huge classes too.

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
        r.huge_pages,
        r.huge_stores
    )
}
