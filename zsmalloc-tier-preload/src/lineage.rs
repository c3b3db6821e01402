//! Which process the tier's variables are meant for. The library stays in `LD_PRELOAD`, and the
//! tier's variables in the environment, so that a program the started process executes (a
//! launcher such as pyenv's shim, `env`, `sh -c 'exec ...'`) starts tiered in its turn: it is
//! the same process. A token names that process (`ZSMALLOC_TIER_PROCESS=<pid>:<start time>`,
//! set by the library where it first starts; the start time, field 22 of `/proc/self/stat`, is
//! kept by exec and differs for a later process given the same pid). Any other process that
//! loads the library (a forked, vfork'd or spawned child that executed a program) is not the
//! started one: without `--follow-children` it takes the library and the variables out of its
//! environment and runs untiered, and so do its descendants; with it, it is tiered on its own
//! and records nothing (the trace is the started process's).

use zsmalloc_tier::folio::{FOLIO_VAR, READAHEAD_VAR};
use zsmalloc_tier::launch::{
    BREAKDOWN_VAR, BUDGET_VAR, COMPRESSOR_VAR, FOLLOW_VAR, POLICY_VAR, PROCESS_VAR, RECORD_VAR,
    STATS_VAR, USER_FAULTS_VAR,
};

/// The tier's variables, all taken out of an environment that is not to be tiered.
const OWN_VARS: [&str; 11] = [
    BUDGET_VAR,
    COMPRESSOR_VAR,
    STATS_VAR,
    RECORD_VAR,
    FOLIO_VAR,
    READAHEAD_VAR,
    BREAKDOWN_VAR,
    POLICY_VAR,
    FOLLOW_VAR,
    USER_FAULTS_VAR,
    PROCESS_VAR,
];

/// This process as the token names it: its pid and start time (0 where `/proc` cannot be
/// read: the pid alone then).
fn identity() -> String {
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() };
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    format!("{pid}:{}", start_time(&stat).unwrap_or(0))
}

/// The start time in a `/proc/PID/stat` line. The command name (field 2) may hold spaces and
/// parentheses: the fields after it are counted from its last ')', field 3 first, so the
/// start time (22) is the 20th.
fn start_time(stat: &str) -> Option<u64> {
    let at = stat.rfind(')')?;
    stat[at + 1..].split_whitespace().nth(19)?.parse().ok()
}

/// Whether this is the process the command started (or a program it executed): the token
/// names it, or there is none yet and it is set now.
pub fn is_started_process() -> bool {
    let me = identity();
    match std::env::var(PROCESS_VAR) {
        Ok(token) => token == me,
        Err(_) => {
            std::env::set_var(PROCESS_VAR, me);
            true
        }
    }
}

/// Takes this library out of `LD_PRELOAD` and the tier's variables out of the environment, so
/// that this process's descendants run untiered.
pub fn strip_environment() {
    if let Ok(list) = std::env::var("LD_PRELOAD") {
        let kept: Vec<&str> = list
            .split([':', ' '])
            .filter(|s| !s.is_empty() && !s.contains("libzsmalloc_tier_preload"))
            .collect();
        if kept.is_empty() {
            std::env::remove_var("LD_PRELOAD");
        } else {
            std::env::set_var("LD_PRELOAD", kept.join(":"));
        }
    }
    for v in OWN_VARS {
        std::env::remove_var(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_time_is_read_past_any_command_name() {
        let fields: Vec<String> = (1..=18).map(|n| n.to_string()).collect();
        let line = format!("42 (we) i(r)d) S {} 777 19 20", fields.join(" "));
        assert_eq!(start_time(&line), Some(777));
        assert_eq!(start_time("42 (short) S 1 2"), None);
        let me = identity();
        let (pid, start) = me.split_once(':').expect("pid:start");
        assert_eq!(pid, std::process::id().to_string());
        assert!(start.parse::<u64>().is_ok_and(|s| s > 0), "{me}");
        assert_eq!(identity(), me, "the same process, the same token");
    }
}
