//! The one open of a trace, shared by every pass a command makes over it.
//!
//! A trace is opened once, however many configurations replay it. A regular file is then read
//! by position (`pread`), so runs side by side (`--jobs`) each have their own cursor over the
//! one descriptor. A pipe, a FIFO, standard input (`-`) or a character device can be read only
//! once: its operations are copied, as they are checked, to an unnamed temporary file (in
//! `$TMPDIR`, at most [`MAX_SPOOL_BYTES`] read; it disappears with the process, however it
//! ends), and every run reads that copy. The copy is a binary trace whatever the input's
//! form (text or binary, told apart by the first bytes): a few bytes an operation, and read
//! without parsing text.
//!
//! The memory plan is made in one streaming pass before any run — the pass that copies a pipe,
//! or a pass of its own over a regular file — and it stops at the first line where the plan
//! goes over the budget: a trace too large to replay is refused holding only the map of the
//! objects live at that line, however long the trace is.

use std::fs::File;
use std::io::{BufWriter, Read};
use std::os::fd::AsFd;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Mutex;

use zsmalloc_core::text_input::{escape, io_reason};

use super::id_map::IdMap;
use crate::error::{LabError, LabResult};
use crate::progress::ByteProgress;
use crate::trace_format::binary::{BinaryEncoder, BinaryHeader};
use crate::trace_format::{TraceOp, TraceReader};

/// The largest copy of a trace read from a pipe (a binary trace, a few bytes an operation):
/// a 10^9-operation trace fits.
pub const MAX_SPOOL_BYTES: u64 = 32 << 30;

/// What the replay's own map costs per handle id met (the id and its slot, in a hash map).
const PER_ID_BYTES: u64 = 48;

/// The figures of one pass over a trace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TracePlan {
    pub ops: u64,
    /// Handle ids met (each takes an entry of the replay's map).
    pub ids: u64,
    /// The plan's peak in bytes: the pool at its fullest and the replay's map.
    pub bytes: u64,
    /// The line the pass stopped at because the plan went over the budget (0: read to the end).
    pub stopped_at: u64,
    /// What `stopped_at` counts: "line" (a text trace) or "operation" (a binary one).
    pub stopped_unit: &'static str,
}

/// An opened trace (module documentation).
#[derive(Debug)]
pub struct TraceInput {
    /// The regular file, or the copy of a pipe once made.
    file: Mutex<Option<File>>,
    /// A pipe or device not yet copied.
    stream: Mutex<Option<File>>,
    /// The input as the user named it, for messages.
    name: String,
    plan: Mutex<Option<TracePlan>>,
}

impl TraceInput {
    /// Opens `path` (`-`: standard input). Nothing is read yet.
    pub fn open(path: &Path) -> LabResult<TraceInput> {
        let (file, meta, name) = open_input(path)?;
        let (regular, stream) =
            if meta.is_file() { (Some(file), None) } else { (None, Some(file)) };
        Ok(TraceInput {
            file: Mutex::new(regular),
            stream: Mutex::new(stream),
            name,
            plan: Mutex::new(None),
        })
    }

    /// The input as messages name it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The plan, when made.
    pub fn planned(&self) -> Option<TracePlan> {
        *lock(&self.plan)
    }

    /// The plan, made on the first call by one pass that stops once the plan is over
    /// `budget` bytes (a pipe is copied in that pass); later calls return it. `longest`
    /// clips each length to the most a pool stores; `payload`: the pools keep the bytes.
    pub fn plan(&self, budget: u64, longest: u64, payload: bool) -> LabResult<TracePlan> {
        let mut plan = lock(&self.plan);
        if let Some(p) = *plan {
            return Ok(p);
        }
        let stream = lock(&self.stream).take();
        let made = match stream {
            Some(pipe) => {
                let (copy, p) = self.copy(pipe, PlanPass::new(budget, longest, payload))?;
                *lock(&self.file) = Some(copy);
                p
            }
            None => {
                let size = lock(&self.file).as_ref().and_then(|f| f.metadata().ok());
                PlanPass::new(budget, longest, payload)
                    .of_bytes(size.map_or(0, |m| m.len()))
                    .read(&mut self.reader()?, |_, _| Ok(()))?
            }
        };
        *plan = Some(made);
        Ok(made)
    }

