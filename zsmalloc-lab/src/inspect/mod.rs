//! `zsmalloc inspect` (docs/LAB.md, "inspect: your own machine's zram and zswap"): what the
//! machine's own zram devices and zswap hold and what their pools cost, read without root; and,
//! as root on request, one device's stored pages read back and replayed, for the fragmentation
//! its history holds and what another class table would save.
//!
//! Files, each importing only those above it:
//!
//! 1. [`read`]: reading files, an unreadable one noted, never fatal;
//! 2. [`zram`] (a device: `mm_stat`, compressor, swap, overhead) and [`zswap`];
//! 3. [`machine`]: everything at one moment; [`table`]: its table, JSON and CSV;
//! 4. [`watch`]: the report again every interval until Ctrl-C;
//! 5. [`snapshot`]: a device's pages read back and stored again by a private device, for the
//!    kernel's lengths; [`whatif`]: those pages through the project's pools and the optimizer;
//!    [`snapshot_report`]: the refusals, the plan, and the report.

pub mod machine;
pub mod read;
pub mod snapshot;
pub mod snapshot_report;
pub mod table;
pub mod watch;
pub mod whatif;
pub mod zram;
pub mod zswap;
