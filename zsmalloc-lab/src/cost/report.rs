//! The cost study's summary: per configuration, compressor and mode, what a read costs and
//! what fewer spanning objects save (printed by [`crate::report::cost`]).

use serde::Serialize;

use super::{Kind, PoolFacts, ReadRow};

/// What a reviewer wants from a cost run, per configuration, compressor and mode.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Summary {
    /// The configuration the others are compared with (the first).
    pub base: Option<String>,
    pub rows: Vec<SummaryRow>,
    /// Per configuration and compressor, how far apart its pools put the same code.
    pub pool_spread: Vec<PoolSpread>,
}

/// The in-place section runs the same code in `copy`, `map` and `contiguous`, each on a pool of
/// its own (their pages are allocated differently): how far apart its medians come out is the
/// pools' spread, and a difference between modes inside it is not the mode's.
#[derive(Debug, Clone, Serialize)]
pub struct PoolSpread {
    pub label: String,
    pub compressor: String,
    /// The modes compared (those of the run that are pool read modes).
    pub modes: Vec<String>,
    /// Lowest and highest median of the in-place section over those modes, ns.
    pub in_place_section_ns: [f64; 2],
}

/// The modes whose in-place sections run the same code (`sg` linearises, so it is not one).
const SAME_IN_PLACE_CODE: [&str; 3] = ["copy", "map", "contiguous"];

fn pool_spread(reads: &[ReadRow]) -> Vec<PoolSpread> {
    let mut out: Vec<PoolSpread> = Vec::new();
    let in_place = reads.iter().filter(|r| {
        r.kind == Kind::Regular && !r.spanning && SAME_IN_PLACE_CODE.contains(&r.mode.as_str())
    });
    for r in in_place {
        let m = r.ns_per_section.median;
        match out.iter_mut().find(|p| p.label == r.label && p.compressor == r.compressor) {
            Some(p) => {
                p.modes.push(r.mode.clone());
                p.in_place_section_ns =
                    [p.in_place_section_ns[0].min(m), p.in_place_section_ns[1].max(m)];
            }
            None => out.push(PoolSpread {
                label: r.label.clone(),
                compressor: r.compressor.clone(),
                modes: vec![r.mode.clone()],
                in_place_section_ns: [m, m],
            }),
        }
    }
    out.retain(|p| p.modes.len() > 1);
    out
}

#[derive(Debug, Clone, Serialize)]
pub struct SummaryRow {
    pub label: String,
    pub compressor: String,
    pub mode: String,
    /// Pool pages holding `copies` copies of the corpus.
    pub pages: u64,
    /// Copies of the corpus in the pool: the same for every pool of one compressor, not
    /// between compressors (each fills to the target size).
    pub copies: u64,
    /// Pool pages per copy of the corpus: what compares between compressors.
    pub pages_per_copy: f64,
    /// Objects in the pool (each read once per visit).
    pub objects: u64,
    /// Share of the objects that span two pages, percent.
    pub spanning_pct: f64,
    /// Mean CPU time of a read (section + decompress, zram consumer) over every object, ns:
    /// each row's median weighted by its objects.
    pub ns_per_read: f64,
    /// The same for the zswap consumer.
    pub ns_per_read_zswap: f64,
    /// What a spanning section costs beyond an in-place one, ns (medians).
    pub spanning_extra_ns: Option<f64>,
    /// The extra cannot be told from nothing: the two sections' ranges over rounds overlap, or
    /// it came out below zero (a spanning section does all an in-place one does). Absent with
    /// one round and an extra above zero (no spread to judge by).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spanning_extra_within_noise: Option<bool>,
    /// Share of all read + decompress CPU that the spanning sections' extra cost is, percent.
    pub spanning_copy_share_pct: Option<f64>,
    /// Against the base configuration (same compressor and mode).
    pub vs_base: Option<VsBase>,
}

#[derive(Debug, Clone, Serialize)]
pub struct VsBase {
    /// Pages, percent change.
    pub pages_pct: f64,
    /// Measured change of `ns_per_read`, ns (noise included: see the rows' spreads).
    pub ns_per_read_delta: f64,
    /// The two `ns_per_read` ranges over rounds overlap (absent with one round).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ns_per_read_delta_within_noise: Option<bool>,
    /// What fewer spanning objects save per read, modelled from the rows: base's spanning share
    /// × base's spanning extra minus this one's, ns (positive = cheaper).
    pub spanning_ns_saved_per_read: Option<f64>,
    /// The saving's range, from the extras' ranges over rounds, holds zero (absent with one
    /// round).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spanning_ns_saved_within_noise: Option<bool>,
}

