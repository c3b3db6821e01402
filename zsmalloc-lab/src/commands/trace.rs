//! `zsmalloc trace convert|info`: a trace turned into its other form, or described, read once
//! front to back (a pipe or `-` works) without holding anything per operation.

use std::fs::{File, Metadata};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use zsmalloc_core::text_input::escape;

use super::output::emit;
use super::trace_info::{self, InfoFormat};
use crate::error::{LabError, LabResult};
use crate::progress::ByteProgress;
use crate::trace_format::{TraceEncoding, TraceFormat, TraceReader, TraceWriter};
use crate::workload::trace::no_operation;

/// `zsmalloc trace <command>`.
#[derive(Subcommand, Debug, Clone)]
pub enum TraceCmd {
    /// Write a trace in its other form (text to binary, binary to text), or as --to says
    Convert(ConvertArgs),
    /// Operations by kind, handles, the live objects and bytes at their peaks, and a histogram
    /// of object lengths (store and malloc) in power-of-two buckets
    Info(InfoArgs),
}

#[derive(Args, Debug, Clone)]
pub struct ConvertArgs {
    /// The trace to read, text or binary (`-`: standard input)
    pub input: PathBuf,
    /// The trace to write (replaced only once complete)
    pub output: PathBuf,
    /// The form to write [default: the other form than the input's]
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub to: Option<TraceFormat>,
    /// Compress the binary trace's operations with zstd
    #[arg(long)]
    pub zstd: bool,
}

#[derive(Args, Debug, Clone)]
pub struct InfoArgs {
    /// The trace to read, text or binary (`-`: standard input)
    pub file: PathBuf,
    /// The report's form
    #[arg(long, value_enum, default_value_t, value_name = "FORMAT")]
    pub format: InfoFormat,
}

pub fn run(cmd: TraceCmd) -> LabResult<()> {
    match cmd {
        TraceCmd::Convert(a) => convert(&a),
        TraceCmd::Info(a) => {
            let (reader, size, name) = open(&a.file)?;
            let mut bar = ByteProgress::new(size, "trace info");
            let figures = trace_info::figures(reader, name, &mut |n| bar.tick(n))?;
            bar.finish();
            // Refused as `replay` refuses it: a trace with no operation is no input.
            if figures.operations() == 0 {
                return Err(no_operation(&figures.input));
            }
            emit(&figures.render(a.format)?)
        }
    }
}

/// Opens `path` (`-`: standard input): its reader, its length when it is a regular file, and
/// its name for messages.
pub fn open(path: &Path) -> LabResult<(TraceReader<File>, u64, String)> {
    let (reader, meta, name) = open_with_metadata(path)?;
    let size = if meta.is_file() { meta.len() } else { 0 };
    Ok((reader, size, name))
}

fn open_with_metadata(path: &Path) -> LabResult<(TraceReader<File>, Metadata, String)> {
    let (file, meta, name) = crate::workload::trace_input::open_input(path)?;
    Ok((TraceReader::new(file, &name)?, meta, name))
}

/// Refuses an output that is the input itself (the same path, a link to it, or standard input
/// redirected from it): the conversion would replace the trace it reads, in the other form
/// under the old name.
fn refuse_onto_itself(input: &Metadata, name: &str, output: &Path) -> LabResult<()> {
    let Ok(out) = std::fs::metadata(output) else { return Ok(()) };
    if out.is_file() && out.dev() == input.dev() && out.ino() == input.ino() {
        return Err(LabError::usage(format!(
            "trace convert: OUT {} is the input {name} itself: converting would replace the \
             trace with its other form under the same name; give OUT another name",
            escape(&output.display().to_string())
        )));
    }
    Ok(())
}

fn convert(a: &ConvertArgs) -> LabResult<()> {
    crate::report::check_writable("OUT", &a.output)?;
    let (mut reader, meta, name) = open_with_metadata(&a.input)?;
    refuse_onto_itself(&meta, &name, &a.output)?;
    let size = if meta.is_file() { meta.len() } else { 0 };
    let from = reader.binary_header().cloned();
    let to = a.to.unwrap_or(if from.is_some() { TraceFormat::Text } else { TraceFormat::Binary });
    if a.zstd && to == TraceFormat::Text {
        return Err(LabError::usage("--zstd compresses a binary trace: not with --to text"));
    }
    let (notes, page_size) = match &from {
        Some(h) => {
            let mut notes: Vec<String> = h.notes.lines().map(|l| escape(l).into_owned()).collect();
            if !h.command.is_empty() {
                notes.push(format!("recorded by: {}", escape(&h.command)));
            }
            (notes, h.page_size)
        }
        None => (vec![format!("converted from the text trace {name}")], 0),
    };
    let encoding = TraceEncoding { format: to, zstd: a.zstd, page_size };
    // The first operation is read before OUT is created: an input with none is refused as
    // `replay` and `trace info` refuse it, and nothing is written.
    let Some(first) = reader.next_op()? else { return Err(no_operation(&name)) };
    let mut out = TraceWriter::create_as(&a.output, &notes, encoding)?;
    let mut bar = ByteProgress::new(size, "trace convert");
    out.op(&first)?;
    let mut ops = 1u64;
    while let Some(op) = reader.next_op()? {
        out.op(&op)?;
        ops += 1;
        bar.tick(reader.bytes_read());
    }
    bar.finish();
    out.finish()?;
    let form = |f: TraceFormat, zstd: bool| match (f, zstd) {
        (TraceFormat::Text, _) => "text",
        (TraceFormat::Binary, false) => "binary",
        (TraceFormat::Binary, true) => "binary (zstd)",
    };
    // A device or a FIFO written in place has no size to tell.
    let written = match std::fs::metadata(&a.output) {
        Ok(m) if m.is_file() => format!(", {} bytes", m.len()),
        _ => String::new(),
    };
    emit(&format!(
        "wrote {}: {} trace, {ops} operations{written}, from the {} trace {name}\n",
        escape(&a.output.display().to_string()),
        form(to, a.zstd),
        form(
            if from.is_some() { TraceFormat::Binary } else { TraceFormat::Text },
            from.as_ref().is_some_and(|h| h.zstd)
        ),
    ))
}
