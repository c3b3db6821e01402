//! The tier's threaded Rust test program: std gives every thread it starts a signal stack of
//! its own, an anonymous mapping whose first page it makes `PROT_NONE` (a guard), which is
//! what a tier that does not keep protections stops on. THREADS threads each build a vector
//! of MIB/THREADS MiB of words from their seed, sort it, and sum it; the main thread checks
//! every sum against the same work done by arithmetic, and prints `ok` and the total.
//!
//! Usage: tier_threads THREADS MIB

use std::process::ExitCode;

fn word(seed: u64, i: u64) -> u64 {
    let x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15).wrapping_add(i.wrapping_mul(0x1000_0000_01b3));
    (x ^ (x >> 29)).wrapping_mul(0xbf58_476d_1ce4_e5b9) >> 40
}

fn main() -> ExitCode {
    let args: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let [threads, mib] = args[..] else {
        eprintln!("usage: tier_threads THREADS MIB");
        return ExitCode::from(2);
    };
    let words = mib * (1 << 20) / 8 / threads.max(1);
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            std::thread::spawn(move || {
                let mut v: Vec<u64> = (0..words).map(|i| word(t, i)).collect();
                v.sort_unstable();
                let ordered = v.windows(2).all(|w| w[0] <= w[1]);
                (ordered, v.iter().fold(0u64, |s, &x| s.wrapping_add(x)))
            })
        })
        .collect();
    let mut total = 0u64;
    for (t, w) in workers.into_iter().enumerate() {
        let (ordered, sum) = w.join().expect("a worker panicked");
        let expected = (0..words).fold(0u64, |s, i| s.wrapping_add(word(t as u64, i)));
        if !ordered || sum != expected {
            println!("thread {t}: sorted {ordered}, sum {sum} where {expected} was expected");
            return ExitCode::from(1);
        }
        total = total.wrapping_add(sum);
    }
    println!("ok {threads} threads {total}");
    ExitCode::SUCCESS
}
