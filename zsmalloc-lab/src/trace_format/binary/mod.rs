//! The binary trace (docs/TRACE_FORMAT.md, byte by byte): the same operations as the text
//! trace in a few bytes each, for traces of 10^8 operations and more.
//!
//! A header (magic, version, flags, page size, the generating command line and notes), then
//! the operations, optionally one zstd stream: an op-code byte, the handle as a zigzag varint
//! delta from the previous handle, the length as a varint, and an end record holding the
//! count of operations, so a stream cut at an operation boundary is still seen to be cut.

mod decode;
mod encode;

pub use decode::BinaryReader;
pub use encode::BinaryEncoder;

/// The first bytes of every binary trace: 0x89 cannot begin UTF-8 text, so no text trace
/// starts with them.
pub const MAGIC: [u8; 8] = *b"\x89ZSTRACE";

/// The layout version this code writes and reads.
pub const VERSION: u8 = 1;

/// Flag bit: the operations (everything after the header) are one zstd stream.
pub const FLAG_ZSTD: u8 = 1;

/// The longest header string (the command line, the notes), in bytes.
pub const MAX_HEADER_STRING: usize = 4096;

/// The op codes; 0 ends the operations.
pub(crate) mod code {
    pub const END: u8 = 0;
    pub const STORE: u8 = 1;
    pub const FREE: u8 = 2;
    pub const READ: u8 = 3;
    pub const COMPACT: u8 = 4;
    pub const MALLOC: u8 = 5;
    pub const WRITE: u8 = 6;
    pub const READ_SG: u8 = 7;
    pub const MOVE: u8 = 8;
}

/// What the header says besides the layout.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BinaryHeader {
    /// Operations are zstd-compressed.
    pub zstd: bool,
    /// The page size of the pool that made the trace (0: not known).
    pub page_size: u32,
    /// The command line that wrote the trace.
    pub command: String,
    /// Free text (the text trace's header comments), lines separated by `\n`.
    pub notes: String,
}

/// The zigzag form of a signed delta: small magnitudes either way are small numbers.
#[inline]
pub(crate) fn zigzag(delta: i64) -> u64 {
    ((delta << 1) ^ (delta >> 63)) as u64
}

#[inline]
pub(crate) fn unzigzag(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

/// Appends `v` as a LEB128 varint (7 bits a byte, low first; at most 10 bytes).
#[inline]
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Why a varint was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VarintError {
    /// The bytes ended inside it.
    Truncated,
    /// Over 10 bytes, or over 64 bits.
    TooLong,
}

/// The varint at the start of `b` and the bytes it took.
#[inline]
pub(crate) fn get_varint(b: &[u8]) -> Result<(u64, usize), VarintError> {
    let mut v: u64 = 0;
    for (i, &byte) in b.iter().enumerate().take(10) {
        let bits = u64::from(byte & 0x7f);
        if i == 9 && byte > 1 {
            return Err(VarintError::TooLong);
        }
        v |= bits << (7 * i);
        if byte & 0x80 == 0 {
            return Ok((v, i + 1));
        }
    }
    if b.len() >= 10 {
        Err(VarintError::TooLong)
    } else {
        Err(VarintError::Truncated)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace_format::TraceOp;
    use proptest::prelude::*;

    fn encode(ops: &[TraceOp], zstd: bool) -> Vec<u8> {
        let header =
            BinaryHeader { zstd, page_size: 4096, command: "zsmalloc x".into(), notes: "n".into() };
        let mut e = BinaryEncoder::new(Vec::new(), &header).unwrap();
        for op in ops {
            e.op(op).unwrap();
        }
        e.finish().unwrap()
    }

    fn decode(bytes: &[u8]) -> Result<Vec<TraceOp>, String> {
        let mut r = BinaryReader::new(bytes, "t").map_err(|e| e.to_string())?;
        let mut ops = Vec::new();
        while let Some(op) = r.next_op().map_err(|e| e.to_string())? {
            ops.push(op);
        }
        Ok(ops)
    }

    fn any_op() -> impl Strategy<Value = TraceOp> {
        let id = prop_oneof![0u64..64, any::<u64>()];
        let len = prop_oneof![0usize..5000, any::<usize>()];
        prop_oneof![
            (id.clone(), len.clone()).prop_map(|(id, len)| TraceOp::Store { id, len }),
            id.clone().prop_map(|id| TraceOp::Free { id }),
            (id.clone(), len.clone()).prop_map(|(id, len)| TraceOp::Read { id, len }),
            Just(TraceOp::Compact),
            (id.clone(), len.clone()).prop_map(|(id, len)| TraceOp::Malloc { id, len }),
            (id.clone(), len.clone()).prop_map(|(id, len)| TraceOp::Write { id, len }),
            (id.clone(), len).prop_map(|(id, len)| TraceOp::ReadSg { id, len }),
            (id.clone(), id).prop_map(|(from, to)| TraceOp::Move { from, to }),
        ]
    }

    proptest! {
        #[test]
        fn operations_round_trip_and_every_cut_is_refused(
            ops in proptest::collection::vec(any_op(), 0..300),
            zstd in any::<bool>(),
            cut in any::<proptest::sample::Index>(),
        ) {
            let bytes = encode(&ops, zstd);
            prop_assert_eq!(decode(&bytes).unwrap(), ops);
            let at = cut.index(bytes.len());
            prop_assert!(decode(&bytes[..at]).is_err(), "cut at {} of {}", at, bytes.len());
        }
    }

    #[test]
    fn a_long_stream_crosses_the_reader_buffer_and_the_writer_batch() {
        let ops: Vec<TraceOp> = (0..200_000u64)
            .map(|i| match i % 4 {
                0 => TraceOp::Store { id: i, len: (i % 4000) as usize },
                1 => TraceOp::Read { id: i - 1, len: 7 },
                2 => TraceOp::Move { from: i - 2, to: u64::MAX - i },
                _ => TraceOp::Free { id: u64::MAX - i + 1 },
            })
            .collect();
        for zstd in [false, true] {
            assert_eq!(decode(&encode(&ops, zstd)).unwrap(), ops);
        }
    }

    #[test]
    fn varints_and_zigzag_round_trip() {
        for v in [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX - 1, u64::MAX] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            assert!(b.len() <= 10);
            assert_eq!(get_varint(&b), Ok((v, b.len())), "{v}");
            assert_eq!(get_varint(&b[..b.len() - 1]), Err(VarintError::Truncated));
        }
        for d in [0, 1, -1, 63, -64, i64::MAX, i64::MIN] {
            assert_eq!(unzigzag(zigzag(d)), d);
        }
        assert_eq!((zigzag(0), zigzag(-1), zigzag(1)), (0, 1, 2));
        assert_eq!(get_varint(&[0xff; 11]), Err(VarintError::TooLong));
        assert_eq!(
            get_varint(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]),
            Err(VarintError::TooLong)
        );
    }
}
