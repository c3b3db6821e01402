//! The trace format (docs/LAB.md, "Trace format"): one operation per line.
//!
//! ```text
//! # comment (ignored, as are blank lines)
//! store <id> <len>      allocate and write an object of <len> bytes owned by <id>
//! read <id> <len>       a read section of the object of <id> (<len> = its length)
//! free <id>             free the object of <id> (an empty <id>: no-op)
//! compact               zs_compact()
//! malloc <id> <len>     allocate without writing (zs_malloc); `write` fills it
//! write <id> <len>      write the whole object of <id> (zs_obj_write)
//! read_sg <id> <len>    a scatter-gather read section (zs_obj_read_sg_begin)
//! move <from> <to>      zs_handle_move(): <to> now owns the object of <from>
//! ```
//!
//! `<id>` names a handle: any unsigned 64-bit number, decimal or `0x` hexadecimal (the C shim
//! writes the address of the `struct zs_handle`). `<len>` is decimal. Fields are separated by
//! spaces or tabs. Only the first four operations are needed to describe a zram-like workload.
//!
//! The same operations have a compact binary form ([`binary`], docs/TRACE_FORMAT.md), told
//! apart by its magic bytes wherever a trace is read.

pub mod binary;
mod peeked;
mod reader;
mod writer;

use zsmalloc_core::text_input::escape;

pub use reader::TraceReader;
pub use writer::{TraceEncoding, TraceWriter};

/// The two forms of a trace: one operation a line (docs/LAB.md, "Trace format"), or the
/// compact binary form (docs/TRACE_FORMAT.md). The variants carry no doc comment, so a flag's
/// help lists them on one line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum TraceFormat {
    #[default]
    Text,
    Binary,
}

/// One operation of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceOp {
    Store { id: u64, len: usize },
    Free { id: u64 },
    Read { id: u64, len: usize },
    Compact,
    Malloc { id: u64, len: usize },
    Write { id: u64, len: usize },
    ReadSg { id: u64, len: usize },
    Move { from: u64, to: u64 },
}

fn parse_id(s: &str) -> Result<u64, String> {
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => s.parse::<u64>(),
    };
    r.map_err(|_| format!("'{}' is not a handle id (unsigned decimal or 0x-hex)", escape(s)))
}

fn parse_len(s: &str) -> Result<usize, String> {
    s.parse::<usize>().map_err(|_| format!("'{}' is not a length (unsigned decimal)", escape(s)))
}

