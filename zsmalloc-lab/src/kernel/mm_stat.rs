//! zram's `mm_stat` file as the kernel prints it (Documentation/admin-guide/blockdev/zram.rst):
//! `orig_data_size compr_data_size mem_used_total mem_limit mem_used_max same_pages
//! pages_compacted huge_pages huge_pages_since`, the first five in bytes, the others counts.
//! Older kernels print fewer columns; the first seven are required.

use serde::Serialize;

use crate::error::{LabError, LabResult};

/// One reading of a device's `mm_stat`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct MmStat {
    /// Bytes of pages stored, same-filled ones included.
    pub orig_data_size: u64,
    /// Sum of the lengths zram passed to `zs_malloc` for the live objects.
    pub compr_data_size: u64,
    /// `zs_get_total_pages() * PAGE_SIZE`.
    pub mem_used_total: u64,
    pub mem_limit: u64,
    pub mem_used_max: u64,
    /// Live same-filled pages (kept in zram's table, not in the pool).
    pub same_pages: u64,
    /// Pages freed by compaction since the device was set up (explicit or by the shrinker).
    pub pages_compacted: u64,
    /// Live pages stored whole (`ZRAM_HUGE`).
    pub huge_pages: u64,
    /// Pages ever stored whole.
    pub huge_pages_since: u64,
}

impl MmStat {
    /// Parses the file's one line.
    pub fn parse(text: &str) -> LabResult<MmStat> {
        let fields: Vec<u64> =
            text.split_whitespace().map(|f| f.parse::<u64>()).collect::<Result<_, _>>().map_err(
                |_| LabError::runtime(format!("mm_stat: not a line of numbers: '{text}'")),
            )?;
        if fields.len() < 7 {
            return Err(LabError::runtime(format!(
                "mm_stat: {} columns, at least 7 expected: '{}'",
                fields.len(),
                text.trim()
            )));
        }
        let at = |i: usize| fields.get(i).copied().unwrap_or(0);
        Ok(MmStat {
            orig_data_size: at(0),
            compr_data_size: at(1),
            mem_used_total: at(2),
            mem_limit: at(3),
            mem_used_max: at(4),
            same_pages: at(5),
            pages_compacted: at(6),
            huge_pages: at(7),
            huge_pages_since: at(8),
        })
    }

    /// Pool pages (`mem_used_total` in pages of `page` bytes).
    pub fn pool_pages(&self, page: usize) -> u64 {
        self.mem_used_total / page as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_line_parses() {
        let s = MmStat::parse(
            "   45056    16213   106496        0   110592        3        0        3        3\n",
        )
        .unwrap();
        assert_eq!(s.compr_data_size, 16213);
        assert_eq!(s.pool_pages(4096), 26);
        assert_eq!((s.same_pages, s.huge_pages, s.huge_pages_since), (3, 3, 3));
        assert!(MmStat::parse("1 2 3").is_err());
        assert!(MmStat::parse("1 2 x 4 5 6 7").is_err());
    }
}
