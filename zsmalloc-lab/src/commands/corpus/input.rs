//! `zsmalloc corpus input KIND [--size BYTES] [--count N] [--seed N] [-o PATH]`: one of the
//! corpus's inputs, the same bytes on every machine (the programs' `input` commands use it).

use std::path::PathBuf;

use clap::Args;

use crate::corpus::inputs::{self, InputKind, InputSpec};
use crate::error::{LabError, LabResult};
use crate::flag_values;

#[derive(Args, Debug)]
pub struct InputArgs {
    /// What to write
    #[arg(value_enum)]
    pub kind: InputKind,
    /// text: its size; tree: each file's mean size
    #[arg(long, value_name = "BYTES", default_value = "1M",
          value_parser = flag_values::bytes::<u64>(1, 1 << 30))]
    pub size: u64,
    /// sql: rows; json: objects; tree: files; rust, c: functions
    #[arg(long, value_name = "N", default_value = "1000",
          value_parser = flag_values::whole::<u64>(1, 10_000_000))]
    pub count: u64,
    /// The seed of the random choices
    #[arg(long, value_name = "N", default_value = "1", value_parser = flag_values::any_whole::<u64>())]
    pub seed: u64,
    /// Where to write it (`-`: standard output); tree: the directory, made if missing
    #[arg(short = 'o', long = "output", value_name = "PATH", default_value = "-")]
    pub output: PathBuf,
}

pub fn run(a: InputArgs) -> LabResult<()> {
    if a.kind == InputKind::Tree && a.output == std::path::Path::new("-") {
        return Err(LabError::usage("corpus input tree: -o DIR names the directory to fill"));
    }
    let spec = InputSpec { kind: a.kind, size: a.size, count: a.count, seed: a.seed };
    inputs::generate(&spec, &a.output)
}
