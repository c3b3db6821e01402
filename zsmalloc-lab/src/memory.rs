//! What a command may take from the machine, decided before it allocates.
//!
//! Every command plans its peak from its arguments alone (a workload's pages, objects or
//! trace; a cost run's pools and corpus), then [`Limit::check`] refuses a plan above what is
//! available — `MemAvailable`, what the memory cgroup still allows, what the address-space
//! limit (`ulimit -v`) leaves, and `--max-memory` when given — with exit 2 and one line naming
//! the flag to lower, the planned bytes and the available ones. A size given by the user that
//! reaches an allocation anyway (a buffer of `--batch` entries, a corpus of `--max-pages`) is
//! reserved with `try_reserve`, so a failure is the same refusal, never an abort.

use crate::error::{LabError, LabResult};

/// Margin on every plan: allocator slack, the program's own buffers and its threads.
pub const SLACK_BYTES: u64 = 32 << 20;

/// What a stored object costs beside its bytes: the driver's record of it (16 bytes), the
/// pool's handle and zspage records (about 35 bytes measured), rounded up.
pub const PER_OBJECT_BYTES: u64 = 96;

/// A planned peak and what it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Bytes at the peak, beyond what the process holds already.
    pub bytes: u64,
    /// The flag (with its value) to lower when the plan is refused: `--objects 200000000`.
    pub from: String,
}

impl Plan {
    pub fn new(bytes: u64, from: impl Into<String>) -> Plan {
        Plan { bytes, from: from.into() }
    }

    /// The plan of `jobs` runs at once.
    pub fn times(self, jobs: usize) -> Plan {
        let from =
            if jobs > 1 { format!("{} ({jobs} runs at once)", self.from) } else { self.from };
        Plan { bytes: self.bytes.saturating_mul(jobs as u64), from }
    }
}

/// The most a command may take: the machine's and the user's limits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limit {
    /// `--max-memory`, when given.
    pub max_memory: Option<u64>,
}

impl Limit {
    pub fn new(max_memory: Option<u64>) -> Limit {
        Limit { max_memory }
    }

    /// Refuses `plan` for `command` when it does not fit (exit 2, one line).
    pub fn check(&self, command: &str, plan: &Plan) -> LabResult<()> {
        check_against(command, plan, self.max_memory, available_bytes())
    }

    /// The most a plan may be and still fit (beside [`SLACK_BYTES`]): a plan made by a pass
    /// over an input stops there, as the check would refuse it anyway.
    pub fn budget(&self) -> u64 {
        let most = [self.max_memory, available_bytes()].into_iter().flatten().min();
        most.map_or(u64::MAX, |m| m.saturating_sub(SLACK_BYTES))
    }
}

/// Address space a thread running pools takes beside them under glibc: its stack (Rust's 2 MiB
/// and a guard page).
const STACK_BYTES: u64 = (2 << 20) + 4096;
/// A malloc arena: glibc reserves 64 MiB of address space for each, and makes up to 8 per core
/// as threads contend.
const MALLOC_ARENA_BYTES: u64 = 64 << 20;

/// The address space of one run beside its pool's pages: `heap` bytes of records (its plan
/// with a pool that keeps no bytes), and `pages` bytes of pages at most, which its pool reserves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunSpace {
    pub heap: u64,
    pub pages: u64,
}

/// What `jobs` runs at once take: `touched`, each run's memory plan, and under an address-space
/// limit (`ulimit -v`) what they reserve as well: `space`, a stack and a malloc arena per run.
/// Refused when it does not fit (exit 2, one line naming the flag to lower); else each pool is
/// given an equal share of the address space left
/// ([`zsmalloc_core::set_max_pool_reservation`]), so that the first do not take the room of the
/// others.
pub fn check_runs(
    limit: &Limit,
    command: &str,
    touched: &Plan,
    space: RunSpace,
    jobs: usize,
) -> LabResult<()> {
    limit.check(command, &touched.clone().times(jobs))?;
    let Some(address_space) = address_space_limit() else { return Ok(()) };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let room = address_space.saturating_sub(proc_status_bytes("VmSize").unwrap_or(0));
    check_reservations(command, &touched.from, space, jobs as u64, cores, room)
        .map(|share| zsmalloc_core::set_max_pool_reservation(share as usize))
}

