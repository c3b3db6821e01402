//! Structs that grow: the caller says how many bytes its struct has (`sizeof` where it was
//! compiled), and the library reads or writes exactly that many.
//!
//! - A caller compiled against an older, shorter struct gets its prefix written (outputs) or has
//!   the fields it does not know taken at their defaults (inputs).
//! - A caller compiled against a newer, longer struct gets the fields this library does not know
//!   zeroed (outputs); as an input, those fields must be zero (they would ask for something this
//!   library cannot do), else `-EINVAL`.
//! - A size below the struct's first published size, or above a page, is `-EINVAL`.
//! - A size that ends inside a field is `-EINVAL`: no version of the struct ends there (every
//!   version ends on a field boundary), and half a field read over its default, or written,
//!   would be a value nobody meant. A size above ours must be a multiple of the struct's
//!   alignment, as every `sizeof` is.

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
    /// Every field, in order ([`fields!`]); [`fields_cover`] proves none is left out.
    const FIELDS: &'static [Field];
}

/// Where one field of a [`Plain`] struct lies.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Field {
    pub(crate) name: &'static str,
    pub(crate) offset: usize,
    pub(crate) size: usize,
    pub(crate) align: usize,
}

impl Field {
    pub(crate) const fn end(&self) -> usize {
        self.offset + self.size
    }
}

/// The size and alignment of the field `field` projects to (a way to name a field's type
/// without writing it twice).
pub(crate) const fn field_shape<T, F>(_field: fn(&T) -> &F) -> (usize, usize) {
    (size_of::<F>(), std::mem::align_of::<F>())
}

/// The [`Field`]s of struct `$t`, listed by name in declaration order.
macro_rules! fields {
    ($t:ty { $($f:ident),+ $(,)? }) => {
        &[$({
            let (size, align) = $crate::sized::field_shape(|s: &$t| &s.$f);
            $crate::sized::Field {
                name: stringify!($f),
                offset: ::core::mem::offset_of!($t, $f),
                size,
                align,
            }
        }),+]
    };
}
pub(crate) use fields;

/// Whether `T::FIELDS` lists every field of `T`: they start at 0, each follows the previous with
/// no gap but its own alignment's padding, and the last ends where `T` does (but for `T`'s
/// trailing padding). A field left out of the list leaves a gap this sees.
pub(crate) const fn fields_cover<T: Plain>() -> bool {
    let fields = T::FIELDS;
    let mut end = 0usize;
    let mut i = 0;
    while i < fields.len() {
        let f = fields[i];
        if f.offset != end.next_multiple_of(f.align) {
            return false;
        }
        end = f.end();
        i += 1;
    }
    end.next_multiple_of(std::mem::align_of::<T>()) == size_of::<T>()
}

/// The sizes of `T` that end on a field boundary, from its first version to ours.
pub(crate) fn boundaries<T: Plain>() -> Vec<usize> {
    let mut sizes: Vec<usize> = T::FIELDS
        .iter()
        .flat_map(|f| [f.offset, f.end()])
        .chain([size_of::<T>()])
        .filter(|s| (T::SIZE_VER1..=size_of::<T>()).contains(s))
        .collect();
    sizes.dedup();
    sizes
}

pub(crate) fn check<T: Plain>(null: bool, size: usize) -> Result<()> {
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
    let (ours, align) = (size_of::<T>(), std::mem::align_of::<T>());
    let cut = T::FIELDS.iter().find(|f| f.offset < size && size < f.end());
    if cut.is_none() && (size <= ours || size.is_multiple_of(align)) {
        return Ok(());
    }
    let accepted = boundaries::<T>().iter().map(usize::to_string).collect::<Vec<_>>().join(", ");
    let why = match cut {
        Some(f) => format!("ends inside {} (bytes {}..{})", f.name, f.offset, f.end()),
        None => format!("is above {ours} and not a multiple of {align}"),
    };
    Err(invalid(format!(
        "struct {} size {size} {why}: the size of a struct of some ABI version ends on a field \
         boundary, one of {accepted}, or is a larger multiple of {align} up to {MAX_STRUCT_SIZE}",
        T::NAME
    )))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[repr(C)]
    #[derive(Clone, Copy)]
    struct TwoVersions {
        first: u64,
        second: u32,
        third: u32,
    }

    // SAFETY: `#[repr(C)]`, integer fields only.
    unsafe impl Plain for TwoVersions {
        const SIZE_VER1: usize = 8;
        const NAME: &'static str = "two_versions";
        const FIELDS: &'static [Field] = fields!(TwoVersions { first, second, third });
    }

    /// The same struct with a field left out of its list.
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Incomplete {
        first: u64,
        second: u32,
        third: u32,
    }

    // SAFETY: `#[repr(C)]`, integer fields only.
    unsafe impl Plain for Incomplete {
        const SIZE_VER1: usize = 8;
        const NAME: &'static str = "incomplete";
        const FIELDS: &'static [Field] = fields!(Incomplete { first, third });
    }

    #[test]
    fn a_field_left_out_of_the_list_is_seen() {
        assert!(fields_cover::<TwoVersions>());
        assert!(!fields_cover::<Incomplete>());
    }

    #[test]
    fn the_accepted_sizes_are_the_field_boundaries_from_the_first_version() {
        for size in 0..=40 {
            let ok = [8, 12, 16, 24, 32, 40].contains(&size);
            assert_eq!(check::<TwoVersions>(false, size).is_ok(), ok, "size {size}");
        }
    }
}
