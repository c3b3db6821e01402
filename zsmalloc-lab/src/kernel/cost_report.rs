//! The figures of `zsmalloc kernel cost`: per condition and length band, the read times of
//! spanning and in-place objects (count, median, min, max of the pages' medians), the spanning
//! extra (difference of the medians) with a seeded bootstrap 95% confidence interval, and what
//! the heuristic's fewer spanning objects would save on this kernel.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::corpus::CorpusFacts;
use super::host::Host;
use crate::timing::Samples;

/// What the project's placement says about a page's object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Group {
    Same,
    Huge,
    Spanning,
    InPlace,
}

/// One page's measurements.
#[derive(Debug, Clone)]
pub struct PageCost {
    pub len: u32,
    pub group: Group,
    pub write_ns: u64,
    /// One per round.
    pub read_ns: Vec<u64>,
}

/// Width of a length band in bytes.
pub const BAND: u32 = 512;
/// Bootstrap resamples for the confidence interval.
const RESAMPLES: usize = 1000;

/// The first length of `len`'s band.
pub fn band_of(len: u32) -> u32 {
    len / BAND * BAND
}

/// The median of `v` ([`Samples`]' definition); NaN when `v` is empty.
fn median(v: &[f64]) -> f64 {
    Samples::of(v).map_or(f64::NAN, |s| s.median)
}

/// Per-page times (ns) as `{count, median_ns, min_ns, max_ns}`: the report's names for a
/// [`Samples`].
fn samples_ns<S: serde::Serializer>(v: &Option<Samples>, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeStruct;
    let Some(v) = v else { return s.serialize_none() };
    let mut f = s.serialize_struct("Samples", 4)?;
    f.serialize_field("count", &v.n)?;
    f.serialize_field("median_ns", &v.median)?;
    f.serialize_field("min_ns", &v.min)?;
    f.serialize_field("max_ns", &v.max)?;
    f.end()
}

/// The spanning extra: median(spanning) - median(in place), with its 95% interval.
#[derive(Debug, Clone, Serialize)]
pub struct Extra {
    pub median_ns: f64,
    pub ci_low_ns: f64,
    pub ci_high_ns: f64,
    /// As a share of the in-place median.
    pub share: f64,
}

fn bootstrap(span: &[f64], in_place: &[f64], seed: u64) -> (f64, f64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut diffs = Vec::with_capacity(RESAMPLES);
    let (mut a, mut b) = (vec![0.0; span.len()], vec![0.0; in_place.len()]);
    for _ in 0..RESAMPLES {
        a.iter_mut().for_each(|x| *x = span[rng.gen_range(0..span.len())]);
        b.iter_mut().for_each(|x| *x = in_place[rng.gen_range(0..in_place.len())]);
        diffs.push(median(&a) - median(&b));
    }
    diffs.sort_by(f64::total_cmp);
    (diffs[RESAMPLES * 25 / 1000], diffs[RESAMPLES * 975 / 1000])
}

/// One row: a condition and a band (or the same-filled / huge pages).
#[derive(Debug, Clone, Serialize)]
pub struct BandRow {
    pub condition: String,
    /// `512-1023`, `huge` or `same-filled`.
    pub band: String,
    #[serde(serialize_with = "samples_ns")]
    pub spanning: Option<Samples>,
    #[serde(serialize_with = "samples_ns")]
    pub in_place: Option<Samples>,
    pub spanning_extra: Option<Extra>,
    /// Median write time of the same pages (the fill's one write each).
    pub spanning_write_median_ns: Option<f64>,
    pub in_place_write_median_ns: Option<f64>,
    /// Spanning objects of the band under the heuristic chain policy (same lengths).
    pub heuristic_spanning: u64,
}

/// One condition.
#[derive(Debug, Clone, Serialize)]
pub struct ConditionRow {
    pub condition: String,
    pub ran: bool,
    /// Why it did not run.
    pub not_run: Option<String>,
    pub pool_bytes: u64,
    pub pages: u64,
    /// Sum of the pages' median read times: one read of every page.
    pub read_time_ns: f64,
    pub spanning_objects: u64,
    pub heuristic_spanning_objects: u64,
    /// (spanning - heuristic spanning) x the band's measured extra, summed over bands.
    pub heuristic_saving_ns: f64,
    pub heuristic_saving_share: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ReadCostReport {
    pub kernel_release: String,
    pub page_size: usize,
    pub compressor: String,
    pub corpus: CorpusFacts,
    pub llc_bytes: Option<u64>,
    pub rounds: usize,
    pub seed: u64,
    pub conditions: Vec<ConditionRow>,
    pub rows: Vec<BandRow>,
}

impl ReadCostReport {
    pub fn new(
        host: &Host,
        corpus: CorpusFacts,
        llc: Option<u64>,
        rounds: usize,
        seed: u64,
    ) -> Self {
        ReadCostReport {
            kernel_release: host.release.clone(),
            page_size: host.page_size,
            compressor: String::new(),
            corpus,
            llc_bytes: llc,
            rounds,
            seed,
            conditions: Vec::new(),
            rows: Vec::new(),
        }
    }

