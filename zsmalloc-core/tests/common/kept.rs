//! Objects kept in a pool across an error (`Kept`), and what every error test asserts of the
//! pool afterwards: same counters, same pages, every earlier object still reads back its bytes,
//! and new stores still work.

use std::sync::atomic::{AtomicUsize, Ordering};

use zsmalloc_core::{Error, Pool, PoolConfig, HANDLE_SIZE};

use super::pattern;

/// Objects kept in a pool through the raw layer (boxed words: stable addresses), with their bytes.
pub struct Kept<'p> {
    pub pool: &'p Pool,
    pub objs: Vec<(Box<AtomicUsize>, Vec<u8>)>,
}

impl<'p> Kept<'p> {
    pub fn new(pool: &'p Pool) -> Self {
        Kept { pool, objs: Vec::new() }
    }

    /// Stores an object of `len` bytes; returns its index.
    pub fn store(&mut self, seed: u64, len: usize) -> usize {
        let data = pattern(seed, len);
        let h = Box::new(AtomicUsize::new(0));
        // SAFETY: the word is boxed (stable address) and kept in `objs` until freed by `free_all`.
        unsafe { self.pool.store_raw(&h, &data) }.expect("store");
        self.objs.push((h, data));
        self.objs.len() - 1
    }

    pub fn word(&self, i: usize) -> &AtomicUsize {
        &self.objs[i].0
    }

    /// Every object reads back its bytes through a read section, `read_sg` and `object_len_raw`.
    pub fn check(&self) {
        let mut local = vec![0u8; self.pool.config().page_size as usize + HANDLE_SIZE];
        for (i, (h, data)) in self.objs.iter().enumerate() {
            // SAFETY: `local` holds len + 8 bytes; each section ends before the next begins.
            unsafe {
                assert_eq!(self.pool.object_len_raw(h), Ok(data.len()), "object {i}");
                let p = self.pool.read_begin_raw(h, data.len(), local.as_mut_ptr()).expect("read");
                assert_eq!(std::slice::from_raw_parts(p, data.len()), &data[..], "object {i}");
                self.pool.read_end_raw(h, Some(data.len())).expect("read end");
                let (segs, n) = self.pool.read_sg_begin_raw(h, data.len()).expect("sg");
                let mut joined = Vec::new();
                for &(p, l) in &segs[..n] {
                    joined.extend_from_slice(std::slice::from_raw_parts(p, l));
                }
                assert_eq!(joined, *data, "object {i} (sg)");
                self.pool.read_end_raw(h, Some(data.len())).expect("sg end");
            }
        }
        let s = self.pool.stats();
        assert_eq!(s.objs_inuse, self.objs.len() as u64);
        assert_eq!(s.bytes_stored, self.objs.iter().map(|o| o.1.len() as u64).sum::<u64>());
    }

    /// The pool still stores, reads and frees a fresh object (and the kept ones still read back).
    pub fn check_works(&self) {
        self.check();
        let data = pattern(0xfeed, 300);
        let h = self.pool.store(&data).expect("store after error");
        assert_eq!(self.pool.read_to_vec(&h).unwrap(), data);
        h.free().expect("free after error");
        self.check();
    }

    pub fn free_all(&mut self) {
        for (h, _) in self.objs.drain(..) {
            // SAFETY: the word holds an object of this pool (or is empty).
            unsafe { self.pool.free_raw(&h) }.expect("free");
            assert_eq!(h.load(Ordering::Relaxed), 0, "free empties the handle");
        }
    }
}

impl Drop for Kept<'_> {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.free_all();
            assert_eq!(self.pool.total_pages(), 0, "pages return to 0");
        } else {
            // The pool may be corrupt; leak the words rather than leave dangling owners.
            for (h, _) in self.objs.drain(..) {
                std::mem::forget(h);
            }
        }
    }
}

pub fn pool(cfg: PoolConfig) -> Pool {
    Pool::new(cfg).expect("valid config")
}

/// A few objects in several classes, some spanning pages, one huge.
pub fn populated(pool: &Pool) -> Kept<'_> {
    let mut k = Kept::new(pool);
    for (i, len) in [1usize, 7, 24, 100, 694, 1000, 2000, 3000, 4000, 4096, 1500, 1500, 1500]
        .into_iter()
        .enumerate()
    {
        k.store(i as u64, len.min(pool.config().page_size as usize));
    }
    k.check();
    k
}

pub fn assert_invalid_handle<T: std::fmt::Debug>(r: zsmalloc_core::Result<T>, what: &str) {
    match r {
        Err(e @ Error::InvalidHandle(_)) => assert_eq!(e.errno(), libc::EINVAL, "{what}"),
        other => panic!("{what}: expected InvalidHandle, got {other:?}"),
    }
}

pub fn assert_invalid_argument<T: std::fmt::Debug>(r: zsmalloc_core::Result<T>, what: &str) {
    match r {
        Err(e @ Error::InvalidArgument(_)) => assert_eq!(e.errno(), libc::EINVAL, "{what}"),
        other => panic!("{what}: expected InvalidArgument, got {other:?}"),
    }
}

/// Compacts and asserts nothing is left to free (no leaked pin blocks a source).
pub fn compact_fully(p: &Pool) {
    p.compact();
    for c in p.class_stats() {
        assert_eq!(c.freeable, 0, "class {} still freeable after compact", c.size);
    }
}
