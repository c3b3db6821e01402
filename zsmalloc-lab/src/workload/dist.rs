//! Sizes from a distribution: normal with mean/sd (mean 694, sd 474 as measured in the thread
//! "zsmalloc limitations and related topics") clipped to `min_len..=page` (`min_len`: the
//! shortest liblz4 output of a 4K page that is not same-filled, [`DEFAULT_MIN_LEN`]); a share of
//! same-filled pages (11% in that thread) kept outside the pool as modern zram does, or stored at
//! 28 bytes as in that thread; then a churn phase (a random page is freed and a new one stored in its
//! place), an optional shrink (a share of the pages freed), optional compaction, and a read of
//! every live object.

pub use crate::result::DistFacts;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};
use serde_json::json;

use super::{Extra, SameFilled, WorkloadKind};
use crate::driver::{Driver, RunPhase};
use crate::error::{LabError, LabResult};
use crate::flag_values;
use crate::memory::{Limit, Plan};

/// The parameters, as `zsmalloc run dist` takes them.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct Dist {
    /// Pages (objects and same-filled pages) written in the fill phase
    #[arg(long, value_name = "N", default_value_t = 100_000, value_parser = flag_values::whole::<usize>(1, MAX_OBJECTS as u64))]
    pub objects: usize,
    /// Mean object length in bytes
    #[arg(long, value_name = "BYTES", default_value_t = 694.0, value_parser = flag_values::real(1.0, MAX_PAGE))]
    pub mean: f64,
    /// Standard deviation of the object lengths in bytes
    #[arg(long, value_name = "BYTES", default_value_t = 474.0, value_parser = flag_values::real(0.0, MAX_PAGE))]
    pub sd: f64,
    /// Shortest object: smaller draws are stored at this length and counted (the default is
    /// the shortest liblz4 output of a 4K page that is not same-filled)
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MIN_LEN, value_parser = flag_values::whole::<usize>(1, u64::from(zsmalloc_core::band::MAX_OBJECT)))]
    pub min_len: usize,
    /// Share of same-filled pages, 0..=1
    #[arg(long, value_name = "SHARE", default_value_t = 0.11, value_parser = flag_values::share)]
    pub same_share: f64,
    /// skip (kept outside the pool, as modern zram does) or store (at --same-size bytes, as
    /// in 2012)
    #[arg(long, value_name = "MODE", value_enum, hide_possible_values = true, default_value_t = SameFilled::Skip)]
    pub same_filled: SameFilled,
    /// Bytes a same-filled page takes in the pool with `--same-filled store` (28 in the 2012
    /// measurement)
    #[arg(long, value_name = "BYTES", default_value_t = 28, value_parser = flag_values::whole::<usize>(1, u64::from(zsmalloc_core::band::MAX_OBJECT)))]
    pub same_size: usize,
    /// Random free + re-store steps after the fill phase [default: --objects]
    #[arg(long, value_name = "N", value_parser = flag_values::whole::<usize>(0, MAX_OBJECTS as u64 * 10))]
    pub churn: Option<usize>,
    /// Share of the pages freed at random after the churn phase (the live set shrinks, as
    /// when swapped-out pages come back in), 0..=1
    #[arg(long, value_name = "SHARE", default_value_t = 0.0, value_parser = flag_values::share)]
    pub shrink: f64,
    /// Compact once after the churn (and shrink) phase
    #[arg(long)]
    pub compact: bool,
    /// Compact every N churn steps
    #[arg(long, value_name = "N", value_parser = flag_values::whole::<usize>(1, u64::MAX))]
    pub compact_every: Option<usize>,
    /// Seeds sizes and contents (`--seed`).
    #[arg(skip = 1u64)]
    pub seed: u64,
}

impl Default for Dist {
    fn default() -> Self {
        super::defaults()
    }
}

const MAX_OBJECTS: usize = 200_000_000;
/// The largest page size, the bound of a length before the page size is known.
const MAX_PAGE: f64 = zsmalloc_core::band::MAX_OBJECT as f64;

/// The default shortest compressed page: the shortest liblz4 output (`LZ4_compress_default`,
/// the compressor of `pages` and the cost study) of a 4K page that is not same-filled — a zero
/// page with one other byte, 26 bytes (a literal, one long match, the five literals lz4 ends
/// with); the synthetic corpus's shortest is 39 ([`crate::workload::pages::shortest_lz4`]).
pub const DEFAULT_MIN_LEN: usize = 26;

enum Page {
    Same,
    Object(usize),
}

impl Dist {
    fn churn_steps(&self) -> usize {
        if self.objects == 0 {
            0
        } else {
            self.churn.unwrap_or(self.objects)
        }
    }

    fn put(&self, d: &mut Driver<'_>, slot: usize, p: Page) -> LabResult<()> {
        match (p, self.same_filled) {
            (Page::Same, SameFilled::Skip) => d.keep_same(slot),
            (Page::Same, SameFilled::Store) => {
                d.note_same_stored();
                d.store(slot, self.same_size).map(|_| ())
            }
            (Page::Object(len), _) => d.store(slot, len).map(|_| ()),
        }
    }
}