    /// A reader from the first line, with a cursor of its own (the input is planned, or a
    /// regular file).
    pub fn reader(&self) -> LabResult<TraceReader<Cursor>> {
        let file = lock(&self.file);
        let Some(file) = file.as_ref() else {
            return Err(LabError::runtime(format!(
                "the trace {} is read before its plan was made",
                self.name
            )));
        };
        let file = file.try_clone().map_err(|e| {
            LabError::usage(format!("cannot read '{}': {}", self.name, io_reason(&e)))
        })?;
        let cursor = Cursor { file, pos: 0 };
        TraceReader::new(cursor, &self.name)
    }

    /// Copies `pipe`, checked operation by operation, to an unnamed temporary file as a binary
    /// trace, planning as it goes.
    fn copy(&self, pipe: File, pass: PlanPass) -> LabResult<(File, TracePlan)> {
        let spool = unnamed_temporary()?;
        let failed = |e: std::io::Error| {
            LabError::usage(format!(
                "cannot copy '{}' to a temporary file in {}: {}",
                self.name,
                std::env::temp_dir().display(),
                io_reason(&e)
            ))
        };
        let out = BufWriter::with_capacity(1 << 16, spool.try_clone().map_err(failed)?);
        let mut out = BinaryEncoder::new(out, &BinaryHeader::default()).map_err(failed)?;
        let mut reader = TraceReader::new(pipe, &self.name)?;
        let plan = pass.read(&mut reader, |op, reader| {
            if out.bytes() > MAX_SPOOL_BYTES {
                return Err(LabError::usage(format!(
                    "{}, {} {}: a trace read from a pipe is copied to a temporary file, and \
                     this one is larger than {} GiB: write it to a file and replay that",
                    self.name,
                    reader.unit(),
                    reader.line_no(),
                    MAX_SPOOL_BYTES >> 30
                )));
            }
            out.op(op).map_err(failed)
        })?;
        drop(out.finish().map_err(failed)?);
        Ok((spool, plan))
    }
}

/// Opens the trace at `path` (`-`: standard input): the file, what it is, and its name as
/// messages give it. A directory is refused; nothing is read.
pub fn open_input(path: &Path) -> LabResult<(File, std::fs::Metadata, String)> {
    let (file, name) = if path.as_os_str() == "-" {
        let fd = std::io::stdin().as_fd().try_clone_to_owned().map_err(|e| {
            LabError::usage(format!("cannot read standard input: {}", io_reason(&e)))
        })?;
        (File::from(fd), "standard input".to_string())
    } else {
        let file = File::open(path).map_err(|e| LabError::io("read", path, &e))?;
        (file, escape(&path.display().to_string()).into_owned())
    };
    let meta = file.metadata().map_err(|e| LabError::io("read", path, &e))?;
    if meta.is_dir() {
        return Err(LabError::usage(format!("cannot read '{name}': is a directory")));
    }
    Ok((file, meta, name))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A file with no name in `$TMPDIR`: `O_TMPFILE` where the file system has it, else a file
/// removed at once after it is created. Nothing is left behind, even by a killed process.
fn unnamed_temporary() -> LabResult<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = std::env::temp_dir();
    let refuse = |e: std::io::Error| {
        LabError::usage(format!(
            "cannot create a temporary file in {}: {}",
            dir.display(),
            io_reason(&e)
        ))
    };
    let unnamed =
        std::fs::OpenOptions::new().read(true).write(true).custom_flags(libc::O_TMPFILE).open(&dir);
    match unnamed {
        Ok(f) => Ok(f),
        Err(_) => {
            static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let path = dir.join(format!(".zsmalloc-trace.{}.{n}.spool", std::process::id()));
            let f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)
                .map_err(refuse)?;
            std::fs::remove_file(&path).map_err(refuse)?;
            Ok(f)
        }
    }
}

