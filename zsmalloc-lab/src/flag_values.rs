//! Value parsers of the numeric flags: clap refuses a value outside a flag's range while it
//! parses (exit 2, one line naming the accepted range), so no command is handed a zero it would
//! divide by or a count it would never finish. Ranges that depend on another flag (a length
//! against the page size) are checked by the command, also with exit 2.

use zsmalloc_core::text_input::escape;

/// The most runs or threads `--jobs` takes (more than any machine's cores; the commands use
/// no more than they have configurations).
pub const MAX_JOBS: u64 = 4096;

/// The range of a whole-number flag as the message says it: `in 1..=1000`, `from 1 up`.
fn whole_range(lo: u64, hi: u64) -> String {
    if hi == u64::MAX {
        format!("from {lo} up")
    } else {
        format!("in {lo}..={hi}")
    }
}

/// A whole number written as digits only: no sign, no spaces, no unit.
fn digits(s: &str) -> Result<u64, String> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(String::new());
    }
    s.parse::<u64>().map_err(|_| format!("{} is too large", escape(s)))
}

/// Whole numbers in `lo..=hi`, as `T` (a count, a size in pages, a seed).
pub fn whole<T>(
    lo: u64,
    hi: u64,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: TryFrom<u64> + Clone + Send + Sync + 'static,
{
    move |s| {
        let range = whole_range(lo, hi);
        let n = digits(s).map_err(|why| match why.is_empty() {
            true => format!("a whole number {range} is accepted"),
            false => format!("{why}: a whole number {range} is accepted"),
        })?;
        if !(lo..=hi).contains(&n) {
            return Err(format!("a whole number {range} is accepted"));
        }
        T::try_from(n).map_err(|_| format!("{n} is too large"))
    }
}

/// Any whole number from 0 up, as `T` (a seed, a process id).
pub fn any_whole<T>() -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: TryFrom<u64> + Clone + Send + Sync + 'static,
{
    whole(0, u64::MAX)
}

/// Whole numbers in `lo..=hi` with a sign allowed (zstd levels).
pub fn signed(
    lo: i64,
    hi: i64,
) -> impl Fn(&str) -> Result<i32, String> + Clone + Send + Sync + 'static {
    move |s| {
        let accepted = format!("a whole number in {lo}..={hi} is accepted");
        let body = s.strip_prefix('-').unwrap_or(s);
        let magnitude = digits(body).map_err(|_| accepted.clone())?;
        let n = i64::try_from(magnitude).map_err(|_| accepted.clone())?;
        let n = if s.starts_with('-') { -n } else { n };
        if !(lo..=hi).contains(&n) {
            return Err(accepted);
        }
        i32::try_from(n).map_err(|_| accepted)
    }
}

/// Finite numbers in `lo..=hi` (shares, seconds, lengths).
pub fn real(lo: f64, hi: f64) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync {
    move |s| {
        let range =
            if hi == f64::MAX { format!("from {lo} up") } else { format!("in {lo}..={hi}") };
        let accepted = || format!("a number {range} is accepted");
        let v: f64 = s.parse().map_err(|_| accepted())?;
        if !v.is_finite() || !(lo..=hi).contains(&v) {
            return Err(accepted());
        }
        Ok(v)
    }
}

/// A share: 0..=1.
pub fn share(s: &str) -> Result<f64, String> {
    real(0.0, 1.0)(s)
}

/// `p`'s check, keeping the text as given: for flags a later step parses with other sources
/// (the configuration flags, also `--config` specs), refused early when out of range whatever
/// the other flags say.
pub fn checked<T>(
    p: impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static,
) -> impl Fn(&str) -> Result<String, String> + Clone + Send + Sync + 'static {
    move |s| p(s).map(|_| s.to_string())
}

/// A byte count the core's way (`4096`, `16K`, `64KiB`) in `lo..=hi` bytes.
pub fn bytes<T>(lo: u64, hi: u64) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync
where
    T: TryFrom<u64> + Clone + Send + Sync + 'static,
{
    move |s| {
        let accepted = || format!("a byte count in {lo}..={hi} (4096, 16K) is accepted");
        let n = zsmalloc_core::config::parse_bytes(s).ok_or_else(accepted)?;
        if !(lo..=hi).contains(&n) {
            return Err(accepted());
        }
        T::try_from(n).map_err(|_| format!("{n} is too large"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_numbers_are_digits_in_range() {
        let count = whole::<u64>(1, 1000);
        assert_eq!(count("7"), Ok(7));
        for bad in ["0", "1001", "-1", "+1", " 1", "1K", "", "x"] {
            assert_eq!(count(bad).unwrap_err(), "a whole number in 1..=1000 is accepted", "{bad}");
        }
        assert!(count("99999999999999999999999").unwrap_err().contains("too large"));
        assert_eq!(
            whole::<u32>(1, u64::MAX)("0").unwrap_err(),
            "a whole number from 1 up is accepted"
        );
        assert!(whole::<u32>(0, u64::MAX)("4294967296").unwrap_err().contains("too large"));
        assert_eq!(signed(-7, 22)("-7"), Ok(-7));
        assert!(signed(-7, 22)("23").is_err() && signed(1, 22)("--3").is_err());
    }

    #[test]
    fn reals_are_finite_and_in_range() {
        assert_eq!(share("0.25"), Ok(0.25));
        for bad in ["1.5", "-0.1", "NaN", "inf", "x"] {
            assert!(share(bad).is_err(), "{bad}");
        }
        assert_eq!(bytes::<u32>(8, 4096)("4K"), Ok(4096));
        assert!(bytes::<u32>(8, 4096)("0").is_err());
    }
}
