//! The tier's compressor, named by the command in `ZSMALLOC_TIER_COMPRESSOR` (lz4 when unset:
//! the library loaded by hand with a budget alone) and made once at the start, so that the
//! handler compresses and decompresses without allocating (the codec crate's contract) and
//! liblzo2, for `lzo`, is loaded before any fault is served.

use zsmalloc_codec::{Codec, Compressor, DEFAULT_ZSTD_LEVEL};
use zsmalloc_tier::launch::{COMPRESSORS, COMPRESSOR_VAR, DEFAULT_COMPRESSOR};

/// The compressor the variable's value names, or the line refusing it.
pub fn compressor(value: Option<&str>) -> Result<Compressor, String> {
    match value {
        None => Ok(DEFAULT_COMPRESSOR),
        Some(v) => Compressor::parse(v, COMPRESSORS).map_err(|e| format!("{COMPRESSOR_VAR}: {e}")),
    }
}

/// A codec of `compressor` for inputs of up to `unit` bytes (a page, a folio; zstd at zram's
/// default level).
pub fn new(compressor: Compressor, unit: usize) -> Result<Codec, String> {
    Codec::new(compressor, DEFAULT_ZSTD_LEVEL, unit).map_err(|e| format!("{COMPRESSOR_VAR}: {e}"))
}

/// The room a compressed unit of `unit` bytes (a page, a folio), or one stored whole, needs in
/// the handler's buffer.
pub fn buffer_len(unit: usize) -> usize {
    zsmalloc_codec::bound(unit).max(unit) + 64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::PAGE;

    #[test]
    fn the_variable_names_a_compressor_or_is_refused_in_one_line() {
        assert_eq!(compressor(None), Ok(Compressor::Lz4));
        assert_eq!(compressor(Some("zstd")), Ok(Compressor::Zstd));
        assert_eq!(
            compressor(Some("nope")).unwrap_err(),
            "ZSMALLOC_TIER_COMPRESSOR: invalid compressor 'nope' (accepted: lz4, lzo, zstd)"
        );
        let mut codec = new(Compressor::Zstd, PAGE).expect("zstd needs no library");
        let page: Vec<u8> = (0..PAGE).map(|i| (i / 64) as u8).collect();
        let mut packed = vec![0u8; buffer_len(PAGE)];
        let n = codec.compress(&page, &mut packed).expect("fits");
        let mut back = vec![0u8; PAGE];
        assert_eq!(codec.decompress(&packed[..n], &mut back), Ok(PAGE));
        assert_eq!(back, page);
    }
}
