//! What `zsmalloc folios` reports: one row per (compressor, folio size), and the run's
//! description and times. Serialised as they are for `--format json`.

use serde::Serialize;

use crate::timing::Samples;

/// The study.
#[derive(Debug, Clone, Serialize)]
pub struct FoliosReport {
    /// Where the corpus came from.
    pub source: String,
    /// Bytes of corpus every row compresses (whole folios of the largest size).
    pub input_bytes: u64,
    pub page_size: u32,
    pub chain_size: u32,
    /// zstd's level (lz4 and lzo take none).
    pub zstd_level: i32,
    /// Share of the folios swapped in (freed) and replaced by as many new ones.
    pub churn_share: f64,
    /// Share of the folios swapped in that are replaced by new ones (1: as many).
    pub refill_share: f64,
    /// Share of swap-ins that find no large folio, for the `mixed` read figures.
    pub fallback_share: f64,
    /// Timed rounds, interleaved; times are `{min, median, max}` over them.
    pub repeat: usize,
    pub seed: u64,
    pub rows: Vec<FolioRow>,
    pub time: RunTime,
}

impl FoliosReport {
    /// `; zstd level N` where a zstd row ran, else nothing: a level says nothing of lz4 or lzo.
    pub fn zstd_level_note(&self) -> String {
        if self.rows.iter().any(|w| w.compressor == "zstd") {
            format!("; zstd level {}", self.zstd_level)
        } else {
            String::new()
        }
    }
}

/// One compressor at one folio size.
#[derive(Debug, Clone, Serialize)]
pub struct FolioRow {
    pub compressor: String,
    pub folio_size: u32,
    /// The pool's `multi_page_size` (0: the band is off, folios of a page).
    pub multi_page_size: u32,
    /// Folios of the corpus.
    pub folios: u64,
    /// Same-filled over the whole folio (by 8-byte words): kept outside the pool.
    pub same_filled: u64,
    /// Stored uncompressed: the compressed length reached `huge_class_size`.
    pub raw: u64,
    /// The compressor's output for every folio that is not same-filled (the RFC's
    /// `compr_data_size`).
    pub compressed_bytes: u64,
    /// `compressed_bytes / input_bytes`.
    pub ratio: f64,
    /// Objects in the pool after the fill.
    pub objects: u64,
    /// The length at and above which a folio is stored raw: the multi band's huge class size
    /// (the base band's for folios of a page).
    pub huge_class_size: u32,
    /// Pages of the pool after the fill.
    pub pages_used: u64,
    /// Most pages the pool held, fill and churn.
    pub max_pages_used: u64,
    /// Pages after the churn and `compact`.
    pub pages_after_compaction: u64,
    pub compaction: Compaction,
    /// Class spacing waste after the fill: the sum over objects of class size less the
    /// object's length and its 8-byte header (huge classes hold no header).
    pub padding_bytes: u64,
    /// Bytes of the pool's pages after the fill that hold no object: free slots of partly
    /// filled zspages and zspage tails (`pages_used * page` less the class sizes of the
    /// objects).
    pub unused_bytes: u64,
    /// The classes with the most padding, most first.
    pub padding_classes: Vec<ClassPadding>,
    /// Folios swapped in.
    pub churned: u64,
    /// Folios stored anew after them, drawn from the corpus.
    pub refilled: u64,
    pub reads: Reads,
    pub writes: Writes,
    /// Thread CPU of compressing the corpus for the fill (same-filled tests included).
    pub fill_compress_seconds: f64,
}

/// What `compact` did after the churn.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Compaction {
    pub objects_moved: u64,
    pub bytes_moved: u64,
}

/// One class's share of the padding.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ClassPadding {
    pub class_size: u32,
    /// Size of the class below it in the same band (0 for the first).
    pub previous_class_size: u32,
    pub objects: u64,
    pub padding_bytes: u64,
}

/// Swap-in: the three ways a folio comes back, and the mixes.
#[derive(Debug, Clone, Serialize)]
pub struct Reads {
    /// Folios timed per round (a seeded sample of the pool's folios).
    pub sample_folios: u64,
    /// The whole object decompressed once into the faulting large folio.
    pub large_folio: ReadPath,
    /// No large folio: each 4K fault decompresses the whole object to keep 4K.
    pub order0_fallback: ReadPath,
    /// No large folio, v3 4/4's batch: each decompression fills four small folios (16K).
    pub batch_fallback: ReadPath,
    /// `(1 - fallback_share) * large_folio + fallback_share * order0_fallback`.
    pub mixed_order0: ReadPath,
    /// The same with `batch_fallback`.
    pub mixed_batch: ReadPath,
}

/// One read path's cost per 4K page swapped in.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct ReadPath {
    /// Decompressor output per 4K page brought back.
    pub bytes_decompressed_per_4k: f64,
    /// Thread CPU per 4K page: the pool's read, decompression and copies, in ns.
    pub ns_per_4k: Samples,
}

impl ReadPath {
    /// `(1 - share) * a + share * b`, figure by figure.
    pub fn mix(a: &ReadPath, b: &ReadPath, share: f64) -> ReadPath {
        let m = |x: f64, y: f64| (1.0 - share) * x + share * y;
        ReadPath {
            bytes_decompressed_per_4k: m(a.bytes_decompressed_per_4k, b.bytes_decompressed_per_4k),
            ns_per_4k: Samples {
                min: m(a.ns_per_4k.min, b.ns_per_4k.min),
                median: m(a.ns_per_4k.median, b.ns_per_4k.median),
                max: m(a.ns_per_4k.max, b.ns_per_4k.max),
                n: a.ns_per_4k.n,
            },
        }
    }
}

/// Swap-out: compressing the same folios whole and page by page.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Writes {
    /// Once per folio (same-filled test included), per 4K page, ns.
    pub ns_per_4k: Samples,
    /// The same folios compressed once per 4K page, per 4K page, ns.
    pub ns_per_4k_by_page: Samples,
}

/// Where the command's time went.
#[derive(Debug, Clone, Copy, Serialize, Default)]
pub struct RunTime {
    /// Wall time from the corpus read to the last row.
    pub wall_seconds: f64,
    /// Thread CPU of reading the corpus.
    pub corpus_seconds: f64,
    /// Thread CPU of the fills' compression, every row.
    pub fill_compress_seconds: f64,
    /// Thread CPU of the timed read and write rounds (decompression and compression most of
    /// it).
    pub timed_rounds_seconds: f64,
    /// Thread CPU of the whole study.
    pub cpu_seconds: f64,
}
