//! Async write-protect and `PAGEMAP_SCAN` on the running kernel, combined as the tier's
//! write-aware policy uses them: a range registered missing + write-protect under
//! `UFFD_FEATURE_WP_ASYNC`, pages brought in write-protected (`UFFDIO_COPY_MODE_WP`); a write
//! to one goes through with no fault message and the scan then reports it written; re-arming
//! protects it again; `UFFDIO_MOVE` still takes a page (protected or written) out into a
//! missing-only staging area, leaving a hole whose next touch is a missing fault; a scan that
//! re-arms leaves holes as holes; `MADV_POPULATE_WRITE` of a protected page goes through and
//! counts as a write. Skipped, with the reason printed, without root or the features. No test
//! can hang: a touch that would wait runs on a thread of its own, and on a timeout the region
//! is unregistered, which releases it.

mod uffd_support;

use std::sync::mpsc;
use std::thread;

use uffd_support::{open_or_skip, pattern, TIMEOUT};
use zsmalloc_tier::pagemap::{PageRegion, Pagemap};
use zsmalloc_tier::region::Region;
use zsmalloc_tier::uffd::{page_size, Event, Features, Modes};

const MADV_POPULATE_WRITE: libc::c_int = 23;

fn read_page(addr: usize) -> Vec<u8> {
    let p = addr as *const u8;
    // SAFETY: a page of a live region of this test's; volatile reads go to memory every time.
    (0..page_size()).map(|b| unsafe { p.add(b).read_volatile() }).collect()
}

/// The written pages of `region` (by index), re-armed when `rearm`.
fn written(pm: &Pagemap, region: &Region, rearm: bool) -> Vec<usize> {
    let mut buf = [PageRegion::default(); 8];
    let mut pages = Vec::new();
    let page = page_size();
    pm.written(region.addr(), region.addr() + region.len(), rearm, &mut buf, |s, e| {
        pages.extend((s - region.addr()) / page..(e - region.addr()) / page)
    })
    .expect("PAGEMAP_SCAN");
    pages
}

/// Writes `byte` at `addr` on a thread of its own; whether it finished within the timeout
/// (a write that waits on a fault message would not).
fn write_within_timeout(addr: usize, byte: u8) -> bool {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        // SAFETY: a page of the live region; the write either completes or waits for the
        // handler, and the region outlives the thread (unregistered on a timeout, which
        // releases it).
        unsafe { (addr as *mut u8).write_volatile(byte) };
        let _ = tx.send(());
    });
    rx.recv_timeout(TIMEOUT).is_ok()
}

#[test]
fn async_write_protect_pagemap_scan_and_move_combine() {
    const PAGES: usize = 16;
    let features = Features::MOVE | Features::WP_ASYNC;
    let Some(uffd) = open_or_skip("write-protect and scan", features) else { return };
    assert!(
        uffd.features().contains(Features::WP_UNPOPULATED),
        "the kernel turns WP_UNPOPULATED on with WP_ASYNC: {}",
        uffd.features()
    );
    let pm = Pagemap::open().expect("/proc/self/pagemap");
    let region = Region::anonymous(PAGES * page_size()).expect("mmap");
    let staging = Region::anonymous(4 * page_size()).expect("mmap");
    uffd.register(region.addr(), region.len(), Modes::MISSING_AND_WP).expect("register");
    uffd.register(staging.addr(), staging.len(), Modes::MISSING).expect("register staging");
    for i in 0..4 {
        uffd.copy_protected(region.page(i), &pattern(i), true).expect("copy in protected");
    }
    assert_eq!(written(&pm, &region, false), Vec::<usize>::new(), "nothing written yet");

    // A write to a protected page: the kernel lifts the protection itself.
    if !write_within_timeout(region.page(1) + 7, 0xAB) {
        let _ = uffd.unregister(region.addr(), region.len());
        panic!("a write to a page copied in with MODE_WP waited for a handler");
    }
    assert!(uffd.read_event().expect("read").is_none(), "no message for an async write");
    let mut want = pattern(1);
    want[7] = 0xAB;
    assert_eq!(read_page(region.page(1)), want, "the write landed");
    assert_eq!(written(&pm, &region, false), vec![1], "reported written, not re-armed");
    assert_eq!(written(&pm, &region, true), vec![1], "reported again, now re-armed");
    assert_eq!(written(&pm, &region, false), Vec::<usize>::new(), "re-armed: not written");
    assert!(write_within_timeout(region.page(1), 0xCD), "a write after re-arming");
    assert_eq!(written(&pm, &region, true), vec![1], "the write after re-arming is seen");

    // UFFDIO_MOVE out of the WP-registered range: a protected page and a written one.
    for (slot, i) in [(0, 2), (1, 1)] {
        // SAFETY: the region is reached through raw addresses only; no reference into it.
        unsafe { uffd.move_pages(staging.page(slot), region.page(i), page_size()) }
            .unwrap_or_else(|e| panic!("move of page {i} out of a MISSING|WP range: {e}"));
    }
    let resident = region.resident().expect("mincore");
    assert_eq!(&resident[..4], &[true, false, false, true], "the moved pages are holes");
    assert_eq!(read_page(staging.page(0)), pattern(2), "the protected page moved whole");
    want[0] = 0xCD;
    assert_eq!(read_page(staging.page(1)), want, "the written page moved with its writes");

    // A re-arming scan over holes and never-touched pages leaves them holes: touching one is
    // a missing fault, served write-protected as a fresh page is.
    assert_eq!(written(&pm, &region, true), Vec::<usize>::new());
    for i in [2, 9] {
        let addr = region.page(i);
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            // SAFETY: a hole of the live region: the read faults and waits to be served (or
            // released by the unregister on a timeout).
            let b = unsafe { (addr as *const u8).read_volatile() };
            let _ = tx.send(b);
        });
        let polled = uffd.poll(TIMEOUT).expect("poll");
        let event = uffd.read_event().expect("read");
        let missing = polled
            && matches!(event, Some(Event::PageFault { address, write_protect: false, .. })
                if address == addr);
        if !missing {
            let _ = uffd.unregister(region.addr(), region.len());
            panic!("page {i}: a touch of a hole after a re-arming scan: {event:?}");
        }
        uffd.copy_protected(addr, &pattern(i), true).expect("serve protected");
        assert_eq!(rx.recv_timeout(TIMEOUT).expect("woken"), pattern(i)[0]);
    }
    assert_eq!(written(&pm, &region, false), Vec::<usize>::new(), "served pages protected");

    // MADV_POPULATE_WRITE of a protected page goes through (no message) and counts as a write.
    // SAFETY: page 3 is present; the advice takes a write fault without writing a byte.
    let r = unsafe {
        libc::madvise(region.page(3) as *mut libc::c_void, page_size(), MADV_POPULATE_WRITE)
    };
    assert_eq!(r, 0, "MADV_POPULATE_WRITE: {}", std::io::Error::last_os_error());
    assert!(uffd.read_event().expect("read").is_none(), "no message for the populate");
    assert_eq!(written(&pm, &region, false), vec![3], "the populate lifted the protection");
    assert_eq!(read_page(region.page(3)), pattern(3), "and changed no byte");

    uffd.unregister(region.addr(), region.len()).expect("unregister");
    uffd.unregister(staging.addr(), staging.len()).expect("unregister staging");
}
