//! Many read sections of one object: no begin waits for another section to end. Nested sections
//! in one thread, threads beyond the announce slots and huge objects' readers all count
//! themselves (in the header, then in the excess table); past 65,535 counted sections a begin is
//! refused with `TooManyReaders` (`EAGAIN`), and every end, by any thread, lets go of one.
//!
//! Each case runs in a child thread with a deadline, so a regression fails instead of hanging.

use std::sync::atomic::AtomicUsize;
use std::sync::{mpsc, Barrier};
use std::time::Duration;

use zsmalloc_core::{Error, Pool, PoolConfig};

/// Runs `f` on its own thread; fails the test if it does not finish within `secs` seconds.
fn within(secs: u64, f: impl FnOnce() + Send + 'static) {
    let (tx, rx) = mpsc::channel();
    let t = std::thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(()) => t.join().expect("the case passed"),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            std::panic::resume_unwind(t.join().expect_err("the case panicked"))
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("hung for {secs} s"),
    }
}

fn pool() -> Pool {
    Pool::new(PoolConfig::default()).unwrap()
}

/// A boxed raw handle word (stable address) holding `len` bytes of `b`.
fn stored(pool: &Pool, len: usize, b: u8) -> Box<AtomicUsize> {
    let h = Box::new(AtomicUsize::new(0));
    // SAFETY: the word is boxed and outlives its object (freed before the box drops).
    unsafe { pool.store_raw(&h, &vec![b; len]) }.unwrap();
    h
}

/// 10,000 nested raw sections of one object in one thread, for a small, a spanning and a huge
/// object: every begin returns the bytes; free is refused until the last end, then succeeds.
#[test]
fn ten_thousand_nested_sections_in_one_thread() {
    within(60, || {
        let pool = pool();
        // 100 bytes in one page; 3000 bytes of class 3008 cross pages from object 1 on; 4096 huge.
        for (len, skip) in [(100usize, 0usize), (3000, 1), (4096, 0)] {
            let pad: Vec<_> = (0..skip).map(|_| stored(&pool, len, 0)).collect();
            let h = stored(&pool, len, 7);
            let mut local = vec![0u8; 4096 + 8];
            for _ in 0..10_000 {
                // SAFETY: `local` holds a page plus a header; the section ends below.
                let p = unsafe { pool.read_begin_raw(&h, len, local.as_mut_ptr()) }.unwrap();
                // SAFETY: the section is open and `len` bytes long.
                assert_eq!(unsafe { *p.add(len - 1) }, 7);
            }
            // SAFETY: `h` is this pool's handle.
            assert_eq!(unsafe { pool.free_raw(&h) }, Err(Error::Busy), "len {len}");
            for _ in 0..10_000 {
                // SAFETY: a section is open on `h`.
                unsafe { pool.read_end_raw(&h, Some(len)) }.unwrap();
            }
            // SAFETY: no section is open any more: a further end is refused, the free succeeds.
            unsafe {
                assert!(pool.read_end_raw(&h, Some(len)).is_err(), "no section left");
                pool.free_raw(&h).unwrap();
                for p in &pad {
                    pool.free_raw(p).unwrap();
                }
            }
        }
        assert_eq!(pool.total_pages(), 0);
    });
}

/// Safe nested sections, scatter-gather sections and one-call reads mixed on one handle.
#[test]
fn safe_nested_sections_and_sg() {
    within(60, || {
        let pool = pool();
        let h = pool.store(&[3; 4096]).unwrap();
        let mut bufs: Vec<Vec<u8>> = (0..300).map(|_| vec![0u8; 4104]).collect();
        let sections: Vec<_> = bufs.iter_mut().map(|b| pool.read(&h, b).unwrap()).collect();
        let sgs: Vec<_> = (0..300).map(|_| pool.read_sg(&h).unwrap()).collect();
        assert_eq!(pool.read_to_vec(&h).unwrap(), vec![3; 4096]);
        assert!(sections.iter().all(|s| s[4095] == 3));
        assert!(sgs.iter().all(|s| s.segments()[0][0] == 3));
        drop(sections);
        drop(sgs);
        drop(h);
        assert_eq!(pool.total_pages(), 0);
    });
}

/// 256 threads each hold a section of one object at a barrier (a huge object, and a 100-byte one:
/// threads beyond the announce slots count themselves).
#[test]
fn two_hundred_fifty_six_threads_hold_one_object_at_a_barrier() {
    within(120, || {
        for len in [4096usize, 100] {
            let pool = pool();
            let h = stored(&pool, len, 9);
            let barrier = Barrier::new(257);
            std::thread::scope(|s| {
                for _ in 0..256 {
                    s.spawn(|| {
                        let mut local = vec![0u8; 4104];
                        // SAFETY: `local` outlives the section, which ends below.
                        let p =
                            unsafe { pool.read_begin_raw(&h, len, local.as_mut_ptr()) }.unwrap();
                        barrier.wait();
                        // SAFETY: the section is open.
                        assert_eq!(unsafe { *p }, 9);
                        barrier.wait();
                        // SAFETY: ends this thread's section.
                        unsafe { pool.read_end_raw(&h, Some(len)) }.unwrap();
                    });
                }
                barrier.wait();
                // SAFETY: `h` is this pool's handle.
                assert_eq!(unsafe { pool.free_raw(&h) }, Err(Error::Busy));
                barrier.wait();
            });
            // SAFETY: every section ended.
            unsafe { pool.free_raw(&h) }.unwrap();
            assert_eq!(pool.total_pages(), 0);
        }
    });
}

