//! `uffd-floor`: the fault-service floor on this machine — missing-page faults served by a
//! minimal userfaultfd handler (read, LZ4_decompress_safe, UFFDIO_COPY) with the handler on
//! the faulting thread's CPU, on another CPU, spinning on another CPU, and a plain first touch
//! without userfaultfd, all in one run.

use std::process::ExitCode;

use clap::Parser;
use serde_json::json;
use zsmalloc_tier::floor::{self, FloorError, Outcome, Plan, Scenario, ServedPage};
use zsmalloc_tier::latency::Summary;
use zsmalloc_tier::uffd::{page_size, UffdError};

#[derive(Parser)]
#[command(name = "uffd-floor", about = "Measure the userfaultfd fault-service floor")]
struct Args {
    /// Faults measured per scenario (each a fresh page).
    #[arg(long, default_value_t = 20_000,
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    faults: u64,
    /// Untimed faults before the measured ones, per scenario.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(0..=100_000))]
    warmup: u64,
    /// Also time the handler's decompression and copy (more clock reads, and the copy's wake
    /// as an ioctl of its own, in each fault's service).
    #[arg(long)]
    breakdown: bool,
    /// Print JSON instead of the table.
    #[arg(long)]
    json: bool,
    /// Measure only this scenario (repeatable; all when not given).
    #[arg(long, value_name = "SCENARIO",
          value_parser = ["same_cpu", "other_cpu", "spinning", "first_touch"])]
    only: Vec<String>,
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

fn step_json(s: Summary) -> serde_json::Value {
    json!({ "p50_us": us(s.p50_ns), "p99_us": us(s.p99_ns) })
}

/// A handler step's median for the table, blank where it was not timed.
fn step_cell(s: Option<Summary>) -> String {
    s.map_or(String::new(), |s| format!("{:.2}", us(s.p50_ns)))
}

fn main() -> ExitCode {
    let args = Args::parse();
    let (faults, warmup) = (args.faults as usize, args.warmup as usize);
    let (faulting_cpu, other_cpu) = match floor::placement() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("uffd-floor: {e}");
            return ExitCode::from(1);
        }
    };
    let served = match ServedPage::pattern(1) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("uffd-floor: {e}");
            return ExitCode::from(1);
        }
    };
    let mut rows: Vec<(Scenario, Result<Outcome, FloorError>)> = Vec::new();
    let chosen = Scenario::ALL
        .into_iter()
        .filter(|s| args.only.is_empty() || args.only.iter().any(|k| k == s.key()));
    for scenario in chosen {
        let plan = Plan { faults, warmup, faulting_cpu, other_cpu, breakdown: args.breakdown };
        let r = floor::measure(scenario, &served, plan);
        if let Err(FloorError::Uffd(e @ (UffdError::NoPermission | UffdError::Unsupported))) = &r {
            eprintln!("uffd-floor: {e}");
            return ExitCode::from(2);
        }
        rows.push((scenario, r));
    }
    // One allowed CPU leaves the placements apart unmeasured, which the table says; anything
    // else unmeasured is a failure.
    let failed =
        |r: &Result<Outcome, FloorError>| matches!(r, Err(e) if !matches!(e, FloorError::OneCpu));
    let any_failed = rows.iter().any(|(_, r)| failed(r));
    if args.json {
        let scenarios: serde_json::Map<String, serde_json::Value> = rows
            .iter()
            .map(|(s, r)| {
                let v = match r {
                    Ok(o) => json!({
                        "label": s.label(),
                        "faulting_cpu": o.faulting_cpu,
                        "handler_cpu": o.handler_cpu,
                        "faults": o.summary.count,
                        "p50_us": us(o.summary.p50_ns),
                        "p99_us": us(o.summary.p99_ns),
                        "max_us": us(o.summary.max_ns),
                        "mean_us": us(o.summary.mean_ns),
                        "decompress": o.decompress.map(step_json),
                        "copy": o.copy.map(step_json),
                    }),
                    Err(e) => json!({ "label": s.label(), "error": e.to_string() }),
                };
                (s.key().to_string(), v)
            })
            .collect();
        let doc = json!({
            "page_bytes": page_size(),
            "compressed_bytes": served.packed.len(),
            "faults": faults,
            "warmup": warmup,
            "scenarios": scenarios,
        });
        println!("{}", serde_json::to_string_pretty(&doc).expect("plain values"));
    } else {
        println!(
            "{faults} faults per scenario ({warmup} untimed first), one {} B page served from \
             {} B of lz4",
            page_size(),
            served.packed.len()
        );
        let steps = if args.breakdown {
            format!(" {:>8} {:>8}", "lz4 p50", "copy p50")
        } else {
            String::new()
        };
        println!(
            "{:<48} {:>5} {:>8} {:>8} {:>8}{steps}",
            "scenario", "cpus", "p50 µs", "p99 µs", "max µs"
        );
        for (s, r) in &rows {
            match r {
                Ok(o) => {
                    let cpus = match o.handler_cpu {
                        Some(h) => format!("{}/{h}", o.faulting_cpu),
                        None => o.faulting_cpu.to_string(),
                    };
                    let steps = if args.breakdown {
                        format!(" {:>8} {:>8}", step_cell(o.decompress), step_cell(o.copy))
                    } else {
                        String::new()
                    };
                    println!(
                        "{:<48} {:>5} {:>8.1} {:>8.1} {:>8.1}{steps}",
                        s.label(),
                        cpus,
                        us(o.summary.p50_ns),
                        us(o.summary.p99_ns),
                        us(o.summary.max_ns)
                    );
                }
                Err(e) => println!("{:<48} not measured: {e}", s.label()),
            }
        }
        println!("cpus: the faulting thread's / the handler's");
        if args.breakdown {
            println!("lz4, copy: the handler's LZ4_decompress_safe and UFFDIO_COPY, µs");
        }
    }
    if any_failed {
        for (s, r) in rows.iter().filter(|(_, r)| failed(r)) {
            if let Err(e) = r {
                eprintln!("uffd-floor: {}: {e}", s.key());
            }
        }
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
