//! `cost --instructions`: the command re-runs itself under `valgrind --tool=callgrind` with
//! the same flags (minus the ones only the parent acts on) and `--callgrind-child DIR`; the
//! child runs one round on a small pool and writes its counts to DIR.

use std::collections::HashMap;
use std::path::Path;

use crate::cost::{self, corpus::Source, CostOptions};
use crate::error::{LabError, LabResult};
use crate::progress::ProgressSink;

/// Flags the child must not see: `--instructions` (it would recurse) and the outputs the
/// parent writes. The first take a value.
const PARENT_FLAGS_WITH_VALUE: [&str; 2] = ["--plot", "--format"];
const PARENT_FLAGS: [&str; 1] = ["--instructions"];

/// The child's arguments: the parent's (without the program name), less the parent's flags.
pub fn child_args(args: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        if PARENT_FLAGS.contains(&arg.as_str()) {
            continue;
        }
        if PARENT_FLAGS_WITH_VALUE.contains(&arg.as_str()) {
            args.next();
            continue;
        }
        if PARENT_FLAGS_WITH_VALUE.iter().any(|f| arg.starts_with(&format!("{f}="))) {
            continue;
        }
        out.push(arg);
    }
    out
}

/// Runs this command again under callgrind; instruction counts per operation by pass.
pub fn rerun_under_callgrind() -> LabResult<HashMap<String, u64>> {
    let exe = std::env::current_exe().map_err(|e| {
        LabError::runtime(format!(
            "cannot find this program: {}",
            zsmalloc_core::text_input::io_reason(&e)
        ))
    })?;
    let args = child_args(std::env::args().skip(1));
    eprintln!("zsmalloc: counting instructions under callgrind (one round, a small pool)...");
    cost::instructions::run_child(&exe, &args)
}

/// The child's run: one round, a small pool (counts do not need a cold cache); its counts
/// go to `dir`.
pub fn run_child(opts: &mut CostOptions, dir: &Path) -> LabResult<()> {
    opts.instructions = cost::InstructionSource::Callgrind;
    opts.repeat = 1;
    opts.pool_bytes = opts.pool_bytes.min(4 << 20);
    opts.max_pages = opts.max_pages.min(512);
    if let Source::Builtin { pages, .. } = &mut opts.source {
        *pages = (*pages).min(512);
    }
    cost::run(opts, &ProgressSink::silent())?;
    cost::instructions::write_manifest(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_child_gets_every_flag_but_the_parent_s() {
        let parent = [
            "cost",
            "--instructions",
            "--plot",
            "x.svg",
            "--format=json",
            "--modes",
            "copy",
            "--format",
            "csv",
            "--plot=y.svg",
            "--seed",
            "3",
        ];
        let child = child_args(parent.iter().map(|s| s.to_string()));
        assert_eq!(child, ["cost", "--modes", "copy", "--seed", "3"]);
    }
}
