//! A compressor from its name, among those a command offers (its message lists those).

use crate::compressor::Compressor;
use crate::error::Error;

/// The name of the kernel's LZO1X-1 with zero runs encoded, which no userspace library has.
const LZO_RLE: &str = "lzo-rle";

impl Compressor {
    /// The compressor named `s` (surrounding blanks ignored), if it is one of `among`: a
    /// command offers the compressors it measures, and its message lists those.
    pub fn parse(s: &str, among: &'static [Compressor]) -> Result<Compressor, Error> {
        let name = s.trim();
        match among.iter().find(|c| c.name() == name) {
            Some(&c) => Ok(c),
            // Where lzo is offered, its kernel-only variant deserves its own reason.
            None if name == LZO_RLE && among.contains(&Compressor::Lzo) => {
                Err(Error::KernelOnly { accepted: among })
            }
            None => Err(Error::UnknownName { name: name.to_string(), accepted: among }),
        }
    }

    /// `lz4,zstd` -> both, in the order given, each once; at least one.
    pub fn parse_list(s: &str, among: &'static [Compressor]) -> Result<Vec<Compressor>, Error> {
        let mut out = Vec::new();
        for part in s.split(',').filter(|p| !p.trim().is_empty()) {
            let c = Compressor::parse(part, among)?;
            if !out.contains(&c) {
                out.push(c);
            }
        }
        if out.is_empty() {
            return Err(Error::NoName { accepted: among });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LZ4_ZSTD: &[Compressor] = &[Compressor::Lz4, Compressor::Zstd];

    #[test]
    fn names_parse_among_the_offered_ones_in_order_each_once() {
        assert_eq!(
            Compressor::parse_list("zstd,lzo, lz4,lzo", Compressor::ALL).unwrap(),
            [Compressor::Zstd, Compressor::Lzo, Compressor::Lz4]
        );
        assert_eq!(Compressor::parse(" zstd ", LZ4_ZSTD), Ok(Compressor::Zstd));
        let e = Compressor::parse("lzo", LZ4_ZSTD).unwrap_err();
        assert_eq!(e.to_string(), "invalid compressor 'lzo' (accepted: lz4, zstd)");
        let e = Compressor::parse_list(" , ", Compressor::ALL).unwrap_err();
        assert_eq!(e.to_string(), "no compressor given (accepted: lz4, lzo, zstd)");
        assert!(e.is_usage());
    }

    #[test]
    fn lzo_rle_is_refused_with_its_reason_where_lzo_is_offered() {
        let e = Compressor::parse("lzo-rle", Compressor::ALL).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid compressor 'lzo-rle': it exists only in the kernel (LZO1X-1 with zero runs \
             encoded), no userspace library has it (accepted: lz4, lzo, zstd)"
        );
        let e = Compressor::parse("lzo-rle", LZ4_ZSTD).unwrap_err();
        assert_eq!(e.to_string(), "invalid compressor 'lzo-rle' (accepted: lz4, zstd)");
    }
}
