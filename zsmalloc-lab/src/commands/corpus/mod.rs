//! `zsmalloc corpus <command>`: a corpus of real programs' traces (docs/CORPUS.md).
//!
//! - [`record`]: programs run under the tier with `--record`, and the corpus's manifest;
//! - [`input`]: the programs' inputs, generated deterministically.

pub mod input;
pub mod record;

use clap::Subcommand;

use crate::error::LabResult;

/// `zsmalloc corpus <command>`.
#[derive(Subcommand, Debug)]
pub enum CorpusCmd {
    /// Run a list of ordinary programs under the tier at budgets relative to their peak RSS,
    /// recording each run's pool operations, and write the corpus's manifest (root)
    #[command(after_help = record::HELP)]
    Record(record::RecordArgs),
    /// Write one of the corpus's inputs (the same bytes on every machine)
    Input(input::InputArgs),
}

pub fn run(cmd: CorpusCmd) -> LabResult<()> {
    match cmd {
        CorpusCmd::Record(a) => record::run(a),
        CorpusCmd::Input(a) => input::run(a),
    }
}
