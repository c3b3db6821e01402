//! The search for one workload: the chain sweep and the references in one parallel batch, the
//! exact frontier over chains, a selection of its points run again (for their peak pages, and
//! to check that each measures exactly what the sums predicted), the report.

use super::boundaries::{improve, BoundaryOutcome};
use super::evaluate::{evaluate_all, with_table, Evaluation};
use super::frontier::{frontier, FrontierPoint};
use super::layout::{Layout, MAX_CHAIN};
use super::references::{PointKind, References};
use super::report::{ChainChange, LayoutDesc, Objective, OptimizeReport, PointReport};
use super::sweep::{option_matrix, predict, sweep_specs};
use crate::config::ConfigSpec;
use crate::error::{LabError, LabResult};
use crate::progress::ProgressSink;
use crate::workload::Workload;
use zsmalloc_core::{BackendKind, PolicyRef, PoolConfig};

/// What the search is asked.
#[derive(Debug, Clone)]
pub struct SearchOptions {
    /// Page size, read mode, backing; chain size, class delta and merging of the references
    /// and of the layout; an explicit table, if given, is the layout (and a third reference).
    pub base: PoolConfig,
    pub objective: Objective,
    /// Frontier points to report (run again); 0 = all of them.
    pub points: usize,
    /// Runs at a time.
    pub jobs: usize,
    /// Also search the class sizes (`--boundaries`, a heuristic: [`super::boundaries`]).
    pub boundaries: bool,
    /// Frontier points (numbered from 1) reported whatever `points` selects, e.g. the one to
    /// export.
    pub also_report: Vec<usize>,
}

impl SearchOptions {
    pub fn new(base: PoolConfig) -> Self {
        SearchOptions {
            base,
            objective: Objective::Spanning,
            points: 12,
            jobs: 1,
            boundaries: false,
            also_report: Vec::new(),
        }
    }

    /// The settings the search cannot honour are refused: classes of other backends, and a
    /// memory limit (a full pool refuses stores whichever class fills it, so the classes would
    /// no longer be independent).
    pub fn check(&self) -> LabResult<()> {
        if self.base.backend != BackendKind::Zsmalloc {
            return Err(LabError::usage(format!(
                "optimize searches zsmalloc's class tables; the {} backend has none",
                self.base.backend.name()
            )));
        }
        if self.base.mem_limit_pages != 0 {
            return Err(LabError::usage(
                "optimize runs without a memory limit: a full pool refuses stores whichever \
                 class filled it, so the classes would not be independent",
            ));
        }
        self.base.validate().map_err(LabError::from)
    }

    /// The references: mainline classic and the RFC heuristic on the base settings, and the
    /// given table if there is one.
    pub fn references(&self) -> References<ConfigSpec> {
        let computed = PoolConfig { class_table: None, ..self.base.clone() };
        let heuristic = PoolConfig {
            chain_policy: PolicyRef::new(zsmalloc_core::chain_policy::Heuristic),
            ..computed.clone()
        };
        let given = self.base.class_table.is_some().then(|| self.base.clone());
        References { classic: computed, heuristic, given }
            .map(|kind, config| ConfigSpec { label: kind.label(), config: config.clone() })
    }

    /// The layout searched: the given table's, else classic's on the base settings.
    pub fn layout(&self) -> LabResult<(Layout, String)> {
        match &self.base.class_table {
            Some(t) => Ok((Layout::of_table(t), "the given table's sizes".into())),
            None => {
                let cfg = PoolConfig {
                    chain_policy: PolicyRef::new(zsmalloc_core::chain_policy::Classic),
                    ..self.base.clone()
                };
                let layout = Layout::of_config(&cfg)?;
                let delta = cfg.effective_delta();
                let merge = if cfg.merge_classes { "merged" } else { "unmerged" };
                let source =
                    format!("classic's classes: chain {}, delta {delta}, {merge}", cfg.chain_size);
                Ok((layout, source))
            }
        }
    }
}

