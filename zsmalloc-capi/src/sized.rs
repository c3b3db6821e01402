//! Structs that grow: the caller says how many bytes its struct has (`sizeof` where it was
//! compiled), and the library reads or writes exactly that many.
//!
//! - A caller compiled against an older, shorter struct gets its prefix written (outputs) or has
//!   the fields it does not know taken at their defaults (inputs).
//! - A caller compiled against a newer, longer struct gets the fields this library does not know
//!   zeroed (outputs); as an input, those fields must be zero (they would ask for something this
//!   library cannot do), else `-EINVAL`.
//! - A size below the struct's first published size, or above a page, is `-EINVAL`.

use std::mem::size_of;

use zsmalloc_core::Result;

use crate::errors::invalid;

/// Sizes accepted from callers are at most this (a struct is never that large).
const MAX_STRUCT_SIZE: usize = 4096;

/// A `#[repr(C)]` struct of integers: every byte pattern is a valid value.
///
/// # Safety
/// Implement only for `#[repr(C)]` structs whose fields are all integers, raw pointers or
/// arrays of them.
pub(crate) unsafe trait Plain: Copy {
    /// The struct's size in ABI version 1, its first.
    const SIZE_VER1: usize;
    /// Its C name, for messages.
    const NAME: &'static str;
}

fn check<T: Plain>(null: bool, size: usize) -> Result<()> {
    if null {
        return Err(invalid(format!("struct {} pointer is NULL", T::NAME)));
    }
    if !(T::SIZE_VER1..=MAX_STRUCT_SIZE).contains(&size) {
        return Err(invalid(format!(
            "struct {} size {size} is outside {}..={MAX_STRUCT_SIZE}",
            T::NAME,
            T::SIZE_VER1
        )));
    }
    Ok(())
}

/// Writes `value` into the caller's struct of `size` bytes at `dst`.
///
/// # Safety
/// `dst` is NULL or writable for `size` bytes (any alignment).
pub(crate) unsafe fn write_out<T: Plain>(dst: *mut T, size: usize, value: &T) -> Result<()> {
    check::<T>(dst.is_null(), size)?;
    let ours = size_of::<T>();
    let dst = dst.cast::<u8>();
    // SAFETY: `dst` is writable for `size` bytes (caller's promise), `value` readable for
    // `ours`; byte copies need no alignment and the regions are distinct.
    unsafe {
        std::ptr::copy_nonoverlapping((value as *const T).cast::<u8>(), dst, size.min(ours));
        if size > ours {
            std::ptr::write_bytes(dst.add(ours), 0, size - ours);
        }
    }
    Ok(())
}

/// Reads the caller's struct of `size` bytes at `src` over `defaults`.
///
/// # Safety
/// `src` is NULL or readable for `size` bytes (any alignment).
pub(crate) unsafe fn read_in<T: Plain>(src: *const T, size: usize, defaults: T) -> Result<T> {
    check::<T>(src.is_null(), size)?;
    let ours = size_of::<T>();
    let mut value = defaults;
    let src = src.cast::<u8>();
    // SAFETY: `src` is readable for `size` bytes (caller's promise); `value` is a `Plain` struct
    // of `ours` bytes, valid for any bytes written into it.
    unsafe {
        std::ptr::copy_nonoverlapping(src, (&mut value as *mut T).cast::<u8>(), size.min(ours));
    }
    if size > ours {
        // SAFETY: as above; `size - ours` bytes past `ours` are in the caller's struct.
        let tail = unsafe { std::slice::from_raw_parts(src.add(ours), size - ours) };
        if let Some(at) = tail.iter().position(|&b| b != 0) {
            return Err(invalid(format!(
                "struct {} sets byte {} beyond the {ours} bytes this library knows (ABI version {})",
                T::NAME,
                ours + at,
                crate::types::ZS_ABI_VERSION
            )));
        }
    }
    Ok(value)
}
