//! zram device names as the kernel writes them: `zram<N>` with N in decimal, no sign and no
//! leading zero. One parser for every name the lab reads (flags, `/sys/block`, its own device
//! records), so that no other spelling (`zram01`, `+1`, `zramzram1`) names a device — `00`
//! must not become zram0.

/// A number written the one way the kernel writes it: digits, no leading zero (but `0`).
pub fn decimal(s: &str) -> Option<u64> {
    let canonical =
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'));
    canonical.then(|| s.parse().ok()).flatten()
}

/// The id of `zram<N>` (exactly that: the names in `/sys/block`).
pub fn device_id(name: &str) -> Option<u32> {
    u32::try_from(decimal(name.strip_prefix("zram")?)?).ok()
}

/// The id a user names a device by: `zram<N>`, `/dev/zram<N>` or `<N>`.
pub fn user_device_id(name: &str) -> Option<u32> {
    let number =
        name.strip_prefix("/dev/zram").or_else(|| name.strip_prefix("zram")).unwrap_or(name);
    u32::try_from(decimal(number)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_parsed_strictly() {
        assert_eq!((device_id("zram0"), device_id("zram12")), (Some(0), Some(12)));
        assert_eq!(
            (user_device_id("3"), user_device_id("zram3"), user_device_id("/dev/zram3")),
            (Some(3), Some(3), Some(3))
        );
        for bad in ["zram00", "zram01", "zram+1", "zram-1", "zram", "zramzram1", "zram1x", "3"] {
            assert_eq!(device_id(bad), None, "{bad}");
        }
        for bad in ["zramzram1", "+1", "00", "01", "/dev/zram00", "zram", "", " 1", "4294967296"] {
            assert_eq!(user_device_id(bad), None, "{bad}");
        }
        assert_eq!((decimal("0"), decimal("10"), decimal("010")), (Some(0), Some(10), None));
    }
}
