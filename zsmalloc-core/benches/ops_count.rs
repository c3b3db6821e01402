//! Instruction-count harness for callgrind: runs one model of the steady-state
//! workload for a given N and number of operations, so that
//! `(Ir(N, ops2) - Ir(N, ops1)) / (ops2 - ops1)` is the cost of one operation with setup cancelled.
//!
//! ```text
//! ops_count <mode> <N> <ops>
//!   mode: safe | raw | malloc                 store+free steps
//!         step-floor                          the malloc step plus the locked instructions a
//!                                             step needs: the floor of a step (`LockedModel`)
//!         read-safe | read-raw | read-malloc  non-spanning read + copy out
//!         read-registered                     the same on malloc'd blocks with a registered
//!                                             header: the floor of a read (`RegisteredModel`)
//!         read-padded                         read-malloc plus OPS_PAD (default 0, a multiple
//!                                             of 12) single-cycle instructions per read
//!         read-direct                         the same copy out of the pool's objects through
//!                                             addresses taken once: layout without protocol
//! ```
//!
//! `scripts/bench-callgrind.sh` runs it under `valgrind --tool=callgrind` and prints the table.
//! Run without arguments (as `cargo bench` does) it prints this usage and exits successfully.

mod common;

use common::{LockedModel, MallocModel, Model, RawModel, RegisteredModel, SafeModel, Workload};

const USAGE: &str =
    "usage: ops_count <safe|raw|malloc|step-floor|read-safe|read-raw|read-malloc|read-registered|read-padded|read-direct> <N> <ops>";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    if args.len() != 3 {
        eprintln!("{USAGE}\n(ops_count is a callgrind harness: see scripts/bench-callgrind.sh)");
        return;
    }
    let mode = args[0].as_str();
    let n: usize = args[1].parse().expect(USAGE);
    let ops: u64 = args[2].parse().expect(USAGE);
    let steps = if mode.starts_with("read-") { 0 } else { common::STEPS };
    let w = Workload::new(n, steps);
    let mut at = 0;
    // Each arm exits as soon as its operations are done: no teardown is counted, because freeing
    // everything would cost different amounts after OPS1 and OPS2 operations.
    match mode {
        "safe" => {
            let pool = common::pool();
            let mut m = SafeModel::fill(&pool, &w);
            timed(ops, || m.run(&w, &mut at, ops));
            done();
        }
        "raw" => {
            let pool = common::pool();
            let mut m = RawModel::fill(&pool, &w);
            timed(ops, || m.run(&w, &mut at, ops));
            done();
        }
        "malloc" => {
            let mut m = MallocModel::fill(&w);
            timed(ops, || m.run(&w, &mut at, ops));
            done();
        }
        "step-floor" => {
            let mut m = LockedModel::fill(&w);
            timed(ops, || m.run(&w, &mut at, ops));
            done();
        }
        "read-safe" | "read-raw" | "read-malloc" | "read-registered" | "read-padded"
        | "read-direct" => {
            // The non-spanning objects, from a safe-layer pool (placement is deterministic).
            let pool = common::pool();
            let safe = SafeModel::fill(&pool, &w);
            let flags = common::spanning_flags(&safe);
            let order = w.read_order(|i| !flags[i]);
            let (mut local, mut out) = common::read_buffers();
            match mode {
                "read-safe" => timed(ops, || {
                    common::read_safe(&safe, &order, &mut at, ops, &mut local, &mut out)
                }),
                "read-raw" => {
                    drop(safe);
                    let pool = common::pool();
                    let raw = RawModel::fill(&pool, &w);
                    timed(ops, || {
                        common::read_raw(&raw, &order, &mut at, ops, &mut local, &mut out)
                    });
                    done();
                }
                "read-registered" => {
                    drop(safe);
                    let floor = RegisteredModel::fill(&w);
                    timed(ops, || common::read_registered(&floor, &order, &mut at, ops, &mut out));
                    done();
                }
                "read-direct" => {
                    drop(safe);
                    let pool = common::pool();
                    let raw = RawModel::fill(&pool, &w);
                    let addrs = common::direct_addresses(&raw, &mut local);
                    // SAFETY: nothing frees or moves an object while the copies run; the read
                    // order holds only non-spanning objects, whose addresses are not null.
                    timed(ops, || unsafe {
                        common::read_direct(&addrs, &raw.lens, &order, &mut at, ops, &mut out)
                    });
                    done();
                }
                "read-padded" => {
                    drop(safe);
                    let pad = std::env::var("OPS_PAD").map_or(0, |v| v.parse().expect("OPS_PAD"));
                    let base = MallocModel::fill(&w);
                    timed(ops, || {
                        common::read_malloc_padded(&base, &order, &mut at, ops, &mut out, pad)
                    });
                    done();
                }
                _ => {
                    drop(safe);
                    let base = MallocModel::fill(&w);
                    timed(ops, || common::read_malloc(&base, &order, &mut at, ops, &mut out));
                    done();
                }
            }
            done();
        }
        _ => panic!("{USAGE}"),
    }
}

/// Runs the operations; with `OPS_TIME=1` prints their wall time per operation to stderr (a quick
/// check while changing code; the figures of record come from criterion).
fn timed(ops: u64, f: impl FnOnce()) {
    let start = std::time::Instant::now();
    f();
    if std::env::var_os("OPS_TIME").is_some() {
        let ns = start.elapsed().as_nanos() as f64 / ops.max(1) as f64;
        eprintln!("{ns:.1} ns/op");
    }
}

/// Ends the process at once (no destructors), so setup is the only work outside the operations.
fn done() -> ! {
    std::process::exit(0)
}