impl WorkloadKind for Dist {
    fn params(&self) -> (serde_json::Value, String) {
        let churn = self.churn_steps();
        let params = json!({
            "objects": self.objects, "mean": self.mean, "sd": self.sd, "min_len": self.min_len,
            "same_share": self.same_share, "same_filled": self.same_filled.name(),
            "same_size": self.same_size, "churn": churn, "shrink": self.shrink,
            "compact": self.compact,
            "compact_every": self.compact_every, "seed": self.seed,
        });
        let mut s = format!(
            "dist objects={} mean={} sd={} min-len={} same-share={} same-filled={}",
            self.objects,
            self.mean,
            self.sd,
            self.min_len,
            self.same_share,
            self.same_filled.name()
        );
        if self.same_filled == SameFilled::Store {
            s += &format!(" same-size={}", self.same_size);
        }
        s += &format!(" churn={churn}");
        if self.shrink > 0.0 {
            s += &format!(" shrink={}", self.shrink);
        }
        if self.compact {
            s += " compact";
        }
        if let Some(k) = self.compact_every {
            s += &format!(" compact-every={k}");
        }
        s += &format!(" seed={}", self.seed);
        (params, s)
    }

    fn check(&self, page: usize) -> LabResult<()> {
        let bad = |m: String| Err(LabError::usage(format!("dist: {m}")));
        // Lengths in bytes of a compressed page: the mean is one, the spread at most a page.
        let p = page as f64;
        if !self.mean.is_finite() || !(1.0..=p).contains(&self.mean) {
            return bad(format!("--mean {} is outside 1..={page} (bytes)", self.mean));
        }
        if !self.sd.is_finite() || !(0.0..=p).contains(&self.sd) {
            return bad(format!("--sd {} is outside 0..={page} (bytes)", self.sd));
        }
        if !(1..=MAX_OBJECTS).contains(&self.objects) {
            return bad(format!("--objects {} is outside 1..={MAX_OBJECTS}", self.objects));
        }
        let max_churn = MAX_OBJECTS.saturating_mul(10);
        if self.churn.is_some_and(|c| c > max_churn) {
            return bad(format!("--churn {} is more than {max_churn}", self.churn_steps()));
        }
        if !(0.0..=1.0).contains(&self.shrink) {
            return bad(format!("--shrink {} is outside 0..=1", self.shrink));
        }
        if self.min_len == 0 || self.min_len > page {
            return bad(format!("--min-len {} is outside 1..={page}", self.min_len));
        }
        if !(0.0..=1.0).contains(&self.same_share) {
            return bad(format!("--same-share {} is outside 0..=1", self.same_share));
        }
        if self.same_size == 0 || self.same_size > page {
            return bad(format!("--same-size {} is outside 1..={page}", self.same_size));
        }
        if self.compact_every == Some(0) {
            return bad("--compact-every must be at least 1".into());
        }
        Ok(())
    }

    fn memory_plan(&self, page: usize, payload: bool, _limit: &Limit) -> LabResult<Plan> {
        // Live pages never outnumber the fill phase's; a length is at most a page.
        let len = (self.mean + self.sd).clamp(self.min_len as f64, page as f64) as u64;
        let objects = self.objects as u64;
        let from = format!("--objects {}", self.objects);
        Ok(Plan::new(super::pool_plan_bytes(objects, objects.saturating_mul(len), payload), from))
    }

    fn estimated_ops(&self) -> u64 {
        (2 * self.objects + 2 * self.churn_steps()) as u64
            + (self.shrink * self.objects as f64) as u64
    }

    fn seed(&self) -> u64 {
        self.seed
    }

    fn set_seed(&mut self, seed: u64) {
        self.seed = seed;
    }

    fn run(&self, d: &mut Driver<'_>, _timing: bool) -> LabResult<Extra> {
        let page = d.page_size();
        let normal = Normal::new(self.mean, self.sd)
            .map_err(|e| LabError::usage(format!("dist: bad distribution: {e}")))?;
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let mut facts = DistFacts { min_len: self.min_len, ..Default::default() };
        let (lo, hi) = (self.min_len as f64, page as f64);
        let mut draw = |rng: &mut ChaCha8Rng| {
            if self.same_share > 0.0 && rng.gen_bool(self.same_share) {
                return Page::Same;
            }
            facts.draws += 1;
            let x = normal.sample(rng).round();
            if x < lo {
                facts.clipped_min += 1;
            } else if x > hi {
                facts.clipped_page += 1;
            }
            Page::Object(x.clamp(lo, hi) as usize)
        };
        d.phase(RunPhase::Fill)?;
        for _ in 0..self.objects {
            let slot = d.new_slot()?;
            let p = draw(&mut rng);
            self.put(d, slot, p)?;
        }
        d.phase(RunPhase::Churn)?;
        for step in 0..self.churn_steps() {
            let slot = rng.gen_range(0..self.objects);
            d.free(slot)?;
            let p = draw(&mut rng);
            self.put(d, slot, p)?;
            if self.compact_every.is_some_and(|k| (step + 1) % k == 0) {
                d.compact()?;
            }
        }
        if self.shrink > 0.0 {
            d.phase(RunPhase::Shrink)?;
            for slot in 0..self.objects {
                if rng.gen_bool(self.shrink) {
                    d.free(slot)?;
                }
            }
        }
        if self.compact {
            d.phase(RunPhase::Compact)?;
            d.compact()?;
        }
        d.phase(RunPhase::Read)?;
        for slot in 0..d.slots() {
            if d.holds(slot) {
                d.read(slot, None)?;
            }
        }
        Ok(Extra { dist: Some(facts), ..Extra::default() })
    }
}
