//! The §10 steady-state workload shared by the benchmarks (criterion, callgrind and overhead).
//!
//! N live objects; each step frees a random victim and stores a new object whose size is drawn
//! from normal(694, 474) rounded and clipped to 1..=4096. The sequence is precomputed from a seeded
//! generator so the pool (safe and raw layers) and the `malloc` baseline run the identical steps.
//!
//! Each bench target includes this file with `mod common;` and uses a different subset of it.
#![allow(dead_code)]

use std::sync::atomic::AtomicUsize;

use zsmalloc_core::{Handle, Pool, PoolConfig};

mod reads;
// Not every bench target reads.
#[allow(unused_imports)]
pub use reads::*;

/// Size distribution of the steady-state workload: normal(694, 474), rounded and clipped.
pub const MEAN: f64 = 694.0;
pub const SD: f64 = 474.0;
pub const MAX_SIZE: u32 = 4096;
/// Seed of every workload (change it and both sides change together).
pub const SEED: u64 = 0x5eed_2d17_2058;
/// Precomputed steps; a run longer than this wraps around (victims stay uniformly random).
pub const STEPS: usize = 1 << 20;
/// The N of §10.
pub const NS: [usize; 3] = [10_000, 100_000, 1_000_000];

/// SplitMix64: small, seedable, identical on every platform and crate version.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in 0..n.
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// One object size: normal(MEAN, SD) by Box-Muller, rounded, clipped to 1..=MAX_SIZE.
    pub fn size(&mut self) -> u32 {
        let u1 = 1.0 - self.next_f64(); // (0, 1]
        let u2 = self.next_f64();
        let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        (MEAN + SD * z).round().clamp(1.0, f64::from(MAX_SIZE)) as u32
    }
}

/// One steady-state step: free object `victim`, store a new one of `size` bytes in its place.
#[derive(Debug, Clone, Copy)]
pub struct Step {
    pub victim: u32,
    pub size: u32,
}

/// The precomputed workload for one N.
pub struct Workload {
    /// Sizes of the N objects stored before the first step.
    pub initial: Vec<u32>,
    pub steps: Vec<Step>,
    /// Payload source: objects are `data[..size]`.
    pub data: Vec<u8>,
}

impl Workload {
    pub fn new(n: usize, steps: usize) -> Self {
        let mut rng = Rng::new(SEED ^ n as u64);
        let initial = (0..n).map(|_| rng.size()).collect();
        let steps =
            (0..steps).map(|_| Step { victim: rng.below(n) as u32, size: rng.size() }).collect();
        let data = (0..MAX_SIZE).map(|_| rng.next_u64() as u8).collect();
        Workload { initial, steps, data }
    }

    pub fn n(&self) -> usize {
        self.initial.len()
    }

    /// A random order of the object indices `keep` accepts (the read benchmarks' sequence).
    pub fn read_order(&self, keep: impl Fn(usize) -> bool) -> Vec<u32> {
        let mut order: Vec<u32> = (0..self.n() as u32).filter(|&i| keep(i as usize)).collect();
        let mut rng = Rng::new(SEED ^ 0x7ead);
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i + 1));
        }
        order
    }
}

/// The pool every benchmark uses: mainline defaults (4 KiB pages, chain 8, classic policy).
/// The pool of the harnesses: mainline's defaults; `OPS_MULTI_PAGE_SIZE=16384` adds the
/// multi-page band (docs/DESIGN.md, Objects of several pages), to measure what it costs the
/// base band's objects.
pub fn pool() -> Pool {
    let multi_page_size =
        std::env::var("OPS_MULTI_PAGE_SIZE").map_or(0, |v| v.parse().expect("OPS_MULTI_PAGE_SIZE"));
    Pool::new(PoolConfig { multi_page_size, ..PoolConfig::default() })
        .expect("default configuration is valid")
}

/// Anything that can run the steady-state steps.
pub trait Model {
    /// Runs `count` steps starting at step `*at` (wrapping), advancing `*at`.
    fn run(&mut self, w: &Workload, at: &mut usize, count: u64);
}

/// Safe layer: pool-owned handle slots, dropping a handle frees its object.
pub struct SafeModel<'p> {
    pub pool: &'p Pool,
    pub handles: Vec<Option<Handle<&'p Pool>>>,
    pub lens: Vec<u32>,
}

impl<'p> SafeModel<'p> {
    pub fn fill(pool: &'p Pool, w: &Workload) -> Self {
        let handles = w
            .initial
            .iter()
            .map(|&s| Some(pool.store(&w.data[..s as usize]).expect("store")))
            .collect();
        SafeModel { pool, handles, lens: w.initial.clone() }
    }
}

impl Model for SafeModel<'_> {
    #[inline(never)]
    fn run(&mut self, w: &Workload, at: &mut usize, count: u64) {
        for _ in 0..count {
            let s = next_of(&w.steps, at);
            let v = s.victim as usize;
            drop(self.handles[v].take());
            self.handles[v] = Some(self.pool.store(&w.data[..s.size as usize]).expect("store"));
            self.lens[v] = s.size;
        }
    }
}

