//! `--plot FILE.svg`: one module per figure, drawn from shared parts.
//!
//! - [`runs`](runs()): per-class pages, slack, merge waste and spanning reads per 100 B of
//!   object size as step lines (a class of size `s` serves the sizes above the previous class up
//!   to `s`), the huge classes in their own panel, and with two or more runs the difference of
//!   each run minus the first, over the same sizes;
//! - [`sweep`](sweep()): pages, spanning reads and bytes copied against the swept key, and a
//!   Pareto plot of pages against spanning reads;
//! - [`classes`](classes()): class-table shapes on a grid with the dense sizes zoomed, and the
//!   difference of two tables (`classes --vs`); [`block_table`](block_table()): zblock's block types;
//! - [`cost`](cost()): `zsmalloc cost`: read CPU per class and mode, and with several
//!   configurations a Pareto plot of pages against read CPU, one colour per chain policy;
//! - [`folios`](folios()): `zsmalloc folios`: pages and swap-in CPU against the folio size.
//! - [`optimize`](optimize()): `zsmalloc optimize`: Pareto panels of pages (end, peak) against
//!   read cost, the frontier points beside classic and the heuristic.
//!
//! Every plot is SVG, whatever the command: [`check_path`] refuses any other file name before
//! anything runs.
//!
//! Every picture is a [`Figure`] of [`Panel`]s ([`figure`]) drawn by [`draw`](draw()) ([`mod@draw`]:
//! palette, legends beside the plot, never on the data; `axes`: ranges from 0 unless the title
//! says why not, every tick labelled; [`labels`]: point labels that never cover each other). A new picture (say pages
//! against read CPU time) is a new module whose function builds panels, e.g. with
//! [`pareto_panel`].

mod axes;
mod block_table;
mod classes;
mod cost;
pub mod draw;
pub mod figure;
mod folios;
pub mod labels;
mod optimize;
mod pareto;
mod runs;
mod sweep;

pub use block_table::block_table;
pub use classes::classes;
pub use cost::cost;
pub use draw::draw;
pub use figure::{spans, steps, Figure, Panel, Series, Style, YStart, GREY};
pub use folios::folios;
pub use optimize::optimize;
pub use pareto::{pareto_panel, ParetoPoint};
pub use runs::{class_difference, runs};
pub use sweep::sweep;

/// Refuses a plot file not named `.svg`: plots are drawn as SVG only (the workspace's plotters
/// has no bitmap backend), and SVG written into a `.png` opens as a broken image.
pub fn check_path(path: &std::path::Path) -> crate::error::LabResult<()> {
    if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("svg")) {
        return Ok(());
    }
    Err(crate::error::LabError::usage(format!(
        "--plot {}: plots are SVG, name the file FILE.svg (rsvg-convert -o FILE.png FILE.svg \
         makes a PNG of it)",
        path.display()
    )))
}