fn r1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn r2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

struct Agg {
    objects: u64,
    spanning: u64,
    ns_read: f64,
    /// `ns_read` from every row's fastest and slowest round (with more than one round).
    ns_read_range: Option<(f64, f64)>,
    ns_zswap: f64,
    extra: Option<f64>,
    /// The least and most the extra can be from the two rows' ranges (more than one round).
    extra_range: Option<(f64, f64)>,
}

impl Agg {
    fn extra_within_noise(&self) -> Option<bool> {
        match (self.extra, self.extra_range) {
            (Some(e), _) if e < 0.0 => Some(true),
            (Some(_), Some((lo, _))) => Some(lo <= 0.0),
            _ => None,
        }
    }
}

fn aggregate(rows: &[&ReadRow]) -> Agg {
    let objects: u64 = rows.iter().map(|r| r.objects).sum();
    let spanning: u64 = rows.iter().filter(|r| r.spanning).map(|r| r.objects).sum();
    let w = |f: &dyn Fn(&ReadRow) -> f64| {
        rows.iter().map(|r| r.objects as f64 * f(r)).sum::<f64>() / objects.max(1) as f64
    };
    let regular = |span: bool| {
        rows.iter()
            .find(|r| r.kind == Kind::Regular && r.spanning == span)
            .map(|r| r.ns_per_section)
    };
    let (extra, extra_range) = match (regular(true), regular(false)) {
        (Some(s), Some(i)) => {
            let range = (s.n > 1 && i.n > 1).then_some((s.min - i.max, s.max - i.min));
            (Some(s.median - i.median), range)
        }
        _ => (None, None),
    };
    let spread = rows.iter().all(|r| r.ns_per_read.n > 1);
    Agg {
        objects,
        spanning,
        ns_read: w(&|r| r.ns_per_read.median),
        ns_read_range: spread.then(|| (w(&|r| r.ns_per_read.min), w(&|r| r.ns_per_read.max))),
        ns_zswap: w(&|r| r.ns_per_read_zswap.median),
        extra,
        extra_range,
    }
}

