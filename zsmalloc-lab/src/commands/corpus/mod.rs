//! `zsmalloc corpus`: a corpus of real programs' traces (docs/STUDY.md §8), one module per
//! subcommand: [`study`] answers the corpus questions on every trace of a corpus directory.

pub mod study;

use clap::Subcommand;

use crate::error::LabResult;

#[derive(Subcommand, Debug)]
pub enum CorpusCmd {
    /// The corpus questions on every trace of a corpus (DIR/manifest.json): chain length, the
    /// optimizer's table left one out, folios, zblock and density, frees (docs/STUDY.md §8)
    #[command(after_help = study::HELP)]
    Study(study::StudyArgs),
}

pub fn run(cmd: CorpusCmd) -> LabResult<()> {
    match cmd {
        CorpusCmd::Study(a) => study::run(a),
    }
}
