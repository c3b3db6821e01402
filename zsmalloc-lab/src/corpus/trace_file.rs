//! A corpus's trace file: the tier's text trace rewritten as a binary trace with its
//! operations zstd-compressed (docs/TRACE_FORMAT.md), and its SHA-256.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::{LabError, LabResult};
use crate::trace_format::{TraceEncoding, TraceFormat, TraceReader, TraceWriter};

/// Writes the operations of the text trace `text` to `out` as a zstd binary trace on a pool of
/// `page_size`, with `notes` in its header; the operations' count. Nothing is written for a
/// trace without operations (0).
pub fn to_binary(text: &Path, out: &Path, page_size: u32, notes: &[String]) -> LabResult<u64> {
    let mut reader = TraceReader::open(text)?;
    let Some(first) = reader.next_op()? else { return Ok(0) };
    let encoding = TraceEncoding { format: TraceFormat::Binary, zstd: true, page_size };
    let mut w = TraceWriter::create_as(out, notes, encoding)?;
    w.op(&first)?;
    let mut ops = 1;
    while let Some(op) = reader.next_op()? {
        w.op(&op)?;
        ops += 1;
    }
    w.finish()?;
    Ok(ops)
}

/// The SHA-256 of the file at `path`, in lowercase hex.
pub fn sha256(path: &Path) -> LabResult<String> {
    let mut f = File::open(path).map_err(|e| LabError::io("read", path, &e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf).map_err(|e| LabError::io("read", path, &e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
}
