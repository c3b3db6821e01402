//! `zsmalloc classes`: the class table of a configuration; with `--vs`, two side by side; with
//! `--backend zblock`, zblock's block table.

use std::path::PathBuf;

use clap::Args;
use zsmalloc_core::BackendKind;

use super::output::emit;
use crate::classes::{self, ClassTableReport};
use crate::config::assemble::assemble_one;
use crate::config::flags::ConfigFlags;
use crate::config::ConfigSpec;
use crate::error::{LabError, LabResult};
use crate::flag_values;
use crate::report::Render;
use crate::report::{self, Format};
use crate::{block_table, plot};
use zsmalloc_core::band;

#[derive(Args, Debug)]
pub struct ClassesArgs {
    /// A second configuration (overrides, as `compare --config`) shown side by side
    #[arg(long, value_name = "SPEC")]
    pub vs: Option<String>,
    /// Logical-size step [default: the smaller class delta]
    #[arg(long, value_name = "BYTES", value_parser = flag_values::bytes::<u32>(8, u64::from(band::MAX_OBJECT)))]
    pub step: Option<u32>,
    /// Smallest logical size shown
    #[arg(long, value_name = "BYTES", value_parser = flag_values::bytes::<u32>(0, u64::from(band::MAX_OBJECT)))]
    pub min_size: Option<u32>,
    /// Largest logical size shown
    #[arg(long, value_name = "BYTES", value_parser = flag_values::bytes::<u32>(1, u64::from(band::MAX_OBJECT)))]
    pub max_size: Option<u32>,
    #[command(flatten)]
    pub pool: ConfigFlags,
    /// Output format: table, json or csv
    #[arg(long, value_name = "FORMAT", help_heading = "Output", value_enum, default_value_t = Format::Table, hide_possible_values = true)]
    pub format: Format,
    /// Write the configuration's table in the class-table file format instead (load it back
    /// with --class-table or ZSMALLOC_CLASS_TABLE: it places every object as this configuration)
    #[arg(long, value_name = "FILE", conflicts_with_all = ["vs", "plot"], help_heading = "Output")]
    pub export: Option<PathBuf>,
    /// Draw chain, tail waste, merge waste and spanning per zspage against logical size (and
    /// their differences with --vs)
    #[arg(long, value_name = "FILE.svg", help_heading = "Output")]
    pub plot: Option<PathBuf>,
}

pub fn run(a: ClassesArgs) -> LabResult<()> {
    let format = a.format.offered_by::<[ClassTableReport]>()?;
    if let Some(p) = &a.plot {
        report::check_writable("--plot", p)?;
        plot::check_path(p)?;
    }
    let mut base = assemble_one(&a.pool, "classes")?;
    match base.config.backend {
        BackendKind::Zblock => return block_table(&a, base.config.page_size, format),
        BackendKind::Malloc => {
            return Err(LabError::usage(
                "the malloc backend has no classes: each object is its own allocation",
            ))
        }
        BackendKind::Zsmalloc => {}
    }
    if let Some(path) = &a.export {
        let text = base.config.export_class_table().map_err(LabError::from)?;
        crate::atomic_file::write(path, text.as_bytes())?;
        let classes = zsmalloc_core::ClassTable::new(&base.config)?.spec().classes().len();
        return emit(&format!("{}: {classes} classes written to {}\n", base.label, path.display()));
    }
    // Rows carry their table's label (CSV, JSON): the policy, or "base" beside --vs.
    let mut specs = vec![base.clone()];
    if let Some(vs) = &a.vs {
        base.label = "base".into();
        specs = vec![base.clone(), ConfigSpec::with_overrides(&base, vs)?];
    }
    let step =
        a.step.unwrap_or_else(|| specs.iter().map(|s| s.effective_delta()).min().unwrap_or(16));
    let tables = specs
        .iter()
        .map(|s| classes::class_table(s, step, a.min_size, a.max_size))
        .collect::<LabResult<Vec<ClassTableReport>>>()?;
    if let Some(path) = &a.plot {
        plot::classes(path, &tables)?;
    }
    emit(&tables.render(format)?)
}

/// `classes --backend zblock`: the block table of the page size.
fn block_table(a: &ClassesArgs, page_size: u32, format: Format) -> LabResult<()> {
    if a.vs.is_some() || a.step.is_some() || a.min_size.is_some() || a.max_size.is_some() {
        return Err(LabError::usage(
            "--vs, --step, --min-size and --max-size are for zsmalloc's class tables; zblock's \
             table has one row per block type",
        ));
    }
    if a.export.is_some() {
        return Err(LabError::usage(
            "--export writes zsmalloc's class tables (the class-table file format); zblock's \
             block table is fixed by the page size: print it with --format csv or json instead",
        ));
    }
    let t = block_table::block_table(page_size)?;
    if let Some(path) = &a.plot {
        plot::block_table(path, &t)?;
    }
    emit(&t.render(format)?)
}