/// Raw layer: caller-owned handle words (as the C ABI keeps them).
pub struct RawModel<'p> {
    pub pool: &'p Pool,
    /// Address-stable: boxed once, never resized while objects live.
    pub words: Box<[AtomicUsize]>,
    pub lens: Vec<u32>,
}

impl<'p> RawModel<'p> {
    pub fn fill(pool: &'p Pool, w: &Workload) -> Self {
        let words: Box<[AtomicUsize]> = (0..w.n()).map(|_| AtomicUsize::new(0)).collect();
        for (h, &s) in words.iter().zip(&w.initial) {
            // SAFETY: `h` is an empty word in `words`, which stays at this address until every
            // object is freed (`Drop` frees them all before the box is released).
            unsafe { pool.store_raw(h, &w.data[..s as usize]) }.expect("store_raw");
        }
        RawModel { pool, words, lens: w.initial.clone() }
    }
}

impl Model for RawModel<'_> {
    #[inline(never)]
    fn run(&mut self, w: &Workload, at: &mut usize, count: u64) {
        for _ in 0..count {
            let s = next_of(&w.steps, at);
            let v = s.victim as usize;
            let h = &self.words[v];
            // SAFETY: `h` is a word of `self.words` holding an object of this pool; after the
            // free it is empty and stays address-stable for the new object (see `fill`).
            unsafe {
                self.pool.free_raw(h).expect("free_raw");
                self.pool.store_raw(h, &w.data[..s.size as usize]).expect("store_raw");
            }
            self.lens[v] = s.size;
        }
    }
}

impl Drop for RawModel<'_> {
    fn drop(&mut self) {
        for h in self.words.iter() {
            // SAFETY: every word is empty or holds an object of this pool.
            let _ = unsafe { self.pool.free_raw(h) };
        }
    }
}

/// Baseline: `malloc` + `memcpy` to store, `free` to free.
pub struct MallocModel {
    pub ptrs: Vec<*mut u8>,
    pub lens: Vec<u32>,
}

/// `malloc(len)` + `memcpy` of `src`.
#[inline(always)]
fn malloc_copy(src: &[u8]) -> *mut u8 {
    // SAFETY: malloc has no preconditions; the result is checked for null before the copy,
    // which writes exactly `src.len()` bytes into the fresh block of that size.
    unsafe {
        let p = libc::malloc(src.len()).cast::<u8>();
        assert!(!p.is_null(), "malloc failed");
        std::ptr::copy_nonoverlapping(src.as_ptr(), p, src.len());
        p
    }
}

impl MallocModel {
    pub fn fill(w: &Workload) -> Self {
        let ptrs = w.initial.iter().map(|&s| malloc_copy(&w.data[..s as usize])).collect();
        MallocModel { ptrs, lens: w.initial.clone() }
    }
}

impl Model for MallocModel {
    #[inline(never)]
    fn run(&mut self, w: &Workload, at: &mut usize, count: u64) {
        for _ in 0..count {
            let s = next_of(&w.steps, at);
            let v = s.victim as usize;
            // SAFETY: every entry of `ptrs` is a live block from `malloc_copy`, freed once here
            // and replaced at once.
            unsafe { libc::free(self.ptrs[v].cast()) };
            self.ptrs[v] = malloc_copy(&w.data[..s.size as usize]);
            self.lens[v] = s.size;
        }
    }
}

impl Drop for MallocModel {
    fn drop(&mut self) {
        for &p in &self.ptrs {
            // SAFETY: each pointer is a live block from `malloc_copy`, freed exactly once.
            unsafe { libc::free(p.cast()) };
        }
    }
}

/// The floor of a step: the `malloc` baseline plus the locked instructions the semantics ask of a
/// store+free on any design with per-class locks, object headers and caller-owned handle words.
/// A free takes its class's spin lock, clears the block's header with a compare-and-swap (a
/// reader could be registered on it), frees and unlocks; a store takes the new size's class
/// lock, allocates, writes the header and the payload, unlocks and publishes the block in the
/// handle word with a compare-and-swap. No fullness lists, no validation, no statistics:
/// `step_floor / malloc` bounds what the pool's step can reach, `raw / step_floor` is what the
/// pool's own bookkeeping costs on top.
pub struct LockedModel {
    /// Each block: header word, then payload; published in `words` as the pool publishes.
    pub words: Box<[AtomicUsize]>,
    pub lens: Vec<u32>,
    locks: Box<[ClassLock]>,
}

/// A class lock as the pool's: a spin lock on its own 128-byte line pair.
#[repr(align(128))]
#[derive(Default)]
struct ClassLock(std::sync::atomic::AtomicBool);

impl ClassLock {
    #[inline(always)]
    fn lock(&self) {
        use std::sync::atomic::Ordering::{Acquire, Relaxed};
        while self.0.compare_exchange(false, true, Acquire, Relaxed).is_err() {
            std::hint::spin_loop();
        }
    }

    #[inline(always)]
    fn unlock(&self) {
        self.0.store(false, std::sync::atomic::Ordering::Release);
    }
}

/// Header of a stored block: allocated bit, no readers (as the pool's header says "allocated").
const LOCKED_HEADER: u64 = 1;