/// Indices of the frontier points to report: the ends, the cheapest within each reference's
/// pages, and evenly spaced others up to `n` (all when `n` is 0 or covers them).
pub fn select_points(points: &[FrontierPoint], n: usize, page_caps: &[u64]) -> Vec<usize> {
    let len = points.len();
    if len == 0 {
        return Vec::new();
    }
    if n == 0 || n >= len {
        return (0..len).collect();
    }
    let mut chosen = vec![0, len - 1];
    chosen.extend(page_caps.iter().filter_map(|&cap| cheapest_within(points, cap)));
    chosen.sort_unstable();
    chosen.dedup();
    // The others split the widest gap left, one at a time.
    while chosen.len() < n {
        let Some(w) =
            (0..chosen.len() - 1).max_by_key(|&k| (chosen[k + 1] - chosen[k], usize::MAX - k))
        else {
            break;
        };
        if chosen[w + 1] - chosen[w] < 2 {
            break;
        }
        chosen.insert(w + 1, (chosen[w] + chosen[w + 1]) / 2);
    }
    chosen
}

/// The cheapest point with no more than `cap` pages (points are sorted by pages, spanning
/// reads decreasing).
pub fn cheapest_within(points: &[FrontierPoint], cap: u64) -> Option<usize> {
    points.iter().rposition(|p| p.pages <= cap)
}

/// Runs the search.
pub fn search(
    workload: &Workload,
    opts: &SearchOptions,
    sink: &ProgressSink,
) -> LabResult<OptimizeReport> {
    opts.check()?;
    workload.check(opts.base.page_size as usize)?;
    let (mut layout, mut source) = opts.layout()?;
    let refs = opts.references();
    let mut specs = sweep_specs(&layout, &opts.base)?;
    specs.extend(refs.iter().map(|(_, r)| r.clone()));
    let mut first = evaluate_all(workload, &specs, opts.jobs, sink, "optimize sweep")?;
    let references = refs
        .matched(first.split_off(MAX_CHAIN as usize))
        .ok_or_else(|| LabError::runtime("the references did not all run"))?;
    let mut options = option_matrix(&layout, &first)?;
    let mut boundary = BoundaryOutcome::default();
    if opts.boundaries {
        let cap = references.classic.pages;
        (layout, options, boundary) =
            improve(workload, layout, options, cap, &opts.base, opts.jobs, sink)?;
        source += &format!(", boundaries searched: {} moves", boundary.moves.len());
    }
    let all = frontier(&options);
    // A reference of the layout's sizes is a table of the search: the sums must predict it.
    for (_, r) in references.iter() {
        check_prediction(&layout, &options, r)?;
    }
    let caps: Vec<u64> = references.iter().map(|(_, r)| r.pages).collect();
    let mut chosen = select_points(&all, opts.points, &caps);
    for &p in &opts.also_report {
        if p == 0 || p > all.len() {
            return Err(LabError::usage(format!(
                "--point {p}: the frontier has points 1..={}",
                all.len()
            )));
        }
        chosen.push(p - 1);
    }
    chosen.sort_unstable();
    chosen.dedup();
    let point_specs = chosen
        .iter()
        .map(|&i| {
            let table = layout.table(&all[i].chains)?;
            Ok(ConfigSpec {
                label: format!("point {}", i + 1),
                config: with_table(&opts.base, table),
            })
        })
        .collect::<LabResult<Vec<_>>>()?;
    let runs = evaluate_all(workload, &point_specs, opts.jobs, sink, "optimize points")?;
    let mut points = Vec::with_capacity(runs.len());
    for (&i, run) in chosen.iter().zip(&runs) {
        let p = &all[i];
        if (run.pages, run.reads_spanning) != (p.pages, p.spanning) {
            return Err(LabError::runtime(format!(
                "point {}: the run measured {} pages and {} spanning reads, the sums {} and {}; \
                 the classes of this workload are not independent",
                i + 1,
                run.pages,
                run.reads_spanning,
                p.pages,
                p.spanning
            )));
        }
        let kind = PointKind::Frontier(i + 1);
        points.push(point_report(run, kind, &layout, opts.objective, Some(&references)));
    }
    let reference_reports =
        references.map(|kind, r| point_report(r, kind, &layout, opts.objective, None));
    let default_point = cheapest_within(&all, references.classic.pages).map(|i| i + 1);
    Ok(OptimizeReport {
        workload: workload.desc(),
        page_size: layout.page_size(),
        objective: opts.objective,
        layout: LayoutDesc {
            source,
            classes: layout.sizes().len(),
            searched: layout.searched(),
            huge_class_size: layout.huge_class_size(),
            multi_page_size: layout.multi_page_size(),
            huge_class_size_multi: layout.huge_class_size_of_band(1),
            boundary_moves: boundary.moves,
        },
        reads: references.classic.reads,
        frontier_points: all.len(),
        runs: specs.len() + boundary.runs + point_specs.len(),
        references: reference_reports,
        points,
        default_point,
        export: None,
        test: None,
    })
}

