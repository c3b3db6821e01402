//! `zsmalloc kernel import`: kprobe `trace_pipe` lines and the bpftrace one-liner's output
//! become a trace the lab replays — CPUs interleaved, lost events counted, truncated lines
//! refused with their line number. No root needed.

mod common;

use std::io::Cursor;
use std::path::{Path, PathBuf};

use zsmalloc_lab::kernel::import::{import, parse_line, Event};
use zsmalloc_lab::trace_format::{TraceOp, TraceReader};

fn scratch(name: &str) -> PathBuf {
    common::scratch(name)
}

fn ops(path: &Path) -> Vec<TraceOp> {
    let mut r = TraceReader::open(path).unwrap();
    let mut v = Vec::new();
    while let Some(op) = r.next_op().unwrap() {
        v.push(op);
    }
    v
}

/// trace_pipe as the kernel prints it: two tasks on two CPUs whose entries and returns
/// interleave, a lost-events line, another event, a free of a handle from before the trace, a
/// failed allocation, a free of handle 0 and a compaction.
const KPROBE: &str = "\
# tracer: nop
#
      kswapd0-85      [001] d..1.  1234.567890: zsm_malloc: (zs_malloc+0x0/0x2f0) pool=0xffff888100a00000 size=0x3a4
   kcompactd0-61      [000] d..1.  1234.567891: zsm_malloc: (zs_malloc+0x0/0x2f0) pool=0xffff888100a00000 size=100
      kswapd0-85      [001] d..1.  1234.567895: zsm_malloc_ret: (zram_write_page+0x120/0x5a0 <- zs_malloc) handle=0xffff888123456780
   kcompactd0-61      [000] d..1.  1234.567896: zsm_malloc_ret: (zram_write_page+0x120/0x5a0 <- zs_malloc) handle=0xffff888123456790
CPU:1 [LOST 7 EVENTS]
      kswapd0-85      [001] d..1.  1234.567900: sched_switch: prev_comm=kswapd0 prev_pid=85
      kswapd0-85      [001] d..1.  1234.567910: zsm_free: (zs_free+0x0/0x100) pool=0xffff888100a00000 handle=0xffff888123456780
      kswapd0-85      [001] d..1.  1234.567911: zsm_free: (zs_free+0x0/0x100) pool=0xffff888100a00000 handle=0xffff8881000000f0
      kswapd0-85      [001] d..1.  1234.567920: zsm_malloc: (zs_malloc+0x0/0x2f0) pool=0xffff888100a00000 size=5000
      kswapd0-85      [001] d..1.  1234.567921: zsm_malloc_ret: (zram_write_page+0x120/0x5a0 <- zs_malloc) handle=0xfffffffffffffff4
      kswapd0-85      [001] d..1.  1234.567930: zsm_free: (zs_free+0x0/0x100) pool=0xffff888100a00000 handle=0x0
      kswapd0-85      [001] d..1.  1234.567940: zsm_compact: (zs_compact+0x0/0x80) pool=0xffff888100a00000
";

#[test]
fn kprobe_lines_pair_per_task_across_cpus() {
    let out = scratch("kprobe.trace");
    let r = import(Cursor::new(KPROBE), &out, None).unwrap();
    assert_eq!(
        ops(&out),
        [
            TraceOp::Store { id: 0xffff888123456780, len: 0x3a4 },
            TraceOp::Store { id: 0xffff888123456790, len: 100 },
            TraceOp::Free { id: 0xffff888123456780 },
            TraceOp::Compact,
        ]
    );
    assert_eq!((r.stores, r.frees, r.compactions), (2, 1, 1));
    assert_eq!(r.lost_events, 7);
    assert_eq!(r.unknown_frees, 1);
    assert_eq!(r.failed_allocations, 1);
    assert_eq!(r.null_frees, 1);
    assert_eq!(r.other_lines, 3, "two header lines and the sched_switch event");
    assert_eq!(r.pools, ["0xffff888100a00000"]);
    assert_eq!(r.lines, 14);
}

#[test]
fn unpaired_halves_are_counted() {
    let text = "\
      kswapd0-85      [001] d..1.  1.0: a: (zs_malloc+0x0/0x2f0) size=64
      kswapd0-85      [001] d..1.  1.1: a: (zs_malloc+0x0/0x2f0) size=65
      kswapd0-85      [001] d..1.  1.2: r: (zram_write_page+0x1/0x5 <- zs_malloc) handle=0x10
         java-900     [003] d..1.  1.3: r: (zram_write_page+0x1/0x5 <- zs_malloc) handle=0x20
         java-900     [003] d..1.  1.4: a: (zs_malloc+0x0/0x2f0) size=66
";
    let out = scratch("unpaired.trace");
    let r = import(Cursor::new(text), &out, None).unwrap();
    // The first entry lost its return (a second entry on the same task came first); java's
    // return had no entry; java's last entry never returned.
    assert_eq!(ops(&out), [TraceOp::Store { id: 0x10, len: 65 }]);
    assert_eq!((r.unpaired_entries, r.unpaired_returns), (2, 1));
}

