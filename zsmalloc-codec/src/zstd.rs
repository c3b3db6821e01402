//! libzstd through static contexts (`ZSTD_initStaticCCtx`, `ZSTD_initStaticDCtx`): each lives
//! in a buffer made with the codec, sized for its largest input, and libzstd never resizes nor
//! `malloc`s a static context — what does not fit is refused with an error instead. The
//! compressed bytes are the ones any zstd context gives at the level (`ZSTD_compress2`).
//! A static decompression context refuses the legacy (pre-1.0) frame formats rather than
//! allocate for them; this crate writes none.

use std::ptr::NonNull;

use zstd_safe::zstd_sys as sys;

use crate::compressor::Compressor;
use crate::error::Error;

/// `ZSTD_compressBound`.
pub fn bound(len: usize) -> usize {
    zstd_safe::compress_bound(len)
}

/// Where libzstd changes the parameters a level gives (`ZSTD_getCParams`' size classes):
/// the workspace must hold the largest set of any input up to the codec's longest.
const SIZE_CLASSES: [usize; 3] = [16 << 10, 128 << 10, 256 << 10];

/// A compression and a decompression context, each in its own buffer.
pub struct Zstd {
    cctx: NonNull<sys::ZSTD_CCtx>,
    dctx: NonNull<sys::ZSTD_DCtx>,
    // The contexts live in these buffers (never touched here otherwise); a boxed slice's bytes
    // stay where they are when the codec moves.
    _compress_space: Box<[u64]>,
    _decompress_space: Box<[u64]>,
}

// SAFETY: the contexts are plain memory inside the two buffers this value owns, used only
// through `&mut self` or `&self` methods of one thread at a time; libzstd keeps no
// thread-local state for them.
unsafe impl Send for Zstd {}

/// An error code of libzstd, if `code` is one.
fn error_of(code: usize) -> Option<(sys::ZSTD_ErrorCode, &'static str)> {
    // SAFETY: ZSTD_isError and ZSTD_getErrorCode are pure functions of a return code.
    let (is_error, kind) = unsafe { (sys::ZSTD_isError(code), sys::ZSTD_getErrorCode(code)) };
    (is_error != 0).then(|| (kind, zstd_safe::get_error_name(code)))
}

/// 8-byte aligned zeroed space of at least `bytes` (ZSTD_initStatic* needs that alignment);
/// refused, not aborted, when the memory is not there (a huge `max_input` at a high level).
fn space(bytes: usize) -> Result<Box<[u64]>, Error> {
    let words = bytes.div_ceil(8);
    let mut v = Vec::new();
    v.try_reserve_exact(words).map_err(|_| Error::Zstd {
        compressing: false,
        reason: "no memory for the context's workspace (a lower level or a shorter input)",
    })?;
    v.resize(words, 0u64);
    Ok(v.into_boxed_slice())
}

/// Bytes a static compression context needs at `level` for any input up to `max_input`.
fn compress_space_bytes(level: i32, max_input: usize) -> usize {
    let longest = max_input.max(1);
    SIZE_CLASSES
        .iter()
        .map(|&s| s.min(longest))
        .chain([longest])
        .map(|s| {
            // SAFETY: both are pure functions of their arguments (a size of 0 would mean
            // "unknown", which `max(1)` rules out).
            unsafe {
                let params = sys::ZSTD_getCParams(level, s as u64, 0);
                sys::ZSTD_estimateCCtxSize_usingCParams(params)
            }
        })
        .max()
        .unwrap_or(0)
}

impl Zstd {
    /// Contexts for inputs up to `max_input` bytes at `level` (checked by the caller).
    pub fn new(level: i32, max_input: usize) -> Result<Zstd, Error> {
        let placing = |reason| Error::Zstd { compressing: false, reason };
        let mut compress_space = space(compress_space_bytes(level, max_input))?;
        // SAFETY: the workspace is live, 8-byte aligned and as long as stated; the context
        // placed in it is used only while the box lives (it is a field beside it).
        let cctx = unsafe {
            sys::ZSTD_initStaticCCtx(compress_space.as_mut_ptr().cast(), compress_space.len() * 8)
        };
        let cctx = NonNull::new(cctx).ok_or(placing("cannot place a compression context"))?;
        // SAFETY: DCtx size is a pure function.
        let mut decompress_space = space(unsafe { sys::ZSTD_estimateDCtxSize() })?;
        // SAFETY: as for the compression context.
        let dctx = unsafe {
            sys::ZSTD_initStaticDCtx(
                decompress_space.as_mut_ptr().cast(),
                decompress_space.len() * 8,
            )
        };
        let dctx = NonNull::new(dctx).ok_or(placing("cannot place a decompression context"))?;
        // ZSTD_initStaticCCtx leaves every parameter zero (no content size in the frame
        // header, among others), where ZSTD_createCCtx sets the defaults: set them, so the
        // frames are the ones an ordinary context writes.
        // SAFETY: `cctx` is a live context; resetting and setting parameters only write into it.
        let rcs = unsafe {
            [
                sys::ZSTD_CCtx_reset(
                    cctx.as_ptr(),
                    sys::ZSTD_ResetDirective::ZSTD_reset_parameters,
                ),
                sys::ZSTD_CCtx_setParameter(
                    cctx.as_ptr(),
                    sys::ZSTD_cParameter::ZSTD_c_compressionLevel,
                    level,
                ),
            ]
        };
        if let Some((_, reason)) = rcs.into_iter().find_map(error_of) {
            return Err(placing(reason));
        }
        Ok(Zstd {
            cctx,
            dctx,
            _compress_space: compress_space,
            _decompress_space: decompress_space,
        })
    }

    /// `ZSTD_compress2` of `src` into `dst`.
    pub fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, Error> {
        // SAFETY: `cctx` is live and used by this `&mut self` alone; the pointers and lengths
        // describe the two live slices, and libzstd writes at most `dst.len()` bytes.
        let rc = unsafe {
            sys::ZSTD_compress2(
                self.cctx.as_ptr(),
                dst.as_mut_ptr().cast(),
                dst.len(),
                src.as_ptr().cast(),
                src.len(),
            )
        };
        let Some((code, reason)) = error_of(rc) else {
            return Ok(rc);
        };
        // A failed frame stays open, and zstd refuses most setters mid-frame: abandon it.
        // SAFETY: resetting the session of a live context cannot fail and only writes into it.
        unsafe {
            sys::ZSTD_CCtx_reset(
                self.cctx.as_ptr(),
                sys::ZSTD_ResetDirective::ZSTD_reset_session_only,
            )
        };
        Err(if code == sys::ZSTD_ErrorCode::ZSTD_error_dstSize_tooSmall {
            Error::OutputTooSmall(Compressor::Zstd)
        } else {
            Error::Zstd { compressing: true, reason }
        })
    }

    /// `ZSTD_decompressDCtx` of `src` (one frame or more) into `dst`.
    #[inline]
    pub fn decompress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, Error> {
        // SAFETY: `dctx` is live and used by this `&mut self` alone; libzstd reads at most
        // `src.len()` bytes and writes at most `dst.len()` bytes, whatever `src` holds.
        let rc = unsafe {
            sys::ZSTD_decompressDCtx(
                self.dctx.as_ptr(),
                dst.as_mut_ptr().cast(),
                dst.len(),
                src.as_ptr().cast(),
                src.len(),
            )
        };
        match error_of(rc) {
            None => Ok(rc),
            Some(_) => Err(Error::Corrupt(Compressor::Zstd)),
        }
    }
}