impl LockedModel {
    /// Class of a block of `len` payload bytes: the pool's default spacing (16 bytes).
    #[inline(always)]
    fn class(&self, len: u32) -> &ClassLock {
        &self.locks[(len as usize + 8) >> 4]
    }

    pub fn fill(w: &Workload) -> Self {
        let locks = (0..=(MAX_SIZE as usize + 8) >> 4).map(|_| ClassLock::default()).collect();
        let words: Box<[AtomicUsize]> = (0..w.n()).map(|_| AtomicUsize::new(0)).collect();
        let mut m = LockedModel { words, lens: w.initial.clone(), locks };
        for (i, &s) in w.initial.iter().enumerate() {
            m.store(i, &w.data[..s as usize]);
        }
        m
    }

    #[inline(always)]
    fn store(&mut self, i: usize, src: &[u8]) {
        use std::sync::atomic::{AtomicU64, Ordering::*};
        let class = self.class(src.len() as u32);
        class.lock();
        // SAFETY: malloc has no preconditions; the result is checked for null, is 16-aligned
        // (so the header word is aligned) and has room for the header plus `src.len()` bytes,
        // the only bytes written; the header is accessed only atomically from here on.
        let p = unsafe {
            let p = libc::malloc(8 + src.len()).cast::<u8>();
            assert!(!p.is_null(), "malloc failed");
            (*p.cast::<AtomicU64>()).store(LOCKED_HEADER, Release);
            std::ptr::copy_nonoverlapping(src.as_ptr(), p.add(8), src.len());
            p
        };
        class.unlock();
        let published = self.words[i].compare_exchange(0, p as usize, AcqRel, Acquire);
        assert!(published.is_ok(), "handle word in use");
    }

    #[inline(always)]
    fn free(&mut self, i: usize) {
        use std::sync::atomic::{AtomicU64, Ordering::*};
        let p = self.words[i].load(Acquire) as *mut u8;
        let class = self.class(self.lens[i]);
        class.lock();
        // SAFETY: `p` is a live block of `store` whose first word is its atomic header; it is
        // freed exactly once, here, and its handle word emptied.
        unsafe {
            let header = &*p.cast::<AtomicU64>();
            let freed = header.compare_exchange(LOCKED_HEADER, 0, AcqRel, Acquire);
            assert!(freed.is_ok(), "block busy");
            libc::free(p.cast());
        }
        class.unlock();
        self.words[i].store(0, Release);
    }
}

impl Model for LockedModel {
    #[inline(never)]
    fn run(&mut self, w: &Workload, at: &mut usize, count: u64) {
        for _ in 0..count {
            let s = next_of(&w.steps, at);
            let v = s.victim as usize;
            self.free(v);
            self.store(v, &w.data[..s.size as usize]);
            self.lens[v] = s.size;
        }
    }
}

impl Drop for LockedModel {
    fn drop(&mut self) {
        for i in 0..self.words.len() {
            if self.words[i].load(std::sync::atomic::Ordering::Acquire) != 0 {
                self.free(i);
            }
        }
    }
}

/// The floor of a registered read: `malloc`'d blocks laid out as the pool lays out objects (an
/// 8-byte header, then the payload), where a read adds itself to the header with one locked
/// instruction before copying and removes itself with one after. That is the least any design
/// can do that lets a concurrent free see an active reader (a free is refused while the
/// object is being read), so `read_registered / read_malloc` bounds what the pool's read can reach.
pub struct RegisteredModel {
    /// Each block: header word, then `lens[i]` payload bytes.
    pub blocks: Vec<*mut u8>,
    pub lens: Vec<u32>,
}

/// One reader, as the pool's header counts readers (bit 1 and up).
const REGISTERED_READER: u64 = 2;

impl RegisteredModel {
    pub fn fill(w: &Workload) -> Self {
        let blocks = w
            .initial
            .iter()
            .map(|&s| {
                let src = &w.data[..s as usize];
                // SAFETY: malloc has no preconditions; the result is checked for null, is
                // 16-aligned (so the header word is aligned) and has room for the header plus
                // `src.len()` payload bytes, which are the only bytes written.
                unsafe {
                    let p = libc::malloc(8 + src.len()).cast::<u8>();
                    assert!(!p.is_null(), "malloc failed");
                    p.cast::<u64>().write(1);
                    std::ptr::copy_nonoverlapping(src.as_ptr(), p.add(8), src.len());
                    p
                }
            })
            .collect();
        RegisteredModel { blocks, lens: w.initial.clone() }
    }
}

impl Drop for RegisteredModel {
    fn drop(&mut self) {
        for &p in &self.blocks {
            // SAFETY: each pointer is a live block from `fill`, freed exactly once.
            unsafe { libc::free(p.cast()) };
        }
    }
}

/// `seq[*at]`, advancing `*at` cyclically: how every model walks its steps and read orders.
#[inline(always)]
fn next_of<T: Copy>(seq: &[T], at: &mut usize) -> T {
    let v = seq[*at];
    *at = if *at + 1 == seq.len() { 0 } else { *at + 1 };
    v
}
