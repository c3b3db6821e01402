//! The project's side of `check`: the kernel's steps replayed through the project's pool in
//! the kernel's configuration, the pool's pages compared with `mem_used_total / PAGE_SIZE`
//! after every step. Same-filled pages store nothing (as in zram), a huge page is an object of
//! `PAGE_SIZE` bytes, a discard frees the page's object, and compaction compacts — also where
//! the kernel's shrinker compacted on its own.

use serde::Serialize;
use zsmalloc_core::{AnyPool, Handle, Pool};

use super::steps::{DevicePhase, KernelSteps, Op, Stored};
use crate::config::ConfigSpec;
use crate::error::{LabError, LabResult};

/// One phase's tally.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseTally {
    pub phase: DevicePhase,
    pub steps: u64,
    /// Steps after which both pools held the same pages.
    pub agreeing: u64,
    /// Pool pages at the end of the phase.
    pub kernel_pages: u64,
    pub project_pages: u64,
    /// The kernel's `huge_pages` and `same_pages` at the end of the phase.
    pub huge_pages: u64,
    pub same_pages: u64,
    /// Pages freed by compaction so far: the kernel's `pages_compacted`, the project's count.
    pub pages_compacted: u64,
    pub project_pages_compacted: u64,
}

/// The first step after which the pools differ.
#[derive(Debug, Clone, Serialize)]
pub struct Disagreement {
    pub phase: DevicePhase,
    /// 1-based, within the phase.
    pub step: u64,
    /// The page written or discarded (none for the compaction).
    pub page: Option<u32>,
    /// The object's length (written or freed; none for the compaction).
    pub length: Option<u32>,
    pub kernel_pages: u64,
    pub project_pages: u64,
}

/// The whole comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Replay {
    pub phases: Vec<PhaseTally>,
    pub first_disagreement: Option<Disagreement>,
    /// Steps around which the kernel's shrinker compacted (the project compacted there too).
    pub shrinker_compactions: u64,
}

impl Replay {
    pub fn agree(&self) -> bool {
        self.first_disagreement.is_none()
    }
}

/// The project's zsmalloc pool for `spec` (the kernel runs zsmalloc: other backends refused).
pub fn project_pool(spec: &ConfigSpec) -> LabResult<AnyPool> {
    let pool = AnyPool::with_name("kernel", spec.config.clone())?;
    if pool.as_zsmalloc().is_none() {
        return Err(LabError::usage(format!(
            "the kernel's zram runs zsmalloc; --backend {} cannot be checked against it",
            spec.config.backend.name()
        )));
    }
    Ok(pool)
}

/// Replays `k` through a pool of `spec` (whose page size must be the kernel's).
pub fn replay(k: &KernelSteps, spec: &ConfigSpec) -> LabResult<Replay> {
    let page = k.host.page_size;
    if spec.config.page_size as usize != page {
        return Err(LabError::usage(format!(
            "the kernel's page is {page} bytes: --page-size {} cannot be checked against it",
            spec.config.page_size
        )));
    }
    let any = project_pool(spec)?;
    let pool: &Pool = any.as_zsmalloc().expect("checked by project_pool");
    let pages = k.phase(DevicePhase::Fill).count();
    let mut objects: Vec<Option<Handle<&Pool>>> = (0..pages).map(|_| None).collect();
    let mut lens = vec![0u32; pages];
    let mut phases: Vec<PhaseTally> = Vec::new();
    let mut first = None;
    let mut shrinker_compactions = 0;
    let mut compacted = 0u64;
    for step in &k.steps {
        let (page_no, length) = match step.op {
            Op::Store { page: p, stored, len } => {
                if stored != Stored::Same {
                    let h = pool.malloc(len as usize).map_err(|e| {
                        LabError::runtime(format!("project pool: store of {len} bytes: {e}"))
                    })?;
                    objects[p as usize] = Some(h);
                }
                lens[p as usize] = len;
                (Some(p), Some(len))
            }
            Op::Free { page: p } => {
                if let Some(h) = objects[p as usize].take() {
                    h.free().map_err(|e| LabError::runtime(format!("project pool: free: {e}")))?;
                }
                (Some(p), Some(lens[p as usize]))
            }
            Op::Compact => {
                compacted += pool.compact();
                (None, None)
            }
        };
        if step.shrinker_compacted {
            shrinker_compactions += 1;
            compacted += pool.compact();
        }
        if phases.last().is_none_or(|t| t.phase != step.phase) {
            phases.push(PhaseTally {
                phase: step.phase,
                steps: 0,
                agreeing: 0,
                kernel_pages: 0,
                project_pages: 0,
                huge_pages: 0,
                same_pages: 0,
                pages_compacted: 0,
                project_pages_compacted: 0,
            });
        }
        let t = phases.last_mut().expect("pushed above");
        t.steps += 1;
        t.kernel_pages = step.after.pool_pages(page);
        t.project_pages = pool.total_pages();
        t.huge_pages = step.after.huge_pages;
        t.same_pages = step.after.same_pages;
        t.pages_compacted = step.after.pages_compacted;
        t.project_pages_compacted = compacted;
        if t.kernel_pages == t.project_pages {
            t.agreeing += 1;
        } else if first.is_none() {
            first = Some(Disagreement {
                phase: step.phase,
                step: t.steps,
                page: page_no,
                length,
                kernel_pages: t.kernel_pages,
                project_pages: t.project_pages,
            });
        }
    }
    Ok(Replay { phases, first_disagreement: first, shrinker_compactions })
}