/// The summary of `reads` over `pools`.
pub fn summarize(pools: &[PoolFacts], reads: &[ReadRow]) -> Summary {
    let base = pools.first().map(|p| p.label.clone());
    let mut keys: Vec<(String, String, String)> = Vec::new();
    for r in reads {
        let k = (r.label.clone(), r.compressor.clone(), r.mode.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let of = |k: &(String, String, String)| -> Vec<&ReadRow> {
        reads.iter().filter(|r| r.label == k.0 && r.compressor == k.1 && r.mode == k.2).collect()
    };
    let pool_of =
        |label: &str, comp: &str| pools.iter().find(|p| p.label == label && p.compressor == comp);
    let pages_of = |label: &str, comp: &str| pool_of(label, comp).map_or(0, |p| p.pages);
    let mut rows = Vec::new();
    for k in &keys {
        let a = aggregate(&of(k));
        let pages = pages_of(&k.0, &k.1);
        let copies = pool_of(&k.0, &k.1).map_or(0, |p| p.replicas);
        let share = |a: &Agg| a.spanning as f64 / a.objects.max(1) as f64;
        let vs_base = base.as_ref().filter(|b| **b != k.0).and_then(|b| {
            let bk = (b.clone(), k.1.clone(), k.2.clone());
            let ba = aggregate(&of(&bk));
            let bp = pages_of(b, &k.1);
            let saved_range = match (ba.extra_range, a.extra_range) {
                (Some((blo, bhi)), Some((lo, hi))) => {
                    Some((share(&ba) * blo - share(&a) * hi, share(&ba) * bhi - share(&a) * lo))
                }
                _ => None,
            };
            (ba.objects > 0 && bp > 0).then(|| VsBase {
                pages_pct: r1(100.0 * (pages as f64 - bp as f64) / bp as f64),
                ns_per_read_delta: r2(a.ns_read - ba.ns_read),
                ns_per_read_delta_within_noise: match (ba.ns_read_range, a.ns_read_range) {
                    (Some((blo, bhi)), Some((lo, hi))) => Some(lo <= bhi && blo <= hi),
                    _ => None,
                },
                spanning_ns_saved_per_read: match (ba.extra, a.extra) {
                    (Some(be), Some(e)) => Some(r2(share(&ba) * be - share(&a) * e)),
                    _ => None,
                },
                spanning_ns_saved_within_noise: saved_range.map(|(lo, hi)| lo <= 0.0 && 0.0 <= hi),
            })
        });
        rows.push(SummaryRow {
            label: k.0.clone(),
            compressor: k.1.clone(),
            mode: k.2.clone(),
            pages,
            copies,
            pages_per_copy: r1(pages as f64 / copies.max(1) as f64),
            objects: a.objects,
            spanning_pct: r1(100.0 * share(&a)),
            ns_per_read: r2(a.ns_read),
            ns_per_read_zswap: r2(a.ns_zswap),
            spanning_extra_ns: a.extra.map(r2),
            spanning_extra_within_noise: a.extra_within_noise(),
            spanning_copy_share_pct: a
                .extra
                .filter(|_| a.ns_read > 0.0)
                .map(|e| r2(100.0 * a.spanning as f64 * e / (a.objects as f64 * a.ns_read))),
            vs_base,
        });
    }
    Summary { base, rows, pool_spread: pool_spread(reads) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timing::Samples;

    fn s(min: f64, median: f64, max: f64, n: usize) -> Samples {
        Samples { min, median, max, n }
    }

    fn row(label: &str, mode: &str, spanning: bool, section: Samples) -> ReadRow {
        ReadRow {
            label: label.into(),
            compressor: "lz4".into(),
            mode: mode.into(),
            kind: Kind::Regular,
            spanning,
            objects: 100,
            reads: 10_000,
            ns_per_section: section,
            ns_per_decompress: s(1000.0, 1000.0, 1000.0, section.n),
            ns_per_read: s(
                section.min + 1000.0,
                section.median + 1000.0,
                section.max + 1000.0,
                section.n,
            ),
            ns_per_read_zswap: section,
            zswap_copies: false,
            instructions_per_section: None,
            instructions_per_read: None,
            instructions_scope: None,
            minor_faults_per_section: 0.0,
            mean_len: 1000.0,
        }
    }

    fn extra_noise(span: Samples, in_place: Samples) -> Option<bool> {
        let reads = [row("a", "copy", true, span), row("a", "copy", false, in_place)];
        summarize(&[], &reads).rows[0].spanning_extra_within_noise
    }

    #[test]
    fn an_extra_inside_the_spread_or_below_zero_is_noise() {
        // Three rounds: ranges apart, an extra; ranges that overlap, noise.
        assert_eq!(extra_noise(s(900.0, 950.0, 1000.0, 3), s(200.0, 210.0, 250.0, 3)), Some(false));
        assert_eq!(extra_noise(s(240.0, 260.0, 300.0, 3), s(200.0, 230.0, 250.0, 3)), Some(true));
        // One round: no spread to judge a positive extra by; a negative one is noise anyway.
        assert_eq!(extra_noise(s(950.0, 950.0, 950.0, 1), s(210.0, 210.0, 210.0, 1)), None);
        assert_eq!(extra_noise(s(190.0, 190.0, 190.0, 1), s(210.0, 210.0, 210.0, 1)), Some(true));
    }

    #[test]
    fn the_pools_spread_covers_the_same_code_in_every_pool_mode() {
        let one = |m: f64| s(m, m, m, 1);
        let reads = [
            row("a", "copy", false, one(200.0)),
            row("a", "map", false, one(260.0)),
            row("a", "contiguous", false, one(230.0)),
            // sg linearises: its in-place section is other code.
            row("a", "sg", false, one(400.0)),
            row("a", "copy", true, one(900.0)),
            // A configuration read in one mode has no spread between pools.
            row("b", "copy", false, one(210.0)),
        ];
        let spread = summarize(&[], &reads).pool_spread;
        assert_eq!(spread.len(), 1);
        assert_eq!(
            (spread[0].label.as_str(), spread[0].in_place_section_ns),
            ("a", [200.0, 260.0])
        );
        assert_eq!(spread[0].modes, ["copy", "map", "contiguous"]);
    }
}
