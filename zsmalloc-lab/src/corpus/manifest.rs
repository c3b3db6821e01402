//! A corpus's manifest (`manifest.json` in the corpus's directory): the machine it was recorded
//! on, and for each trace the program, its arguments, how its input was generated, the budget
//! and the tier's settings, the trace's size and checksum. What `corpus record` writes and
//! `corpus study` reads; anyone can rebuild a corpus from it.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::atomic_file::AtomicFile;
use crate::error::{LabError, LabResult};

/// The manifest's file name in a corpus directory.
pub const FILE_NAME: &str = "manifest.json";
/// What `format` holds in every manifest.
pub const FORMAT: &str = "zsmalloc-corpus";
/// The manifest version this build writes and reads.
pub const VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Manifest {
    /// Always [`FORMAT`].
    pub format: String,
    /// [`VERSION`].
    pub version: u32,
    /// The command line that recorded the corpus.
    pub command: String,
    pub machine: Machine,
    pub traces: Vec<TraceEntry>,
}

/// Where the corpus was recorded.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Machine {
    /// `uname -r`.
    pub kernel: String,
    /// The CPU's model name (`/proc/cpuinfo`).
    pub cpu: String,
    pub cores: u32,
    /// The machine's page size in bytes.
    pub page_size: u64,
    /// `zsmalloc --version` of the recorder.
    pub zsmalloc: String,
}

/// One trace: a program's run under the tier with `--record`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TraceEntry {
    /// The trace file, relative to the corpus directory.
    pub file: String,
    /// The program's short name in the corpus (unique per corpus with the budget share and
    /// folio size).
    pub program: String,
    /// What was run: the command and its arguments.
    pub argv: Vec<String>,
    /// How the program's input was generated (a command anyone can run), or "" when it makes
    /// its own.
    pub input: String,
    /// The program's peak RSS untiered, in bytes.
    pub rss_bytes: u64,
    /// The tier's budget in bytes.
    pub budget_bytes: u64,
    /// The budget as a share of `rss_bytes`, as the user wrote it ("1/3").
    pub budget_share: String,
    /// `fifo` or `clock`.
    pub policy: String,
    /// `lz4`, `lzo` or `zstd`.
    pub compressor: String,
    /// The eviction unit in bytes (4096, 16384, 65536).
    pub folio_size: u64,
    /// The pool's page size in bytes.
    pub pool_page_size: u64,
    /// Operations in the trace.
    pub ops: u64,
    /// The trace file's size in bytes.
    pub trace_bytes: u64,
    /// The trace file's SHA-256, in hex.
    pub sha256: String,
    /// The run's wall time in seconds.
    pub wall_s: f64,
    /// Faults the tier served.
    pub faults: u64,
    /// The program's exit status.
    pub exit_status: i32,
}

impl Manifest {
    /// A manifest with no traces yet.
    pub fn new(command: String, machine: Machine) -> Manifest {
        Manifest { format: FORMAT.into(), version: VERSION, command, machine, traces: Vec::new() }
    }

    /// The manifest of the corpus in `dir`.
    pub fn read(dir: &Path) -> LabResult<Manifest> {
        let path = dir.join(FILE_NAME);
        let text = std::fs::read_to_string(&path).map_err(|e| LabError::io("read", &path, &e))?;
        let m: Manifest = serde_json::from_str(&text).map_err(|e| {
            LabError::usage(format!("{}: not a corpus manifest: {e}", path.display()))
        })?;
        if m.format != FORMAT || m.version != VERSION {
            return Err(LabError::usage(format!(
                "{}: a manifest of format {:?} version {}, where this build reads {FORMAT:?} \
                 version {VERSION}",
                path.display(),
                m.format,
                m.version
            )));
        }
        Ok(m)
    }

    /// Writes the manifest into `dir` (whole or not at all).
    pub fn write(&self, dir: &Path) -> LabResult<()> {
        let path = dir.join(FILE_NAME);
        let mut f = AtomicFile::create(&path)?;
        let text = serde_json::to_string_pretty(self)
            .map_err(|e| LabError::runtime(format!("manifest: {e}")))?;
        writeln!(f, "{text}").map_err(|e| LabError::io("write", &path, &e))?;
        f.commit()
    }

    /// Each trace's file, with its path in `dir`.
    pub fn trace_paths<'a>(
        &'a self,
        dir: &'a Path,
    ) -> impl Iterator<Item = (&'a TraceEntry, PathBuf)> + 'a {
        self.traces.iter().map(move |t| (t, dir.join(&t.file)))
    }
}
