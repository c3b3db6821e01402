//! LZO1X-1 from the reference library, liblzo2 (Debian: `liblzo2-2`, loaded at run time), the
//! algorithm behind the kernel's `lzo` compressor (`lib/lzo/lzo1x_compress.c` is a port of it).
//! Two calls: `lzo1x_1_compress`, into a dictionary made with the codec, and
//! `lzo1x_decompress_safe`, which takes none; neither allocates.
//!
//! What differs from the kernel: liblzo2's LZO1X-1 hashes into a 2^14-entry dictionary, the
//! kernel's port into 2^13 entries, so compressed lengths differ a little (the format is the
//! same: either decompressor reads the other's output). The kernel's `lzo-rle` (the default of
//! zram since 5.1) adds a run-length encoding of zero runs that exists only in the kernel; it
//! has no userspace library.

use std::os::raw::{c_int, c_uchar, c_ulong, c_void};
use std::sync::OnceLock;

use crate::compressor::Compressor;
use crate::error::{Error, Unavailable};

/// `LZO_E_OK`.
const LZO_E_OK: c_int = 0;
/// `LZO_VERSION` of the header the declarations below follow (2.10).
const LZO_VERSION: u32 = 0x20a0;
/// `LZO1X_1_MEM_COMPRESS`: 16384 dictionary entries of one pointer each.
const WORK_BYTES: usize = 16384 * std::mem::size_of::<*const u8>();

/// `__lzo_init_v2`: the version and the sizes of nine types, checked against the library's.
type InitFn = unsafe extern "C" fn(
    u32,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
) -> c_int;
/// `lzo1x_1_compress` and `lzo1x_decompress_safe`: (src, src_len, dst, &dst_len, wrkmem).
type CodecFn =
    unsafe extern "C" fn(*const c_uchar, c_ulong, *mut c_uchar, *mut c_ulong, *mut c_void) -> c_int;

/// The two calls, from liblzo2 loaded at run time: the workspace builds and runs without the
/// library, and only the `lzo` compressor needs it.
struct Library {
    compress: CodecFn,
    decompress: CodecFn,
}

/// The library's shared object names, newest first.
const SONAMES: [&[u8]; 2] = [b"liblzo2.so.2\0", b"liblzo2.so\0"];

static LIBRARY: OnceLock<Result<Library, Unavailable>> = OnceLock::new();

/// liblzo2, loaded and initialised once (`lzo_init()`: the library checks that its types are
/// the ones declared here).
fn library() -> Result<&'static Library, Error> {
    LIBRARY.get_or_init(load).as_ref().map_err(|&e| Error::Unavailable(e))
}

fn load() -> Result<Library, Unavailable> {
    // SAFETY: dlopen reads a NUL-terminated name; the handle is kept for the process's life
    // (never dlclosed), so the symbols below stay valid.
    let handle = SONAMES
        .iter()
        .map(|n| unsafe { libc::dlopen(n.as_ptr().cast(), libc::RTLD_NOW | libc::RTLD_LOCAL) })
        .find(|h| !h.is_null())
        .ok_or(Unavailable::NotInstalled)?;
    let symbol = |name: &'static str| -> Result<*mut c_void, Unavailable> {
        let c_name = format!("{name}\0");
        // SAFETY: `handle` is a live dlopen handle and `c_name` is NUL-terminated.
        let p = unsafe { libc::dlsym(handle, c_name.as_ptr().cast()) };
        if p.is_null() {
            Err(Unavailable::NoSymbol(name))
        } else {
            Ok(p)
        }
    };
    // SAFETY: the symbols are liblzo2 2.x's functions of these C signatures (lzo/lzoconf.h,
    // lzo/lzo1x.h); a function pointer and a data pointer have the same size here.
    let (init, compress, decompress) = unsafe {
        (
            std::mem::transmute::<*mut c_void, InitFn>(symbol("__lzo_init_v2")?),
            std::mem::transmute::<*mut c_void, CodecFn>(symbol("lzo1x_1_compress")?),
            std::mem::transmute::<*mut c_void, CodecFn>(symbol("lzo1x_decompress_safe")?),
        )
    };
    let ptr = std::mem::size_of::<*const u8>() as c_int;
    let long = std::mem::size_of::<c_ulong>() as c_int;
    // SAFETY: __lzo_init_v2 only compares its arguments with the library's own sizes (short,
    // int, long, lzo_uint32_t, lzo_uint, the dictionary entry, char *, void *, and
    // lzo_callback_t: three function pointers, a pointer and two lzo_xint).
    let rc = unsafe {
        init(
            LZO_VERSION,
            std::mem::size_of::<i16>() as c_int,
            std::mem::size_of::<c_int>() as c_int,
            long,
            4,
            long,
            ptr,
            ptr,
            ptr,
            6 * ptr,
        )
    };
    if rc != LZO_E_OK {
        return Err(Unavailable::InitFailed(rc));
    }
    Ok(Library { compress, decompress })
}

/// The largest output of a `len`-byte input (liblzo2's documented bound).
pub fn bound(len: usize) -> usize {
    len + len / 16 + 64 + 3
}

/// An LZO1X-1 compressor with its work memory.
pub struct Lzo {
    lib: &'static Library,
    work: Box<[u64]>,
}

impl Lzo {
    /// Loads liblzo2 on first use (dlopen allocates: here, never in a call below).
    pub fn new() -> Result<Lzo, Error> {
        Ok(Lzo { lib: library()?, work: vec![0u64; WORK_BYTES / 8].into_boxed_slice() })
    }

    /// Compresses `src` into `dst`, which must hold [`bound`] bytes: LZO1X-1 takes no output
    /// limit, so a shorter buffer is refused before the call.
    pub fn compress(&mut self, src: &[u8], dst: &mut [u8]) -> Result<usize, Error> {
        if dst.len() < bound(src.len()) {
            return Err(Error::OutputTooSmall(Compressor::Lzo));
        }
        let mut out = dst.len() as c_ulong;
        // SAFETY: `src` is read for its length; `dst` holds at least the bound LZO1X-1 can
        // write for that length; `work` is LZO1X_1_MEM_COMPRESS bytes, aligned for pointers;
        // `out` is a live local the call writes the length to.
        let rc = unsafe {
            (self.lib.compress)(
                src.as_ptr(),
                src.len() as c_ulong,
                dst.as_mut_ptr(),
                &mut out,
                self.work.as_mut_ptr().cast(),
            )
        };
        if rc != LZO_E_OK {
            return Err(Error::Lzo(rc));
        }
        Ok(out as usize)
    }

    /// Decompresses `src` into `dst`: corrupt input, or an output that does not fit, refused.
    #[inline]
    pub fn decompress(&self, src: &[u8], dst: &mut [u8]) -> Result<usize, Error> {
        let mut out = dst.len() as c_ulong;
        // SAFETY: the "safe" decompressor reads at most `src.len()` bytes of `src` and writes
        // at most `out` (= `dst.len()`) bytes into `dst`; it takes no work memory (NULL).
        let rc = unsafe {
            (self.lib.decompress)(
                src.as_ptr(),
                src.len() as c_ulong,
                dst.as_mut_ptr(),
                &mut out,
                std::ptr::null_mut(),
            )
        };
        if rc == LZO_E_OK {
            Ok(out as usize)
        } else {
            Err(Error::Corrupt(Compressor::Lzo))
        }
    }
}
