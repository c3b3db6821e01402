//! `uffd-floor`: the fault-service floor on this machine — missing-page faults served by a
//! minimal userfaultfd handler (read, LZ4_decompress_safe, UFFDIO_COPY) with the handler on
//! the faulting thread's CPU, on another CPU, spinning on another CPU, and a plain first touch
//! without userfaultfd, all in one run.

use std::process::ExitCode;

use clap::Parser;
use serde_json::json;
use zsmalloc_tier::floor::{self, FloorError, Outcome, Scenario, ServedPage};
use zsmalloc_tier::uffd::{page_size, UffdError};

#[derive(Parser)]
#[command(name = "uffd-floor", about = "Measure the userfaultfd fault-service floor")]
struct Args {
    /// Faults measured per scenario (each a fresh page).
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    faults: u64,
    /// Untimed faults before the measured ones, per scenario.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(0..=100_000))]
    warmup: u64,
    /// Print JSON instead of the table.
    #[arg(long)]
    json: bool,
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
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
    let served = ServedPage::pattern(1);
    let mut rows: Vec<(Scenario, Result<Outcome, FloorError>)> = Vec::new();
    for scenario in Scenario::ALL {
        let r = floor::measure(scenario, &served, faults, warmup, faulting_cpu, other_cpu);
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
        println!(
            "{:<48} {:>5} {:>8} {:>8} {:>8}",
            "scenario", "cpus", "p50 µs", "p99 µs", "max µs"
        );
        for (s, r) in &rows {
            match r {
                Ok(o) => {
                    let cpus = match o.handler_cpu {
                        Some(h) => format!("{}/{h}", o.faulting_cpu),
                        None => o.faulting_cpu.to_string(),
                    };
                    println!(
                        "{:<48} {:>5} {:>8.1} {:>8.1} {:>8.1}",
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
