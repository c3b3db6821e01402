//! `zsmalloc kernel cost`: what the kernel's reads cost, grouped by what the project's placement
//! says about each object. A device is filled (one `O_DIRECT` write per page, each timed, its
//! `zs_malloc` length read from `mm_stat`) until its pool reaches the condition's size: warm,
//! a quarter of the last-level cache; cold, twice the cache (the corpus repeated as needed).
//! The same lengths go through the project's pool in the kernel's configuration, which must
//! hold the kernel's pages after the fill (the placement is then the kernel's): each page is
//! same-filled, huge, or a compressed object that spans two pages or lies in place. Then every
//! page is read with `O_DIRECT` in a seeded random order, several rounds; a page's time is its
//! median over the rounds. Statistics and the report: [`super::cost_report`].

use std::time::Instant;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use zsmalloc_core::{Handle, Pool, HDR};

use super::check::kernel_spec;
use super::corpus::CompressorArgs;
use super::corpus::CorpusArgs;
use super::cost_report::{self, Group, PageCost, ReadCostReport};
use super::device::{Device, DeviceSpec};
use super::host::{self, Host};
use super::replay::project_pool;
use crate::cost::hw::last_level_cache_bytes;
use crate::error::{LabError, LabResult};
use crate::flag_values;

#[derive(clap::Args, Debug, Clone)]
pub struct ReadCost {
    #[command(flatten)]
    pub corpus: CorpusArgs,
    #[command(flatten)]
    pub codec: CompressorArgs,
    /// Read rounds per condition, interleaved over the pages; a page's time is its median
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = flag_values::whole::<usize>(1, 100))]
    pub rounds: usize,
    /// Seeds the built-in corpus, the read order and the confidence intervals
    #[arg(long, value_name = "S", default_value_t = 1, value_parser = flag_values::any_whole::<u64>())]
    pub seed: u64,
    /// Conditions, comma-separated: warm, cold
    #[arg(long, value_name = "LIST", default_value = "warm,cold")]
    pub conditions: String,
}

/// One condition's target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Condition {
    Warm,
    Cold,
}

impl Condition {
    pub fn name(self) -> &'static str {
        match self {
            Condition::Warm => "warm",
            Condition::Cold => "cold",
        }
    }
}

/// Where the project places one page's object.
fn group_of(pool: &Pool, h: Option<&Handle<&Pool>>, len: u32, page: usize) -> LabResult<Group> {
    let Some(h) = h else { return Ok(Group::Same) };
    let table = pool.class_table();
    let class = &table.classes()[table.position(len as usize + HDR as usize)];
    if class.huge {
        return Ok(Group::Huge);
    }
    let index = h.location().map_err(|e| LabError::runtime(format!("location: {e}")))?.index;
    let offset = index as usize * class.size as usize % page;
    Ok(if offset + HDR as usize + len as usize > page { Group::Spanning } else { Group::InPlace })
}

