//! Instruction-count harness (callgrind) for the Rust raw layer on the sequence that
//! `tests/c/abi_count.c` drives through the C ABI: the floor the C boundary adds to.
//!
//! ```text
//! raw_count <raw|raw-step|raw-read> <N> <ops>
//! ```
//!
//! Same workload, bit for bit, as `abi_count` (SplitMix64 seeded with `0x5eed2d172058 ^ N`,
//! sizes normal(694, 474) clipped to 1..=4096, then per step a victim, a size and a reader).
//! Run without arguments (as `cargo bench` does) it prints its usage and exits successfully.
//! `scripts/bench-callgrind-capi.sh` runs it next to `abi_count`.

use std::sync::atomic::AtomicUsize;

use zsmalloc_core::{Pool, PoolConfig};

const MEAN: f64 = 694.0;
const SD: f64 = 474.0;
const MAX_SIZE: usize = 4096;
const SEED: u64 = 0x5eed_2d17_2058;
const STEPS: usize = 1 << 20;
const USAGE: &str = "usage: raw_count <raw|raw-step|raw-read> <N> <ops>";

struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    fn size(&mut self) -> usize {
        let u1 = 1.0 - self.next_f64();
        let u2 = self.next_f64();
        let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        (MEAN + SD * z).round().clamp(1.0, MAX_SIZE as f64) as usize
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    if args.len() != 3 {
        eprintln!("{USAGE}\n(a callgrind harness: see scripts/bench-callgrind-capi.sh)");
        return;
    }
    let (do_step, do_read) = match args[0].as_str() {
        "raw" => (true, true),
        "raw-step" => (true, false),
        "raw-read" => (false, true),
        _ => panic!("{USAGE}"),
    };
    let n: usize = args[1].parse().expect(USAGE);
    let ops: usize = args[2].parse().expect(USAGE);

    let mut rng = Rng(SEED ^ n as u64);
    let mut cur: Vec<usize> = (0..n).map(|_| rng.size()).collect();
    let mut steps = Vec::with_capacity(STEPS);
    for _ in 0..STEPS {
        let victim = rng.below(n);
        let size = rng.size();
        let reader = rng.below(n);
        steps.push((victim, size, reader));
    }
    let data: Vec<u8> = (0..MAX_SIZE).map(|_| rng.next_u64() as u8).collect();

    let pool = Pool::with_name("raw_count", PoolConfig::default()).expect("pool");
    let handles: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
    for (h, &len) in handles.iter().zip(&cur) {
        // SAFETY: the handle words stay in place (the Vec is never resized) until the exit.
        unsafe { pool.store_raw(h, &data[..len]) }.expect("store");
    }
    let mut local = vec![0u8; MAX_SIZE + 64];
    let mut out = vec![0u8; MAX_SIZE + 64];
    for k in 0..ops {
        let (v, s, r) = steps[k % STEPS];
        if do_step {
            // SAFETY: as above.
            unsafe {
                pool.free_raw(&handles[v]).expect("free");
                pool.store_raw(&handles[v], &data[..s]).expect("store");
            }
            cur[v] = s;
        }
        if do_read {
            let l = cur[r];
            // SAFETY: `local` holds a page and more; the section ends below.
            unsafe {
                let p = pool.read_begin_raw(&handles[r], l, local.as_mut_ptr()).expect("read");
                std::ptr::copy_nonoverlapping(p, out.as_mut_ptr(), l);
                pool.read_end_raw(&handles[r], Some(l)).expect("read end");
            }
            std::hint::black_box(&mut out);
        }
    }
    // No teardown: two runs differing only in `ops` differ only by their steps.
    std::process::exit(0);
}
