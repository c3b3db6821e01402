//! The corpus compressed once per page size and compressor; what zram stores for each page
//! then depends only on the pool's huge size ([`crate::zram_page`]).

use std::sync::Arc;

use zsmalloc_codec::{same_filled, Codec, Compressor};

use super::model::CorpusFacts;
use crate::error::LabResult;
use crate::zram_page::ZramPage;

/// A corpus page that is not same-filled, compressed.
#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Index of the page in the corpus.
    page: u32,
    /// Where its compressed bytes start in `comp`.
    offset: usize,
    /// Compressed length.
    len: u32,
}

/// The bytes zram stores for one page.
#[derive(Debug, Clone, Copy)]
pub struct StoredPage<'a> {
    pub bytes: &'a [u8],
    /// The page itself, stored raw (its compressed length reached the huge size).
    pub raw: bool,
}

/// The compressed corpus for one page size and compressor.
pub struct Compressed {
    pub page: usize,
    pub compressor: Compressor,
    /// The corpus pages, concatenated (shared by the compressors of one page size).
    raw: Arc<Vec<u8>>,
    /// Compressed bytes, concatenated.
    comp: Vec<u8>,
    entries: Vec<Entry>,
    pub facts: CorpusFacts,
}

impl Compressed {
    pub fn build(
        raw: Arc<Vec<u8>>,
        page: usize,
        compressor: Compressor,
        level: i32,
        source: &str,
    ) -> LabResult<Self> {
        let mut codec = Codec::new(compressor, level, page)?;
        let mut out = vec![0u8; zsmalloc_codec::bound(page)];
        let mut comp = Vec::new();
        let mut entries = Vec::new();
        let mut same = 0u64;
        for (i, p) in raw.chunks(page).enumerate() {
            if same_filled(p).is_some() {
                same += 1;
                continue;
            }
            let n = codec.compress(p, &mut out)?;
            entries.push(Entry { page: i as u32, offset: comp.len(), len: n as u32 });
            comp.extend_from_slice(&out[..n]);
        }
        let facts = CorpusFacts {
            source: source.to_string(),
            page_size: page as u32,
            compressor: compressor.name().into(),
            level: (compressor == Compressor::Zstd).then_some(level),
            input_pages: (raw.len() / page) as u64,
            same_filled_pages: same,
            compressed_bytes: comp.len() as u64,
        };
        Ok(Compressed { page, compressor, raw, comp, entries, facts })
    }

    /// Pages that go into a pool (the corpus less its same-filled pages): objects per replica.
    pub fn objects(&self) -> usize {
        self.entries.len()
    }

    /// What zram stores for object `e` in a pool whose huge size is `huge`.
    pub fn stored(&self, e: usize, huge: usize) -> StoredPage<'_> {
        let Entry { page, offset, len } = self.entries[e];
        match ZramPage::for_length(len as usize, huge) {
            ZramPage::Compressed(n) => {
                StoredPage { bytes: &self.comp[offset..offset + n], raw: false }
            }
            ZramPage::Raw | ZramPage::Same(_) => {
                let at = page as usize * self.page;
                StoredPage { bytes: &self.raw[at..at + self.page], raw: true }
            }
        }
    }

    /// Bytes one copy of the corpus asks a pool to hold.
    pub fn bytes_per_replica(&self, huge: usize) -> u64 {
        (0..self.objects()).map(|e| self.stored(e, huge).bytes.len() as u64).sum()
    }

    /// Bytes this compressed copy holds beyond the shared pages.
    pub fn held_bytes(&self) -> u64 {
        (self.comp.capacity() + self.entries.capacity() * std::mem::size_of::<Entry>()) as u64
    }
}