/// Each pool's share of `room` bytes of address space when `jobs` runs of `space` go at once on
/// `cores` cores, or the refusal (naming `from`) when a share cannot hold a run's pages.
fn check_reservations(
    command: &str,
    from: &str,
    space: RunSpace,
    jobs: u64,
    cores: u64,
    room: u64,
) -> LabResult<u64> {
    let jobs = jobs.max(1);
    let arenas = (jobs + 1).min(8 * cores.max(1));
    let beside = jobs
        .saturating_mul(space.heap.saturating_add(STACK_BYTES))
        .saturating_add(arenas * MALLOC_ARENA_BYTES)
        .saturating_add(SLACK_BYTES);
    // A pool's range is whole steps of 256 MiB (the least a pool reserves).
    let step = zsmalloc_core::MIN_RESERVE_BYTES as u64;
    let pool = space.pages.max(1).div_ceil(step).saturating_mul(step);
    let share = room.saturating_sub(beside) / jobs / step * step;
    if share >= pool {
        return Ok(share);
    }
    let need = beside.saturating_add(jobs.saturating_mul(pool));
    let runs = if jobs > 1 { format!(", {jobs} runs at once") } else { String::new() };
    Err(LabError::usage(format!(
        "{command} needs about {} ({need} B) of address space for {}{runs} (each run's pool \
         reserves {} for its pages), more than the address-space limit (ulimit -v) leaves ({}, \
         {room} B): lower it{}",
        human(need),
        from,
        human(pool),
        human(room),
        if jobs > 1 { " or --jobs" } else { "" },
    )))
}

/// `plan` against the user's limit and against `available` bytes.
fn check_against(
    command: &str,
    plan: &Plan,
    max_memory: Option<u64>,
    available: Option<u64>,
) -> LabResult<()> {
    let need = plan.bytes.saturating_add(SLACK_BYTES);
    let over = match (max_memory, available) {
        (Some(m), _) if need > m => Some(format!("more than --max-memory {} ({m} B)", human(m))),
        (_, Some(a)) if need > a => {
            Some(format!("more than this machine has available ({}, {a} B)", human(a)))
        }
        _ => None,
    };
    match over {
        None => Ok(()),
        Some(why) => Err(LabError::usage(format!(
            "{command} needs about {} ({need} B) for {}, {why}: lower it",
            human(need),
            plan.from
        ))),
    }
}

/// `Vec::with_capacity(n)` that refuses instead of aborting when `n` elements cannot be had
/// (`what` names the flag the size came from).
pub fn try_vec<T>(n: usize, what: &str) -> LabResult<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| {
        let bytes = (n as u64).saturating_mul(std::mem::size_of::<T>() as u64);
        LabError::usage(format!(
            "cannot allocate {} ({bytes} B) for {what}: lower it",
            human(bytes)
        ))
    })?;
    Ok(v)
}

/// A field of `/proc/self/status` in bytes (`VmRSS`, `VmHWM`, `VmSize`: kB there).
pub fn proc_status_bytes(field: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    kib_field(&text, field)
}

/// What this process can still take: the smallest of `MemAvailable`, the memory cgroup's
/// room, and the address-space limit less the address space in use; `None` when none is known.
pub fn available_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    let machine = meminfo.as_deref().and_then(|t| kib_field(t, "MemAvailable"));
    let read = |f: &str| std::fs::read_to_string(format!("/sys/fs/cgroup/{f}")).ok();
    let cgroup = match (read("memory.max"), read("memory.current")) {
        (Some(max), Some(cur)) => max
            .trim()
            .parse::<u64>()
            .ok()
            .zip(cur.trim().parse::<u64>().ok())
            .map(|(m, c)| m.saturating_sub(c)),
        _ => None,
    };
    let address_space = address_space_limit()
        .map(|limit| limit.saturating_sub(proc_status_bytes("VmSize").unwrap_or(0)));
    [machine, cgroup, address_space].into_iter().flatten().min()
}

/// `RLIMIT_AS` in bytes, `None` when unlimited.
pub fn address_space_limit() -> Option<u64> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one rlimit through a pointer to a live local.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut lim) } == 0;
    (ok && lim.rlim_cur != libc::RLIM_INFINITY).then_some(lim.rlim_cur)
}

/// `Field:   1234 kB` in `text`, in bytes.
fn kib_field(text: &str, field: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.split(':').next() == Some(field))?;
    let kib: u64 = line.split(':').nth(1)?.split_whitespace().next()?.parse().ok()?;
    Some(kib * 1024)
}

/// `--max-memory`: a byte count with an optional K, M, G or T suffix (powers of 1024; `KiB`,
/// `MB` and the like accepted). A count below 1 MiB without a unit is refused: no command
/// runs in so little, so `6` is surely `6G` mistyped. Shaped as a clap value parser.
pub fn parse_memory(s: &str) -> Result<u64, String> {
    let accepted = "a size such as 6G, 4096M or 1073741824 is accepted";
    let bytes = zsmalloc_core::config::parse_bytes(s).filter(|&b| b > 0).ok_or(accepted)?;
    let unitless = s.trim().bytes().all(|b| b.is_ascii_digit());
    if unitless && bytes < 1 << 20 {
        let n = s.trim();
        return Err(format!("{n} bytes is surely not meant: give a unit ({n}M, {n}G)"));
    }
    Ok(bytes)
}

