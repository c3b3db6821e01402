//! The pure-Rust side of the speed harness (`bench/speed.py`): the same operations on the same
//! objects, timed in the same process and build as the Python calls they are compared with.

use std::collections::HashMap;
use std::hint::black_box;
use std::sync::atomic::AtomicUsize;
use std::time::Instant;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use zsmalloc_core::{Handle, Pool, PoolConfig, HANDLE_SIZE};

use crate::buffers::BytesArg;
use crate::errors::PyRes;

/// Best-of-`repeats` nanoseconds per object for each operation, on a fresh default pool per
/// repeat, over the objects `data` cut into `lengths`:
///
/// - `store`: safe `Pool::store` of each object (handles kept in a `Vec`);
/// - `store_raw`: `store_raw` into a packed array of handle words (what `store_many` does);
/// - `read`: safe `Pool::read_to_vec` of each object (a new buffer each, like `bytes`);
/// - `read_into`: safe `Pool::read_into` back to back into one buffer;
/// - `read_raw`: `read_begin_raw` + copy + `read_end_raw` of each raw handle into a buffer;
/// - `free`: dropping the safe handles.
#[pyfunction]
#[pyo3(signature = (data, lengths, repeats = 5))]
pub fn rust_bench(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    lengths: Vec<usize>,
    repeats: usize,
) -> PyResult<HashMap<&'static str, f64>> {
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
            let ns = t.elapsed().as_nanos() as f64 / n;
            let e = best.entry(k).or_insert(f64::INFINITY);
            *e = e.min(ns);
        };
        let mut out = vec![0u8; data.len()];
        let mut local = vec![0u8; 65536 + HANDLE_SIZE];
        for _ in 0..repeats.max(1) {
            // Safe layer.
            let pool = Pool::new(PoolConfig::default())?;
            let mut hs: Vec<Handle<&Pool>> = Vec::with_capacity(offs.len());
            let t = Instant::now();
            for &(o, l) in &offs {
                hs.push(pool.store(&data[o..o + l])?);
            }
            note("store", t);
            let t = Instant::now();
            for h in &hs {
                black_box(pool.read_to_vec(h)?);
            }
            note("read", t);
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