/// A reference whose table has the layout's sizes and chains among the choices measures what
/// the sums predict; any other reference is simply placed on the axes.
fn check_prediction(
    layout: &Layout,
    options: &[Vec<super::frontier::ClassOption>],
    r: &Evaluation,
) -> LabResult<()> {
    let sizes: Vec<u32> = r.table.classes().iter().map(|c| c.size).collect();
    if sizes != layout.sizes() {
        return Ok(());
    }
    let chains: Vec<u32> = r.table.classes().iter().map(|c| c.chain).collect();
    match predict(options, &chains) {
        Some(sums) if sums != (r.pages, r.reads_spanning) => Err(LabError::runtime(format!(
            "{}: the run measured {} pages and {} spanning reads, the sums {} and {}; the classes \
             of this workload are not independent",
            r.label, r.pages, r.reads_spanning, sums.0, sums.1
        ))),
        _ => Ok(()),
    }
}

/// A point (or reference) as reported; a point is compared with the references, a reference
/// with none.
fn point_report(
    e: &Evaluation,
    kind: PointKind,
    layout: &Layout,
    objective: Objective,
    references: Option<&References<Evaluation>>,
) -> PointReport {
    let classes = e.table.classes();
    let same_sizes = classes.iter().map(|c| c.size).eq(layout.sizes().iter().copied());
    let changed = same_sizes.then(|| {
        classes
            .iter()
            .map(|c| (c.size, c.chain))
            .zip(layout.base_chains())
            .filter(|&((_, chain), &base)| chain != base)
            .map(|((size, chain), &base_chain)| ChainChange { size, chain, base_chain })
            .collect()
    });
    PointReport {
        kind,
        table: e.table.clone(),
        pages: e.pages,
        pages_peak: e.pages_peak,
        reads_spanning: e.reads_spanning,
        read_cost: objective.read_cost(e.reads_spanning),
        dominates_references: references.is_some_and(|r| r.dominated_by(e)),
        changed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(pairs: &[(u64, u64)]) -> Vec<FrontierPoint> {
        pairs
            .iter()
            .map(|&(pages, spanning)| FrontierPoint { pages, spanning, chains: vec![] })
            .collect()
    }

    #[test]
    fn selection_keeps_the_ends_and_the_reference_caps() {
        let f = pts(&(0..100).map(|i| (100 + i, 1000 - i)).collect::<Vec<_>>());
        let s = select_points(&f, 6, &[150]);
        assert!(s.contains(&0) && s.contains(&99) && s.contains(&50), "{s:?}");
        assert!(s.len() == 6 && s.windows(2).all(|w| w[0] < w[1]), "{s:?}");
        assert_eq!(select_points(&f, 5, &[]), [0, 24, 49, 74, 99]);
        assert_eq!(select_points(&f, 0, &[]).len(), 100);
        assert_eq!(cheapest_within(&f, 99), None);
        assert_eq!(cheapest_within(&f, 1000), Some(99));
    }
}