/// A read cursor over a shared descriptor, by position: cursors do not move each other.
#[derive(Debug)]
pub struct Cursor {
    /// A descriptor of its own on the one open file description (position-free reads).
    file: File,
    pos: u64,
}

impl Read for Cursor {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// The running plan of one pass: the objects live at each line, as the replay will hold them.
struct PlanPass {
    /// Live ids and their lengths (at most 64 KiB each after the clip: they fit a `u32`).
    live: IdMap,
    bytes: u64,
    budget: u64,
    longest: u64,
    payload: bool,
    /// Bytes of the input, for the progress bar (0: unknown, no bar).
    input_bytes: u64,
    plan: TracePlan,
}

impl PlanPass {
    fn new(budget: u64, longest: u64, payload: bool) -> Self {
        let plan = TracePlan::default();
        PlanPass { live: IdMap::new(), bytes: 0, budget, longest, payload, input_bytes: 0, plan }
    }

    /// The pass over an input of `bytes` bytes: a bar by bytes read on a terminal.
    fn of_bytes(mut self, bytes: u64) -> Self {
        self.input_bytes = bytes;
        self
    }

    /// Adds one operation; false once the plan is over the budget.
    #[inline]
    fn add(&mut self, op: &TraceOp) -> bool {
        self.plan.ops += 1;
        match *op {
            TraceOp::Store { id, len } | TraceOp::Malloc { id, len } => {
                let len = (len as u64).min(self.longest).min(u64::from(u32::MAX - 1)) as u32;
                self.plan.ids += 1;
                self.bytes += u64::from(len);
                self.bytes -= u64::from(self.live.insert(id, len).unwrap_or(0));
            }
            TraceOp::Free { id } => self.bytes -= u64::from(self.live.remove(id).unwrap_or(0)),
            TraceOp::Move { from, to } => {
                if let Some(len) = self.live.remove(from) {
                    self.bytes -= u64::from(self.live.insert(to, len).unwrap_or(0));
                }
            }
            TraceOp::Read { .. } | TraceOp::ReadSg { .. } | TraceOp::Write { .. } => {}
            TraceOp::Compact => {}
        }
        let now = super::pool_plan_bytes(self.live.len(), self.bytes, self.payload)
            .saturating_add(self.plan.ids.saturating_mul(PER_ID_BYTES));
        self.plan.bytes = self.plan.bytes.max(now);
        self.plan.bytes <= self.budget
    }

    fn stop(&mut self, at: u64, unit: &'static str) {
        self.plan.stopped_at = at;
        self.plan.stopped_unit = unit;
    }

    /// The plan of `reader`'s operations, each handed to `each` first, read to the end or to
    /// the operation that takes the plan over the budget.
    fn read<R: Read>(
        mut self,
        reader: &mut TraceReader<R>,
        mut each: impl FnMut(&TraceOp, &TraceReader<R>) -> LabResult<()>,
    ) -> LabResult<TracePlan> {
        let mut bar = ByteProgress::new(self.input_bytes, "reading the trace");
        let mut next_tick = 0u64;
        while let Some(op) = reader.next_op()? {
            each(&op, reader)?;
            if self.plan.ops >= next_tick {
                bar.tick(reader.bytes_read());
                next_tick = self.plan.ops + (1 << 16);
            }
            if !self.add(&op) {
                self.stop(reader.line_no(), reader.unit());
                break;
            }
        }
        bar.finish();
        Ok(self.plan)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_stops_at_the_first_line_over_the_budget() {
        let mut pass = PlanPass::new(10_000, 65536, true);
        let mut n = 0;
        while pass.add(&TraceOp::Store { id: n, len: 1000 }) {
            n += 1;
        }
        assert!(n > 0 && n < 20, "{n}");
        assert!(pass.plan.bytes > 10_000);
        let mut all = PlanPass::new(u64::MAX, 65536, true);
        for op in [TraceOp::Store { id: 1, len: 100 }, TraceOp::Free { id: 1 }] {
            assert!(all.add(&op));
        }
        assert_eq!((all.plan.ops, all.plan.ids, all.bytes), (2, 1, 0));
    }
}
