//! `zsmalloc corpus <command>`: a corpus of real programs' traces, one module per subcommand.
//!
//! - [`record`]: programs run under the tier with `--record`, and the corpus's manifest
//!   (docs/CORPUS.md);
//! - [`input`]: the programs' inputs, generated deterministically;
//! - [`study`]: the corpus questions on every trace of a corpus directory (docs/STUDY.md §8).

pub mod input;
pub mod record;
pub mod study;

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
    /// The corpus questions on every trace of a corpus (DIR/manifest.json): chain length, the
    /// optimizer's table left one out, folios, zblock and density, frees (docs/STUDY.md §8)
    #[command(after_help = study::HELP)]
    Study(study::StudyArgs),
}

pub fn run(cmd: CorpusCmd) -> LabResult<()> {
    match cmd {
        CorpusCmd::Record(a) => record::run(a),
        CorpusCmd::Input(a) => input::run(a),
        CorpusCmd::Study(a) => study::run(a),
    }
}
