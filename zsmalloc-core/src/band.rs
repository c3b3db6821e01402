//! The multi-page band (docs/DESIGN.md, Objects of several pages): the rules of the RFC
//! "mTHP-friendly compression in zsmalloc and zram based on multi-pages" (2024) as numbers,
//! at the bottom of the crate so that the configuration, the class table and the pool share them.
//!
//! With a multi-page size `M = page << K` (K in 1..=4), the class indices after the base band
//! (mainline's classes up to a page) are a second band: classes of size `page + j * d1`,
//! `d1 = M >> 8`, `j = 0..n1`, `n1 = ceil((M - page) / d1) + 1`. A class larger than a page is
//! made of order-K units (`page << K` bytes of adjacent pages, a compound page); the others of
//! single pages (order 0).

/// The largest multi-page order (`M = page << 4`).
pub const MAX_ORDER: u32 = 4;
/// The longest object a header word can describe (its length field is 16 bits, `len - 1`).
pub const MAX_OBJECT: u32 = 65536;

/// The multi-page sizes a page size allows: `page << K` for K in 1..=4, at most
/// [`MAX_OBJECT`] (none for 64 KiB pages).
pub fn sizes_for(page: u32) -> Vec<u32> {
    (1..=MAX_ORDER)
        .map(|k| u64::from(page) << k)
        .filter(|&m| m > u64::from(page) && m <= u64::from(MAX_OBJECT))
        .map(|m| m as u32)
        .collect()
}

/// What a page size allows, for a refusal: `with 16384-byte pages: 0 (off), 32768 or 65536`.
fn allowed(page: u32) -> String {
    let sizes: Vec<String> = sizes_for(page).iter().map(u32::to_string).collect();
    match sizes.split_last() {
        None => format!(
            "with {page}-byte pages only 0 (off): a band object above a page would be above \
             {MAX_OBJECT} bytes, the longest an object header records"
        ),
        Some((last, [])) => format!("with {page}-byte pages: 0 (off) or {last}"),
        Some((last, rest)) => {
            format!("with {page}-byte pages: 0 (off), {} or {last}", rest.join(", "))
        }
    }
}

/// Checks a multi-page size against the page size: `Ok(0)` for 0 (no band), else `Ok(K)` when
/// `multi == page << K` with K in 1..=4 and `multi` at most 64 KiB; the error names the limit
/// that was hit and the sizes the page size allows.
pub fn order_of(page: u32, multi: u32) -> Result<u32, String> {
    if multi == 0 {
        return Ok(0);
    }
    let shifted = page.is_power_of_two()
        && multi.is_power_of_two()
        && multi > page
        && multi / page <= 1 << MAX_ORDER;
    if shifted && multi <= MAX_OBJECT {
        return Ok((multi / page).trailing_zeros());
    }
    let why = if multi > MAX_OBJECT {
        format!("{multi} is above {MAX_OBJECT} bytes, the longest object an object header records")
    } else {
        format!("{multi} is not 0 (off) or the page size shifted left by 1..=4")
    };
    Err(format!("{why}; {}", allowed(page)))
}

/// The multi band of a pool with `page`-byte pages and multi-page size `size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MultiBand {
    pub page: u32,
    /// `M`, the largest object.
    pub size: u32,
    /// `K`: units of the band's classes above a page are `page << K` bytes.
    pub order: u32,
    /// `d1 = M >> 8`.
    pub delta: u32,
    /// `n1`: class indices of the band (`j = 0` repeats the page size at order 0).
    pub count: u32,
}

impl MultiBand {
    /// The band of `multi` (0: none). The pair must have passed [`order_of`].
    pub fn new(page: u32, multi: u32) -> Option<MultiBand> {
        let order = order_of(page, multi).ok().filter(|&k| k > 0)?;
        let delta = multi >> 8;
        Some(MultiBand {
            page,
            size: multi,
            order,
            delta,
            count: (multi - page).div_ceil(delta) + 1,
        })
    }

    /// Size of the band's class `j`.
    #[inline]
    pub fn class_size(&self, j: u32) -> u32 {
        (self.page + j * self.delta).min(self.size)
    }

    /// Order of a class of `size` bytes: K above a page, else 0.
    #[inline]
    pub fn order_of_size(&self, size: u32) -> u32 {
        if size > self.page {
            self.order
        } else {
            0
        }
    }

    /// Band index `j` (clamped to the band) of an object of `size` bytes, header included, that
    /// belongs to the band (`size > page + HDR`).
    #[inline]
    pub fn index(&self, size: usize) -> u32 {
        let j = (size - self.page as usize).div_ceil(self.delta as usize);
        j.min(self.count as usize - 1) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_and_refusals() {
        assert_eq!(order_of(4096, 0), Ok(0));
        for (multi, k) in [(8192, 1), (16384, 2), (32768, 3), (65536, 4)] {
            assert_eq!(order_of(4096, multi), Ok(k), "{multi}");
        }
        assert_eq!(order_of(16384, 65536), Ok(2));
        for multi in [4096, 2048, 12288, 131072] {
            assert!(order_of(4096, multi).is_err(), "{multi}");
        }
        assert!(order_of(65536, 131072).unwrap_err().contains("65536 bytes"));
        // The limit hit is the one named, and only sizes that fit are offered.
        let e = order_of(16384, 131072).unwrap_err();
        assert!(e.starts_with("131072 is above 65536 bytes"), "{e}");
        assert!(e.ends_with("with 16384-byte pages: 0 (off), 32768 or 65536"), "{e}");
        let e = order_of(16384, 12288).unwrap_err();
        assert!(e.contains("not 0 (off) or the page size shifted") && !e.contains("262144"), "{e}");
        let e = order_of(4096, 1 << 20).unwrap_err();
        assert!(e.starts_with("1048576 is above 65536"), "{e}");
        assert!(e.ends_with("0 (off), 8192, 16384, 32768 or 65536"), "{e}");
        assert!(order_of(65536, 131072).unwrap_err().contains("only 0 (off)"));
        assert_eq!(sizes_for(32768), [65536]);
        let b = MultiBand::new(4096, 16384).unwrap();
        assert_eq!((b.order, b.delta, b.count), (2, 64, 193));
        assert_eq!((b.class_size(0), b.class_size(192)), (4096, 16384));
        assert_eq!(MultiBand::new(4096, 0), None);
    }
}