#[test]
fn a_pool_filter_skips_the_other_pools_returns_too() {
    let text = "\
      kswapd0-85      [001] d..1.  1.0: a: (zs_malloc+0x0/0x2f0) pool=0x2 size=64
      kswapd0-85      [001] d..1.  1.1: r: (zram_write_page+0x1/0x5 <- zs_malloc) handle=0x10
      kswapd0-85      [001] d..1.  1.2: a: (zs_malloc+0x0/0x2f0) pool=0x1 size=65
      kswapd0-85      [001] d..1.  1.3: r: (zram_write_page+0x1/0x5 <- zs_malloc) handle=0x20
";
    let out = scratch("filter.trace");
    let r = import(Cursor::new(text), &out, Some("0x1")).unwrap();
    assert_eq!(ops(&out), [TraceOp::Store { id: 0x20, len: 65 }]);
    assert_eq!((r.other_pool_events, r.unpaired_returns), (2, 0));
}

#[test]
fn bpftrace_output_and_pool_filter() {
    let text = "\
Attaching 4 probes...
zs_malloc 0xffff1 1200 0xa0
zs_malloc 0xffff2 300 0xb0
zs_free 0xffff1 0xa0
Lost 3 events
zs_compact 0xffff1
";
    let out = scratch("bpf.trace");
    let r = import(Cursor::new(text), &out, Some("0xffff1")).unwrap();
    assert_eq!(
        ops(&out),
        [TraceOp::Store { id: 0xa0, len: 1200 }, TraceOp::Free { id: 0xa0 }, TraceOp::Compact]
    );
    assert_eq!((r.lost_events, r.other_pool_events, r.other_lines), (3, 1, 1));
    assert_eq!(r.pools.len(), 2);
}

#[test]
fn an_input_without_events_is_refused_and_writes_no_trace() {
    for text in ["", "Attaching 4 probes...\n\n", "zs_malloc 0xffff2 300 0xb0\n"] {
        let out = scratch("empty.trace");
        let _ = std::fs::remove_file(&out);
        let pool = text.contains("zs_malloc").then_some("0xffff1");
        let e = import(Cursor::new(text), &out, pool).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().starts_with("no input"), "{e}");
        assert!(!out.exists(), "a failed import leaves no file");
    }
    // A failed import leaves neither a partial trace nor a temporary file, and an earlier trace
    // at the path stays as it was.
    let dir = scratch("failed-import");
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("t.trace");
    std::fs::write(&out, "store 1 10\n").unwrap();
    let e =
        import(Cursor::new("zs_malloc 0xffff1 1200 0xa0\nzs_malloc 0xffff1 1200\n"), &out, None);
    assert!(e.unwrap_err().to_string().contains("line 2"));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "store 1 10\n");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "no temporary file left");
}

#[test]
fn truncated_lines_are_errors_with_their_number() {
    let cases = [
        ("      kswapd0-85 [001] d..1. 1.0: a: (zs_malloc+0x0/0x2f0) si", "line 2", "no size="),
        ("      kswapd0-85 [001] d..1. 1.0: a: (zs_mall", "line 2", "not closed"),
        ("zs_malloc 0xffff1 1200", "line 2", "no handle"),
        ("zs_free 0xffff1 0xzz", "line 2", "not a number"),
        ("CPU:1 [LOST", "line 2", "LOST"),
    ];
    for (bad, line, what) in cases {
        let text = format!("zs_malloc 0x1 10 0x10\n{bad}\n");
        let e = import(Cursor::new(text), &scratch("bad.trace"), None).unwrap_err().to_string();
        assert!(e.contains(line) && e.contains(what), "{bad}: {e}");
    }
    assert_eq!(parse_line("zs_compact 0x5").unwrap(), Some(Event::Compact { pool: Some(5) }));
}

#[test]
fn an_imported_trace_replays() {
    let out = scratch("replay.trace");
    import(Cursor::new(KPROBE), &out, None).unwrap();
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_zsmalloc"))
        .args(["replay", out.to_str().unwrap(), "--format", "mm_stat"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let line = String::from_utf8_lossy(&o.stdout);
    let compr: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert_eq!(compr, 100, "one object of 100 bytes left");
}
