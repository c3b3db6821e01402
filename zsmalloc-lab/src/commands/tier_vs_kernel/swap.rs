//! The kernel run's swap: what `mkswap` writes (the version-1 header of linux/swap.h) written
//! on the private device's first page, then `swapon` at the highest priority, so the kernel
//! swaps to this device before any other (there is none: the run refuses a machine that
//! already swaps, unless `--yes`). Machine-wide: any process may swap to it while it is on.

use crate::error::{LabError, LabResult};
use crate::kernel::device::Device;

/// `SWAP_FLAG_PREFER` (linux/swap.h): the priority in the low bits is used.
const SWAP_FLAG_PREFER: libc::c_int = 0x8000;
/// The highest priority a swap can have.
pub const PRIORITY: libc::c_int = 32767;

/// The header page of a swap area of `pages` pages of `page` bytes (as `mkswap` makes it, no
/// bad pages, no label, a fixed UUID).
pub fn header(pages: u64, page: usize) -> Vec<u8> {
    let mut h = vec![0u8; page];
    // union swap_header: 1024 boot bytes, then version, last_page, nr_badpages, uuid[16]...
    h[1024..1028].copy_from_slice(&1u32.to_ne_bytes());
    let last = u32::try_from(pages.saturating_sub(1)).unwrap_or(u32::MAX);
    h[1028..1032].copy_from_slice(&last.to_ne_bytes());
    h[1036..1052].copy_from_slice(b"zsmalloc-vs-kern");
    h[page - 10..].copy_from_slice(b"SWAPSPACE2");
    h
}

/// Writes the swap header on `dev` (`pages` pages) and swaps it on at [`PRIORITY`]; registers
/// the swap for [`super::teardown`] before it is on, so every exit takes it off.
pub fn on(dev: &mut Device, pages: u64, page: usize) -> LabResult<String> {
    dev.write_page(0, &header(pages, page))?;
    let path = format!("/dev/zram{}", dev.id());
    let c = std::ffi::CString::new(path.clone()).expect("no NUL");
    let flags = SWAP_FLAG_PREFER | PRIORITY;
    let _blocked = crate::interrupt::Blocked::new();
    // SAFETY: swapon reads the NUL-terminated path, alive for the call.
    if unsafe { libc::swapon(c.as_ptr(), flags) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(LabError::runtime(format!("swapon {path}: {e}")));
    }
    super::teardown::set_swap(&path);
    Ok(path)
}

/// Whether `/proc/swaps` lists `path` (for the checks after the run).
pub fn listed(path: &str) -> bool {
    std::fs::read_to_string("/proc/swaps")
        .map(|s| s.lines().skip(1).any(|l| l.split_whitespace().next() == Some(path)))
        .unwrap_or(false)
}

/// The active swaps (`/proc/swaps` past its heading).
pub fn active() -> Vec<String> {
    std::fs::read_to_string("/proc/swaps")
        .map(|s| {
            s.lines()
                .skip(1)
                .filter_map(|l| l.split_whitespace().next().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_header_is_mkswaps() {
        let h = super::header(1024, 4096);
        assert_eq!(&h[4086..], b"SWAPSPACE2");
        assert_eq!(u32::from_ne_bytes(h[1024..1028].try_into().unwrap()), 1);
        assert_eq!(u32::from_ne_bytes(h[1028..1032].try_into().unwrap()), 1023);
    }
}
