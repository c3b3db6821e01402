//! `zsmalloc kernel`: the running kernel's zram beside the project (check, capture, cost,
//! import); the subcommands and their arguments are [`crate::kernel`]'s.

use super::output::emit;
use crate::error::LabResult;
pub use crate::kernel::KernelCmd;

/// Runs one kernel subcommand and prints its report; a disagreement exits 1 after printing.
pub fn run(cmd: KernelCmd) -> LabResult<()> {
    let out = crate::kernel::run(&cmd)?;
    emit(&out.text)?;
    if out.exit_code != 0 {
        std::process::exit(out.exit_code);
    }
    Ok(())
}
