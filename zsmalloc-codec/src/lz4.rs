//! liblz4 through `lz4-sys`: `LZ4_compress_default` keeps its state on the stack (the library
//! is built without `LZ4_HEAPMODE`) and `LZ4_decompress_safe` takes none, so neither allocates.

use crate::compressor::Compressor;
use crate::error::Error;

/// `LZ4_compressBound`: 0 above `LZ4_MAX_INPUT_SIZE`.
pub fn bound(len: usize) -> usize {
    let n = i32::try_from(len).unwrap_or(i32::MAX);
    // SAFETY: LZ4_compressBound is a pure function of its argument.
    unsafe { lz4_sys::LZ4_compressBound(n) }.max(0) as usize
}

/// `LZ4_compress_default` (acceleration 1, zram's default) of `src` into `dst`.
pub fn compress(src: &[u8], dst: &mut [u8]) -> Result<usize, Error> {
    let sl = i32::try_from(src.len()).map_err(|_| Error::InputTooLong {
        compressor: Compressor::Lz4,
        len: src.len(),
        max: i32::MAX as usize,
    })?;
    let dl = i32::try_from(dst.len()).unwrap_or(i32::MAX);
    // SAFETY: the pointers and lengths describe the two live slices; liblz4 reads `sl` bytes
    // of `src` and writes at most `dl` bytes into `dst`.
    let n = unsafe {
        lz4_sys::LZ4_compress_default(src.as_ptr().cast(), dst.as_mut_ptr().cast(), sl, dl)
    };
    usize::try_from(n).ok().filter(|&n| n > 0).ok_or(Error::OutputTooSmall(Compressor::Lz4))
}

/// `LZ4_decompress_safe` of `src` into `dst`.
#[inline]
pub fn decompress(src: &[u8], dst: &mut [u8]) -> Result<usize, Error> {
    let corrupt = |_| Error::Corrupt(Compressor::Lz4);
    let sl = i32::try_from(src.len()).map_err(corrupt)?;
    let dl = i32::try_from(dst.len()).unwrap_or(i32::MAX);
    // SAFETY: the pointers and lengths describe the two live slices; the "safe" decoder never
    // reads or writes outside them, whatever `src` holds.
    let n = unsafe {
        lz4_sys::LZ4_decompress_safe(src.as_ptr().cast(), dst.as_mut_ptr().cast(), sl, dl)
    };
    usize::try_from(n).map_err(corrupt)
}