/// A decimal number at the start of `s` (at least one digit), and what follows it; `None` when
/// there is none or it overflows.
#[inline]
fn leading_decimal(s: &[u8]) -> Option<(u64, &[u8])> {
    let digits = s.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 20 {
        return None;
    }
    let mut n: u64 = 0;
    for &b in &s[..digits] {
        n = n.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some((n, &s[digits..]))
}

/// The lines the lab writes (`store`, `read`, `free` with decimal fields and single spaces),
/// read without splitting into fields; `None` for anything else, which the general parser
/// then reads (or refuses) as it always has.
#[inline]
fn parse_common(line: &[u8]) -> Option<TraceOp> {
    let (kind, rest) = if let Some(r) = line.strip_prefix(b"store ") {
        (0, r)
    } else if let Some(r) = line.strip_prefix(b"read ") {
        (1, r)
    } else if let Some(r) = line.strip_prefix(b"free ") {
        (2, r)
    } else {
        return None;
    };
    let (id, rest) = leading_decimal(rest)?;
    if kind == 2 {
        return rest.is_empty().then_some(TraceOp::Free { id });
    }
    let (len, rest) = leading_decimal(rest.strip_prefix(b" ")?)?;
    if !rest.is_empty() {
        return None;
    }
    let len = usize::try_from(len).ok()?;
    Some(if kind == 0 { TraceOp::Store { id, len } } else { TraceOp::Read { id, len } })
}

impl TraceOp {
    /// Parses one line; `Ok(None)` for blank and comment lines. Nothing is allocated unless
    /// the line is refused.
    #[inline]
    pub fn parse(line: &str) -> Result<Option<TraceOp>, String> {
        if let Some(op) = parse_common(line.as_bytes()) {
            return Ok(Some(op));
        }
        TraceOp::parse_fields(line)
    }

    /// Any line, field by field (the general form of [`TraceOp::parse`]).
    fn parse_fields(line: &str) -> Result<Option<TraceOp>, String> {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            return Ok(None);
        }
        let mut fields = line.split_ascii_whitespace();
        let name = fields.next().unwrap_or_default();
        let (a, b, extra) = (fields.next(), fields.next(), fields.next().is_some());
        let given = usize::from(a.is_some()) + usize::from(b.is_some()) + usize::from(extra);
        let usage =
            |n: usize, usage: &str| format!("'{}' takes {n} field(s): {usage}", escape(name));
        // The usage text is made only for a refusal: a line read costs no allocation.
        let two = |usage_text: &dyn Fn() -> String| match (a, b, extra) {
            (Some(a), Some(b), false) => Ok((a, b)),
            _ => Err(usage(2, &usage_text())),
        };
        let op = match name {
            "store" | "malloc" | "write" | "read" | "read_sg" => {
                let (id, len) = two(&|| format!("{name} <id> <len>"))?;
                let (id, len) = (parse_id(id)?, parse_len(len)?);
                match name {
                    "store" => TraceOp::Store { id, len },
                    "malloc" => TraceOp::Malloc { id, len },
                    "write" => TraceOp::Write { id, len },
                    "read" => TraceOp::Read { id, len },
                    _ => TraceOp::ReadSg { id, len },
                }
            }
            "free" => match (a, given) {
                (Some(id), 1) => TraceOp::Free { id: parse_id(id)? },
                _ => return Err(usage(1, "free <id>")),
            },
            "move" => {
                let (from, to) = two(&|| "move <from> <to>".to_string())?;
                TraceOp::Move { from: parse_id(from)?, to: parse_id(to)? }
            }
            "compact" if given == 0 => TraceOp::Compact,
            "compact" => return Err(usage(0, "compact")),
            other => {
                return Err(format!(
                    "unknown operation '{}' (expected store, read, free, compact, malloc, write, \
                     read_sg or move)",
                    escape(other)
                ))
            }
        };
        Ok(Some(op))
    }

    /// The line for this operation (no newline).
    pub fn to_line(&self) -> String {
        match *self {
            TraceOp::Store { id, len } => format!("store {id} {len}"),
            TraceOp::Free { id } => format!("free {id}"),
            TraceOp::Read { id, len } => format!("read {id} {len}"),
            TraceOp::Compact => "compact".into(),
            TraceOp::Malloc { id, len } => format!("malloc {id} {len}"),
            TraceOp::Write { id, len } => format!("write {id} {len}"),
            TraceOp::ReadSg { id, len } => format!("read_sg {id} {len}"),
            TraceOp::Move { from, to } => format!("move {from} {to}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip() {
        for op in [
            TraceOp::Store { id: 1, len: 100 },
            TraceOp::Free { id: 1 },
            TraceOp::Read { id: 7, len: 3 },
            TraceOp::Compact,
            TraceOp::Malloc { id: 2, len: 9 },
            TraceOp::Write { id: 2, len: 9 },
            TraceOp::ReadSg { id: 2, len: 9 },
            TraceOp::Move { from: 2, to: 3 },
        ] {
            assert_eq!(TraceOp::parse(&op.to_line()).unwrap(), Some(op));
        }
        assert_eq!(
            TraceOp::parse("  store 0x7ffd1000\t64 ").unwrap(),
            Some(TraceOp::Store { id: 0x7ffd1000, len: 64 })
        );
        assert_eq!(TraceOp::parse("# hi").unwrap(), None);
        for (line, op) in [
            ("store 18446744073709551615 5", Some(TraceOp::Store { id: u64::MAX, len: 5 })),
            ("read 3 0", Some(TraceOp::Read { id: 3, len: 0 })),
            ("free 0", Some(TraceOp::Free { id: 0 })),
            ("store 18446744073709551616 5", None),
            ("store 1  5", None),
            ("store 1 5 ", None),
            ("free 1 2", None),
            ("read 0x10 4", None),
        ] {
            assert_eq!(parse_common(line.as_bytes()), op, "{line}");
            assert_eq!(
                TraceOp::parse(line).ok().flatten(),
                TraceOp::parse_fields(line).ok().flatten(),
                "{line}: the common form reads as the general one"
            );
        }
        assert_eq!(TraceOp::parse("").unwrap(), None);
        for bad in ["stor 1 2", "store 1", "store x 2", "free", "compact 1", "read 1 -3"] {
            assert!(TraceOp::parse(bad).is_err(), "{bad}");
        }
    }
}