/// Fills a device to `target` pool bytes, places its objects, times its reads.
fn measure(
    host: &Host,
    corpus: &[u8],
    a: &ReadCost,
    cond: Condition,
    target: u64,
) -> LabResult<(Vec<PageCost>, u64, String)> {
    let page = host.page_size;
    let corpus_pages = corpus.len() / page;
    // Enough logical pages for the target at a compression ratio of up to 32.
    let pages = (target / page as u64 * 32).max(corpus_pages as u64);
    let spec = DeviceSpec {
        compressor: a.codec.compressor.clone(),
        level: a.codec.level,
        pages,
        page_size: page,
    };
    let mut dev = Device::create(&spec)?;
    let spec = kernel_spec(page, super::check::KERNEL_DEFAULT_CHAIN, "classic")?;
    let any = project_pool(&spec)?;
    let pool = any.as_zsmalloc().expect("checked by project_pool");
    let mut handles: Vec<Option<Handle<&Pool>>> = Vec::new();
    let mut costs: Vec<PageCost> = Vec::new();
    let mut before = dev.mm_stat()?;
    let mut i = 0u64;
    while before.mem_used_total < target && i < pages {
        let data = &corpus[(i as usize % corpus_pages) * page..][..page];
        let t = Instant::now();
        dev.write_page(i, data)?;
        let write_ns = t.elapsed().as_nanos() as u64;
        let after = dev.mm_stat()?;
        let same = after.same_pages > before.same_pages;
        let len = (after.compr_data_size - before.compr_data_size) as u32;
        let h = if same {
            None
        } else {
            Some(pool.malloc(len as usize).map_err(|e| LabError::runtime(e.to_string()))?)
        };
        handles.push(h);
        costs.push(PageCost { len, group: Group::Same, write_ns, read_ns: Vec::new() });
        before = after;
        i += 1;
    }
    if before.pool_pages(page) != pool.total_pages() {
        return Err(LabError::runtime(format!(
            "{}: the project's pool holds {} pages, the kernel's {}: its placement is not the \
             kernel's (run `zsmalloc kernel check`)",
            cond.name(),
            pool.total_pages(),
            before.pool_pages(page)
        )));
    }
    for (c, h) in costs.iter_mut().zip(&handles) {
        c.group = group_of(pool, h.as_ref(), c.len, page)?;
    }
    let mut order: Vec<u64> = (0..i).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(a.seed ^ cond as u64);
    for _ in 0..a.rounds {
        order.shuffle(&mut rng);
        for &p in &order {
            let t = Instant::now();
            dev.read_page(p)?;
            costs[p as usize].read_ns.push(t.elapsed().as_nanos() as u64);
        }
    }
    let pool_bytes = before.mem_used_total;
    let compressor = dev.compressor().to_string();
    dev.remove()?;
    Ok((costs, pool_bytes, compressor))
}

/// Spanning objects per length band when the same lengths go through a pool of `policy`.
fn spanning_by_band(lens: &[u32], page: usize, policy: &str) -> LabResult<Vec<(u32, u64)>> {
    let any = project_pool(&kernel_spec(page, super::check::KERNEL_DEFAULT_CHAIN, policy)?)?;
    let pool = any.as_zsmalloc().expect("checked by project_pool");
    let mut handles = Vec::with_capacity(lens.len());
    for &len in lens {
        handles.push(pool.malloc(len as usize).map_err(|e| LabError::runtime(e.to_string()))?);
    }
    let mut out: Vec<(u32, u64)> = Vec::new();
    for (h, &len) in handles.iter().zip(lens) {
        if group_of(pool, Some(h), len, page)? == Group::Spanning {
            let band = cost_report::band_of(len);
            match out.iter_mut().find(|(b, _)| *b == band) {
                Some((_, n)) => *n += 1,
                None => out.push((band, 1)),
            }
        }
    }
    Ok(out)
}

pub fn run(a: &ReadCost) -> LabResult<ReadCostReport> {
    if !(1..=100).contains(&a.rounds) {
        return Err(LabError::usage(format!("--rounds {} is outside 1..=100", a.rounds)));
    }
    let mut conds = Vec::new();
    for c in a.conditions.split(',').map(str::trim) {
        conds.push(match c {
            "warm" => Condition::Warm,
            "cold" => Condition::Cold,
            _ => {
                return Err(LabError::usage(format!(
                    "invalid condition '{c}' (accepted: warm, cold)"
                )))
            }
        });
    }
    let host = Host::probe()?;
    let llc = last_level_cache_bytes();
    let (corpus, facts) = a.corpus.open(&host, a.seed)?;
    let mut report = ReadCostReport::new(&host, facts, llc, a.rounds, a.seed);
    for cond in conds {
        let Some(llc) = llc else {
            report.skip(cond.name(), "the last-level cache size is unknown (no sysfs cache info)");
            continue;
        };
        let target = match cond {
            Condition::Warm => (llc / 4).max(1 << 20),
            Condition::Cold => 2 * llc,
        };
        // The pool, the device's table and the corpus: refuse politely rather than swap.
        if let Err(e) = host::check_memory(target * 2, "the cold condition") {
            report.skip(cond.name(), &e.to_string());
            continue;
        }
        let (costs, pool_bytes, compressor) = measure(&host, &corpus, a, cond, target)?;
        report.compressor = compressor;
        let lens: Vec<u32> =
            costs.iter().filter(|c| c.group != Group::Same).map(|c| c.len).collect();
        let heuristic = spanning_by_band(&lens, host.page_size, "heuristic")?;
        report.add(cond.name(), pool_bytes, &costs, &heuristic, a.seed);
    }
    Ok(report)
}