/// Bytes in the unit that reads naturally: `6 B`, `64 KiB`, `1.5 GiB`, `312 MiB` (one
/// decimal below 10 units when it is not whole; whole units from 10 up, rounded down).
pub fn human(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut unit = 0;
    while unit + 1 < UNITS.len() && bytes >= 1 << (10 * (unit + 1)) {
        unit += 1;
    }
    let v = bytes as f64 / (1u64 << (10 * unit)) as f64;
    let tenths = (v * 10.0).round() / 10.0;
    if unit == 0 || v >= 10.0 || tenths.fract() == 0.0 {
        format!("{:.0} {}", if v >= 10.0 { v.floor() } else { tenths }, UNITS[unit])
    } else {
        format!("{tenths:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_and_print() {
        assert_eq!(parse_memory("6G").unwrap(), 6 << 30);
        assert_eq!(parse_memory("4096MiB").unwrap(), 4 << 30);
        assert_eq!(parse_memory("512m").unwrap(), 512 << 20);
        assert_eq!(parse_memory("1048576").unwrap(), 1 << 20);
        for bad in ["", "G", "-1G", "0", "1.5G", "lots", "99999999999T", "6", "1048575"] {
            assert!(parse_memory(bad).is_err(), "{bad}");
        }
        let e = parse_memory("6").unwrap_err();
        assert!(e.contains("6 bytes") && e.contains("6G"), "{e}");
        assert_eq!(parse_memory("6K").unwrap(), 6 << 10);
        assert_eq!(human(3 << 29), "1.5 GiB");
        assert_eq!(human(312 << 20), "312 MiB");
        assert_eq!(human(6), "6 B");
        assert_eq!(human(64 << 10), "64 KiB");
        assert_eq!(human(2 << 30), "2 GiB");
        assert_eq!(human((1 << 30) - 1), "1023 MiB");
        assert_eq!(human(1_162_981_376), "1.1 GiB");
    }

    #[test]
    fn a_plan_over_a_limit_is_one_line_naming_the_flag_and_both_sizes() {
        let plan = Plan::new(40 << 30, "--objects 200000000");
        assert!(
            check_against("run", &Plan::new(1 << 30, "x"), Some(2 << 30), Some(8 << 30)).is_ok()
        );
        let e = check_against("run", &plan, None, Some(20 << 30)).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let msg = e.to_string();
        assert!(!msg.contains('\n'), "{msg}");
        assert!(msg.contains("--objects 200000000") && msg.contains("available"), "{msg}");
        assert!(msg.contains(&(20u64 << 30).to_string()), "{msg}");
        assert!(msg.contains(&((40u64 << 30) + SLACK_BYTES).to_string()), "{msg}");
        let e = check_against("run", &Plan::new(3 << 30, "-n 9"), Some(2 << 30), None);
        assert!(e.unwrap_err().to_string().contains("--max-memory 2 GiB"));
        assert!(check_against("run", &plan, None, None).is_ok());
        assert_eq!(Plan::new(3, "x").times(4), Plan::new(12, "x (4 runs at once)"));
    }

    #[test]
    fn runs_under_an_address_space_limit_count_their_pools_stacks_and_arenas() {
        let from = "--objects 300000";
        let small = RunSpace { heap: 100 << 20, pages: 10 << 20 };
        // 64 runs on 2 cores in 4 GiB: 64 pools of at least 256 MiB cannot fit.
        let e = check_reservations("optimize dist", from, small, 64, 2, 4 << 30).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let msg = e.to_string();
        assert!(!msg.contains('\n') && msg.contains("64 runs at once"), "{msg}");
        assert!(
            msg.contains("each run's pool reserves 256 MiB") && msg.contains("--jobs"),
            "{msg}"
        );
        // Two runs whose pages need 3 GiB each: over 4 GiB.
        let big = RunSpace { heap: 100 << 20, pages: 3 << 30 };
        let e = check_reservations("optimize dist", from, big, 2, 2, 4 << 30).unwrap_err();
        assert!(e.to_string().contains("reserves 3 GiB"), "{e}");
        // Two small runs fit: each pool gets an equal share of what is left, in 256 MiB steps.
        let share = check_reservations("run", from, small, 2, 2, 4 << 30).unwrap();
        assert_eq!(share, 7 << 28, "(4 GiB - 2 x 102 MiB - 3 arenas - slack) / 2, rounded down");
        let alone = check_reservations("run", from, big, 1, 2, 4 << 30).unwrap();
        assert_eq!(alone, 14 << 28, "4 GiB less one run's heap, 2 arenas and slack");
    }

    #[test]
    fn an_impossible_reservation_is_refused_not_aborted() {
        let e = try_vec::<u64>(usize::MAX / 4, "--batch").unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("--batch"), "{e}");
        assert!(try_vec::<u8>(16, "x").unwrap().capacity() >= 16);
    }

    #[test]
    fn fields_are_read_in_bytes_and_something_is_available() {
        let t = "Name:\tx\nVmHWM:\t  1234 kB\nVmRSS:\t 1000 kB\n";
        assert_eq!(kib_field(t, "VmHWM"), Some(1234 * 1024));
        assert_eq!(kib_field(t, "Vm"), None);
        assert!(proc_status_bytes("VmRSS").is_some_and(|b| b > 0));
        assert!(available_bytes().is_some_and(|b| b > 0));
    }
}