    pub fn skip(&mut self, condition: &str, why: &str) {
        self.conditions.push(ConditionRow {
            condition: condition.into(),
            ran: false,
            not_run: Some(why.into()),
            pool_bytes: 0,
            pages: 0,
            read_time_ns: 0.0,
            spanning_objects: 0,
            heuristic_spanning_objects: 0,
            heuristic_saving_ns: 0.0,
            heuristic_saving_share: 0.0,
        });
    }

    /// Adds one condition's pages; `heuristic`: spanning objects per band under the heuristic.
    pub fn add(
        &mut self,
        condition: &str,
        pool_bytes: u64,
        pages: &[PageCost],
        heuristic: &[(u32, u64)],
        seed: u64,
    ) {
        let med = |p: &PageCost| {
            let v: Vec<f64> = p.read_ns.iter().map(|&n| n as f64).collect();
            median(&v)
        };
        let read_time_ns: f64 = pages.iter().map(med).sum();
        let row = |band: String, span: Vec<&PageCost>, inp: Vec<&PageCost>, heur: u64| {
            let s: Vec<f64> = span.iter().map(|p| med(p)).collect();
            let i: Vec<f64> = inp.iter().map(|p| med(p)).collect();
            let w = |v: &[&PageCost]| {
                let w: Vec<f64> = v.iter().map(|p| p.write_ns as f64).collect();
                Samples::of(&w).map(|w| w.median)
            };
            let (sf, inf) = (Samples::of(&s), Samples::of(&i));
            let extra = sf.as_ref().zip(inf.as_ref()).map(|(a, b)| {
                let (lo, hi) = bootstrap(&s, &i, seed);
                let m = a.median - b.median;
                Extra { median_ns: m, ci_low_ns: lo, ci_high_ns: hi, share: m / b.median }
            });
            BandRow {
                condition: condition.into(),
                band,
                spanning: sf,
                in_place: inf,
                spanning_extra: extra,
                spanning_write_median_ns: w(&span),
                in_place_write_median_ns: w(&inp),
                heuristic_spanning: heur,
            }
        };
        let mut rows = Vec::new();
        let mut bands: Vec<u32> = pages
            .iter()
            .filter(|p| matches!(p.group, Group::Spanning | Group::InPlace))
            .map(|p| band_of(p.len))
            .collect();
        bands.sort_unstable();
        bands.dedup();
        for b in bands {
            let of = |g: Group| -> Vec<&PageCost> {
                pages.iter().filter(|p| p.group == g && band_of(p.len) == b).collect()
            };
            let heur = heuristic.iter().find(|(hb, _)| *hb == b).map_or(0, |h| h.1);
            rows.push(row(
                format!("{b}-{}", b + BAND - 1),
                of(Group::Spanning),
                of(Group::InPlace),
                heur,
            ));
        }
        for (g, name) in [(Group::Huge, "huge"), (Group::Same, "same-filled")] {
            let v: Vec<&PageCost> = pages.iter().filter(|p| p.group == g).collect();
            if !v.is_empty() {
                rows.push(row(name.into(), Vec::new(), v, 0));
            }
        }
        let spanning = pages.iter().filter(|p| p.group == Group::Spanning).count() as u64;
        let heur_total: u64 = heuristic.iter().map(|h| h.1).sum();
        let saving: f64 = rows
            .iter()
            .filter_map(|r| {
                let e = r.spanning_extra.as_ref()?;
                let n = r.spanning.as_ref()?.n as f64 - r.heuristic_spanning as f64;
                Some(n * e.median_ns)
            })
            .sum();
        self.conditions.push(ConditionRow {
            condition: condition.into(),
            ran: true,
            not_run: None,
            pool_bytes,
            pages: pages.len() as u64,
            read_time_ns,
            spanning_objects: spanning,
            heuristic_spanning_objects: heur_total,
            heuristic_saving_ns: saving,
            heuristic_saving_share: if read_time_ns > 0.0 { saving / read_time_ns } else { 0.0 },
        });
        self.rows.extend(rows);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_intervals() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        let span: Vec<f64> = (0..200).map(|i| 1100.0 + (i % 7) as f64).collect();
        let inp: Vec<f64> = (0..200).map(|i| 1000.0 + (i % 5) as f64).collect();
        let (lo, hi) = bootstrap(&span, &inp, 1);
        assert!(lo <= 103.0 && hi >= 101.0 && lo > 90.0 && hi < 110.0, "{lo} {hi}");
        assert_eq!(band_of(511), 0);
        assert_eq!(band_of(512), 512);
    }

    #[test]
    fn figures_keep_their_json_names() {
        let row = BandRow {
            condition: "c".into(),
            band: "0-511".into(),
            spanning: Samples::of(&[3.0, 1.0, 2.0]),
            in_place: None,
            spanning_extra: None,
            spanning_write_median_ns: None,
            in_place_write_median_ns: None,
            heuristic_spanning: 0,
        };
        let v = serde_json::to_value(&row).unwrap();
        assert_eq!(
            v["spanning"],
            serde_json::json!({"count": 3, "median_ns": 2.0, "min_ns": 1.0, "max_ns": 3.0})
        );
        assert!(v["in_place"].is_null());
    }
}
