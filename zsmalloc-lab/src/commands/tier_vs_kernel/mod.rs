//! `zsmalloc tier --vs-kernel [--yes] [--kernel-disksize BYTES]`: after the tier's run, the
//! same program a second time under the kernel's own zram swap at the same budget, and the two
//! side by side (docs/TIER.md, Beside the kernel). Root only.
//!
//! - [`preflight`]: the refusals, before anything is made (and the memory check after the
//!   tier's run);
//! - [`cgroup`], [`swap`]: the memory cgroup and the swap on the private device;
//! - [`kernel_run`]: the kernel run, from the device's creation to its removal;
//! - [`teardown`]: what the kernel run made, taken down on every exit, signals included;
//!   [`leftovers`]: what a killed run left, removed at the next start;
//! - [`side_by_side`]: the figures beside each other, text and JSON.

pub mod cgroup;
pub mod kernel_run;
pub mod leftovers;
pub mod preflight;
pub mod side_by_side;
pub mod swap;
pub mod teardown;

use std::ffi::OsString;
use std::time::Duration;

use serde_json::Value;

use self::kernel_run::Plan;
use self::side_by_side::KernelSide;
use crate::kernel::host;

/// The smallest device: room for a small program's swap and the header.
const MIN_DISKSIZE: u64 = 64 << 20;

/// What the kernel run needs from the command line.
pub struct Request<'a> {
    pub command: &'a [OsString],
    pub budget: u64,
    pub compressor: &'a str,
    pub disksize: Option<u64>,
    pub yes: bool,
}

/// How the kernel side ended, when it did not.
pub struct Failure {
    pub message: String,
    pub exit_code: i32,
}

/// The program's untiered part: the tier run's peak RSS less its tiered peak (resident tiered
/// pages and the pool, each at its peak).
pub fn untiered_bytes(tier: &Value) -> u64 {
    let n = |k: &str| tier[k].as_u64().unwrap_or(0);
    n("peak_rss_bytes").saturating_sub(n("peak_resident_bytes") + n("max_pool_bytes"))
}

/// Runs the program under the kernel's zram swap (module documentation), after the tier run
/// whose report is `tier`.
pub fn run(req: &Request, tier: &Value) -> Result<KernelSide, Failure> {
    let refuse = |message: String| Failure { message, exit_code: 2 };
    let status = tier["exit_status"].as_u64().unwrap_or(0);
    if status == 128 + libc::SIGINT as u64 || status == 128 + libc::SIGTERM as u64 {
        return Err(refuse("--vs-kernel: the tier run was interrupted: no kernel run".into()));
    }
    let untiered = untiered_bytes(tier);
    let peak = tier["peak_held_bytes"].as_u64().unwrap_or(0) + untiered;
    preflight::check_memory(peak, req.yes).map_err(refuse)?;
    let page = host::page_size() as u64;
    let disksize = req.disksize.unwrap_or((4 * peak).max(MIN_DISKSIZE)).div_ceil(page) * page;
    let limit = req.budget + untiered;
    let took = tier["elapsed_s"].as_f64().unwrap_or(0.0);
    let timeout = Duration::from_secs_f64(took * 10.0 + 30.0);
    eprintln!(
        "zsmalloc tier: --vs-kernel: a swap on a new zram device ({} MiB, priority {}) is \
         machine-wide while the kernel run lasts: about {took:.1} s (the tier run's time), at \
         most {} s; then it is taken off and the device and its memory cgroup removed",
        disksize >> 20,
        swap::PRIORITY,
        timeout.as_secs()
    );
    let plan = Plan {
        command: req.command.to_vec(),
        compressor: req.compressor.to_string(),
        disksize,
        limit,
        page_size: page as usize,
        timeout,
    };
    let m = kernel_run::run(&plan)
        .map_err(|e| Failure { message: format!("--vs-kernel: {e}"), exit_code: e.exit_code() })?;
    Ok(KernelSide { m, budget: req.budget, untiered, limit, disksize, page_size: page })
}
