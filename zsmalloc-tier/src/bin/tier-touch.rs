//! `tier-touch`: the tier's fault service as a program under `zsmalloc tier` sees it. It fills
//! a working set larger than the budget with the floor's page (half pseudo-random, half
//! repeated: the same compressed size), each page stamped with its number, then reads one
//! byte of each page in turn, pass after pass, timing every touch in the faulting thread (a
//! clock read before and after), as the floor's faulting thread does. Cycling through more
//! pages than the budget holds, with the oldest page evicted first, every touch is a fault on
//! an evicted page. Every page is checked afterwards. Run it pinned to one CPU (`taskset`)
//! so that the tier's handler thread shares it.

use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use serde_json::json;
use zsmalloc_tier::latency::Summary;
use zsmalloc_tier::pattern::pattern_page;

const PAGE: usize = 4096;

#[derive(Parser)]
#[command(name = "tier-touch", about = "Time faults on evicted pages from inside a tiered program")]
struct Args {
    /// Pages in the working set (more than the tier's budget, so that every touch faults).
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u64).range(1..=4_000_000))]
    pages: u64,
    /// Touches timed.
    #[arg(long, default_value_t = 20_000,
          value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    faults: u64,
    /// Untimed touches before them.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    warmup: u64,
    /// Print JSON instead of a line.
    #[arg(long)]
    json: bool,
}

/// Memory outside the tier: `MAP_POPULATE` mappings are left to the kernel, so the samples and
/// the expected page never fault through the handler between two timed touches.
fn untiered(len: usize) -> Result<&'static mut [u8], String> {
    // SAFETY: a fresh private anonymous mapping, never unmapped (the program ends with it).
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(format!("mmap: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: the mapping just made, `len` bytes, this function's alone.
    Ok(unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), len) })
}

/// The working set: a kernel-placed private mapping, which the tier takes over.
fn tiered(len: usize) -> Result<*mut u8, String> {
    // SAFETY: a fresh private anonymous mapping, reached only through the returned pointer.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(format!("mmap: {}", std::io::Error::last_os_error()));
    }
    Ok(p.cast())
}

fn stamp(page: &mut [u8], i: usize) {
    page[..8].copy_from_slice(&(i as u64).to_le_bytes());
}

fn run(args: &Args) -> Result<Summary, String> {
    let pages = args.pages as usize;
    let (faults, warmup) = (args.faults as usize, args.warmup as usize);
    let set = tiered(pages * PAGE)?;
    let expected = untiered(PAGE)?;
    pattern_page(1, expected);
    for i in 0..pages {
        stamp(expected, i);
        // SAFETY: page `i` of the working set, which this thread alone writes.
        unsafe { std::ptr::copy_nonoverlapping(expected.as_ptr(), set.add(i * PAGE), PAGE) };
    }
    let samples = untiered((faults * 8).div_ceil(PAGE) * PAGE)?;
    // SAFETY: the mapping is page-aligned and holds `faults` u64s.
    let samples =
        unsafe { std::slice::from_raw_parts_mut(samples.as_mut_ptr().cast::<u64>(), faults) };
    for n in 0..warmup + faults {
        // SAFETY: a byte of the working set (the eighth: the stamp's last, always 0 here).
        let p = unsafe { set.add((n % pages) * PAGE + 7) };
        let t0 = Instant::now();
        // SAFETY: as above; the read waits while the tier serves the page.
        unsafe { p.read_volatile() };
        let dt = t0.elapsed().as_nanos() as u64;
        if n >= warmup {
            samples[n - warmup] = dt;
        }
    }
    for i in 0..pages {
        stamp(expected, i);
        // SAFETY: page `i` of the working set; nothing writes it any more.
        let got = unsafe { std::slice::from_raw_parts(set.add(i * PAGE), PAGE) };
        if got != &expected[..] {
            return Err(format!("page {i} read back differs from the page written"));
        }
    }
    Summary::of(samples).ok_or_else(|| "no touches timed".into())
}

fn main() -> ExitCode {
    let args = Args::parse();
    let s = match run(&args) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("tier-touch: {e}");
            return ExitCode::from(1);
        }
    };
    let us = |ns: u64| ns as f64 / 1000.0;
    if args.json {
        let doc = json!({
            "pages": args.pages,
            "faults": s.count,
            "warmup": args.warmup,
            "p50_us": us(s.p50_ns),
            "p99_us": us(s.p99_ns),
            "max_us": us(s.max_ns),
            "mean_us": us(s.mean_ns),
        });
        println!("{doc}");
    } else {
        println!(
            "{} touches of {} pages: p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs, mean {:.1} µs",
            s.count,
            args.pages,
            us(s.p50_ns),
            us(s.p99_ns),
            us(s.max_ns),
            us(s.mean_ns)
        );
    }
    ExitCode::SUCCESS
}