/// Nested sections begun in one thread are ended by another (the contract allows it).
#[test]
fn nested_sections_ended_from_another_thread() {
    within(60, || {
        let pool = pool();
        for len in [100usize, 4096] {
            let h = stored(&pool, len, 5);
            let mut local = vec![0u8; 4104];
            for _ in 0..50 {
                // SAFETY: `local` outlives the sections, ended by the other thread below.
                unsafe { pool.read_begin_raw(&h, len, local.as_mut_ptr()) }.unwrap();
            }
            std::thread::scope(|s| {
                s.spawn(|| {
                    for _ in 0..50 {
                        // SAFETY: a section is open on `h`.
                        unsafe { pool.read_end_raw(&h, Some(len)) }.unwrap();
                    }
                    // SAFETY: as above.
                    assert!(unsafe { pool.read_end_raw(&h, Some(len)) }.is_err());
                });
            });
            // SAFETY: no section is open.
            unsafe { pool.free_raw(&h) }.unwrap();
        }
        assert_eq!(pool.total_pages(), 0);
    });
}

/// Past 65,535 counted sections a begin is refused with `TooManyReaders` (`EAGAIN`), changing
/// nothing; after one end the next begin succeeds; after all ends the object frees.
#[test]
fn past_the_limit_a_begin_is_refused_not_delayed() {
    within(120, || {
        let pool = pool();
        let h = stored(&pool, 4096, 1); // huge: every section is counted
        let mut local = vec![0u8; 4104];
        let mut open = 0usize;
        let err = loop {
            // SAFETY: `local` outlives the sections, ended below.
            match unsafe { pool.read_begin_raw(&h, 4096, local.as_mut_ptr()) } {
                Ok(_) => open += 1,
                Err(e) => break e,
            }
            assert!(open <= 1 << 20, "no limit");
        };
        assert_eq!(err, Error::TooManyReaders);
        assert_eq!(err.errno(), libc_eagain());
        assert!(open >= 65_535, "{open} sections");
        let reads = pool.stats().reads;
        // SAFETY: sections are open on `h`.
        unsafe {
            assert!(pool.read_begin_raw(&h, 4096, local.as_mut_ptr()).is_err());
            assert_eq!(pool.stats().reads, reads, "a refused begin counts nothing");
            pool.read_end_raw(&h, Some(4096)).unwrap();
            pool.read_begin_raw(&h, 4096, local.as_mut_ptr()).unwrap();
            for _ in 0..open {
                pool.read_end_raw(&h, Some(4096)).unwrap();
            }
            pool.free_raw(&h).unwrap();
        }
        assert_eq!(pool.total_pages(), 0);
    });
}

fn libc_eagain() -> i32 {
    11
}

/// Compaction racing threads that open and close many sections of the objects it would move:
/// it skips read objects, moves the others, and every read sees its object's bytes.
#[test]
fn saturated_objects_are_never_moved() {
    within(120, || {
        let pool = pool();
        let hs: Vec<_> = (0..200).map(|i| stored(&pool, 700, i as u8)).collect();
        for h in hs.iter().skip(1).step_by(2) {
            // SAFETY: this pool's handle, not read.
            unsafe { pool.free_raw(h) }.unwrap();
        }
        let kept: Vec<_> = hs.iter().enumerate().step_by(2).collect();
        std::thread::scope(|s| {
            for t in 0..4 {
                let kept = &kept;
                let pool = &pool;
                s.spawn(move || {
                    let mut local = vec![0u8; 4104];
                    for round in 0..20 {
                        let (i, h) = kept[(t * 7 + round) % kept.len()];
                        for _ in 0..20 {
                            // SAFETY: `local` outlives the sections, ended below.
                            let p =
                                unsafe { pool.read_begin_raw(h, 700, local.as_mut_ptr()) }.unwrap();
                            // SAFETY: open, 700 bytes.
                            assert_eq!(unsafe { *p.add(699) }, i as u8);
                        }
                        for _ in 0..20 {
                            // SAFETY: sections are open on `h`.
                            unsafe { pool.read_end_raw(h, Some(700)) }.unwrap();
                        }
                    }
                });
            }
            for _ in 0..50 {
                pool.compact();
            }
        });
        for (i, h) in &kept {
            let mut out = vec![0u8; 700];
            // SAFETY: this pool's handle.
            assert_eq!(unsafe { pool.read_into_raw(h, &mut out) }, Ok(700));
            assert_eq!(out, vec![*i as u8; 700]);
            // SAFETY: not read any more.
            unsafe { pool.free_raw(h) }.unwrap();
        }
        assert_eq!(pool.total_pages(), 0);
    });
}
