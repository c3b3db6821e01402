//! The pure-Rust side of the speed harness (`bench/speed.py`): the same operations on the same
//! objects, timed in the same process and build as the Python calls they are compared with.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::atomic::AtomicUsize;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use zsmalloc_core::{Handle, Pool, PoolConfig, HANDLE_SIZE};

use crate::buffers::BytesArg;
use crate::errors::PyRes;

/// CPU time of the calling thread (user + system, page faults included), in nanoseconds. Unlike
/// wall-clock time it does not count waiting for a core, so it holds up on a shared machine.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID is always supported
    // on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A start point on the thread CPU clock.
#[derive(Clone, Copy)]
struct Instant(u64);

impl Instant {
    fn now() -> Self {
        Instant(thread_cpu_ns())
    }
    fn elapsed_ns(self) -> u64 {
        thread_cpu_ns() - self.0
    }
}

/// Best-of-`repeats` thread-CPU nanoseconds per object for each operation, on a fresh default pool per
/// repeat, over the objects `data` cut into `lengths`:
///
/// - `store`: safe `Pool::store` of each object (handles kept in a `Vec`);
/// - `store_vecs`: as `store`, from objects in separate heap buffers (as a list of `bytes` is);
/// - `store_raw`: `store_raw` into a packed array of handle words (what `store_many` does);
/// - `read`: safe `Pool::read_to_vec` of each object (a new buffer each, all kept, like the
///   list of `bytes` of `read_many`);
/// - `read_into`: safe `Pool::read_into` back to back into one buffer;
/// - `read_raw`: `read_begin_raw` + copy + `read_end_raw` of each raw handle into a buffer;
/// - `free`: dropping the safe handles.
///
/// `ops` limits the timed operations to those named (the setup they need still runs), so a
/// caller can time one Rust operation right next to its Python counterpart.
#[pyfunction]
#[pyo3(signature = (data, lengths, repeats = 5, ops = None))]
pub fn rust_bench(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    lengths: Vec<usize>,
    repeats: usize,
    ops: Option<Vec<String>>,
) -> PyResult<HashMap<&'static str, f64>> {
    let wanted = |op: &str| ops.as_ref().map_or(true, |o| o.iter().any(|x| x == op));
    let safe = ["store", "read", "read_into", "free"].iter().any(|o| wanted(o));
    let raw = ["store_raw", "read_raw"].iter().any(|o| wanted(o));
    let vecs = wanted("store_vecs");
    let data = BytesArg::get(data)?;
    let data = data.as_slice();
    if lengths.iter().sum::<usize>() != data.len() {
        return Err(PyValueError::new_err("lengths must add up to len(data)"));
    }
    let n = lengths.len().max(1) as f64;
    let mut offs = Vec::with_capacity(lengths.len());
    let mut off = 0;
    for &l in &lengths {
        offs.push((off, l));
        off += l;
    }
    py.allow_threads(|| {
        let mut best: HashMap<&'static str, f64> = HashMap::new();
        let mut note = |k: &'static str, t: Instant| {
            if !wanted(k) {
                return;
            }
            let ns = t.elapsed_ns() as f64 / n;
            let e = best.entry(k).or_insert(f64::INFINITY);
            *e = e.min(ns);
        };
        // Touched before timing, as the Python side's reused output buffer is.
        let mut out = vec![1u8; data.len()];
        let mut local = vec![1u8; 65536 + HANDLE_SIZE];
        for _ in 0..repeats.max(1) {
            if !safe {
                break;
            }
            // Safe layer.
            let pool = Pool::new(PoolConfig::default())?;
            let mut hs: Vec<Handle<&Pool>> = Vec::with_capacity(offs.len());
            let t = Instant::now();
            for &(o, l) in &offs {
                hs.push(pool.store(&data[o..o + l])?);
            }
            note("store", t);
            // Every object read into a buffer of its own, all kept (as `read_many` returns them).
            let mut kept: Vec<Vec<u8>> = Vec::with_capacity(hs.len());
            let t = Instant::now();
            for h in &hs {
                kept.push(pool.read_to_vec(h)?);
            }
            note("read", t);
            drop(black_box(kept));
            let t = Instant::now();
            let mut at = 0;
            for h in &hs {
                at += pool.read_into(h, &mut out[at..])?;
            }
            note("read_into", t);
            black_box(&out);
            let t = Instant::now();
            drop(hs);
            note("free", t);
        }
        for _ in 0..repeats.max(1) {
            if !vecs {
                break;
            }
            // Sources in separate heap buffers, as a list of `bytes` objects is.
            let sources: Vec<Vec<u8>> =
                offs.iter().map(|&(o, l)| data[o..o + l].to_vec()).collect();
            let pool = Pool::new(PoolConfig::default())?;
            let mut hs: Vec<Handle<&Pool>> = Vec::with_capacity(offs.len());
            let t = Instant::now();
            for src in &sources {
                hs.push(pool.store(src)?);
            }
            note("store_vecs", t);
            drop(hs);
        }
        for _ in 0..repeats.max(1) {
            if !raw {
                break;
            }
            // Raw layer with a packed array of handle words.
            let pool = Pool::new(PoolConfig::default())?;
            let words: Box<[AtomicUsize]> = offs.iter().map(|_| AtomicUsize::new(0)).collect();
            let t = Instant::now();
            for (w, &(o, l)) in words.iter().zip(&offs) {
                // SAFETY: `words` stays put until every object is freed below.
                unsafe { pool.store_raw(w, &data[o..o + l])? };
            }
            note("store_raw", t);
            let t = Instant::now();
            for (w, &(o, l)) in words.iter().zip(&offs) {
                // SAFETY: `local` holds a page plus the header; the section ends at once.
                unsafe {
                    let p = pool.read_begin_raw(w, l, local.as_mut_ptr())?;
                    std::ptr::copy_nonoverlapping(p, out.as_mut_ptr().add(o), l);
                    pool.read_end_raw(w, Some(l))?;
                }
            }
            note("read_raw", t);
            black_box(&out);
            for w in words.iter() {
                // SAFETY: words filled above.
                unsafe { pool.free_raw(w)? };
            }
        }
        Ok(best)
    })
    .py()
}
