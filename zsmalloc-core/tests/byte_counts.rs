//! Byte counts as the command line and the `ZSMALLOC_*` variables take them.

use zsmalloc_core::config::parse_bytes;

#[test]
fn byte_counts_take_binary_units() {
    for (v, want) in [("16K", 16 << 10), ("4096MiB", 4 << 30), ("6g", 6 << 30), ("1tb", 1 << 40)] {
        assert_eq!(parse_bytes(v), Some(want), "{v}");
    }
    for v in ["", "G", "16b", "1.5G", "-1K", "99999999999T", "16X"] {
        assert_eq!(parse_bytes(v), None, "{v}");
    }
}
