//! The userfaultfd layer against the running kernel: faults on a registered region served with
//! pages decompressed from lz4 read back byte for byte; `UFFDIO_MOVE` takes a populated page
//! out of a registered region (the eviction that cannot lose a write) and the next touch
//! faults and is served; a user-mode-only descriptor serves the thread's faults and fails a
//! system call's with EFAULT. Skipped, with the reason printed, without root (or access to
//! /dev/userfaultfd) or without the kernel features. No test can hang: the handler waits for
//! each fault with a timeout, and on any failure unregisters the region, which releases the
//! waiting thread to read zeros — the byte check then fails.

mod uffd_support;

use std::io::Write;
use std::sync::Arc;
use std::thread;

use uffd_support::{open_or_skip, pattern, TIMEOUT};
use zsmalloc_codec::{Codec, Compressor, DEFAULT_ZSTD_LEVEL};
use zsmalloc_tier::region::Region;
use zsmalloc_tier::uffd::{page_size, Event, Features, Modes, Uffd, UffdError, Wait};

fn lz4() -> Codec {
    Codec::new(Compressor::Lz4, DEFAULT_ZSTD_LEVEL, page_size()).expect("lz4 needs no library")
}

fn packed(page: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; Compressor::Lz4.bound(page.len())];
    let n = lz4().compress(page, &mut out).expect("the bound fits");
    out.truncate(n);
    out
}

/// Page `i` of `region`, read byte by byte (each read may fault and wait for the handler).
fn read_page(region: &Region, i: usize) -> Vec<u8> {
    let p = region.page(i) as *const u8;
    // SAFETY: the page is inside the live region; volatile reads go to memory every time, so
    // a read of a missing page faults here rather than being assumed.
    (0..page_size()).map(|b| unsafe { p.add(b).read_volatile() }).collect()
}

/// One fault served: the page index and whether it was a write.
type Served = Vec<(usize, bool)>;

/// Serves `expected` faults on `region` (registered with `uffd`), page `i` with `images[i]`
/// decompressed. On a timeout or any failure it unregisters the region, so the faulting
/// thread goes on (reading zeros) instead of waiting forever.
fn spawn_handler(
    uffd: Arc<Uffd>,
    region: (usize, usize),
    images: Vec<Option<Vec<u8>>>,
    expected: usize,
) -> thread::JoinHandle<Result<Served, String>> {
    thread::spawn(move || {
        let (base, len) = region;
        let result = serve(&uffd, base, len, &images, expected);
        if result.is_err() {
            let _ = uffd.unregister(base, len);
        }
        result
    })
}

fn serve(
    uffd: &Uffd,
    base: usize,
    len: usize,
    images: &[Option<Vec<u8>>],
    expected: usize,
) -> Result<Served, String> {
    let page = page_size();
    let mut buf = vec![0u8; page];
    let mut codec = lz4();
    let mut served = Vec::new();
    while served.len() < expected {
        if !uffd.poll(TIMEOUT).map_err(|e| e.to_string())? {
            return Err(format!("no fault within {TIMEOUT:?} after {} served", served.len()));
        }
        let event = uffd.read_event().map_err(|e| e.to_string())?;
        let Some(Event::PageFault { address, write, .. }) = event else {
            match event {
                None => continue,
                Some(other) => return Err(format!("unexpected event {other:?}")),
            }
        };
        if address < base || address >= base + len {
            return Err(format!("fault at {address:#x} outside the region"));
        }
        let i = (address - base) / page;
        let image = images[i].as_ref().ok_or(format!("page {i} has no image"))?;
        if codec.decompress(image, &mut buf) != Ok(page) {
            return Err(format!("page {i} does not decompress"));
        }
        uffd.copy(base + i * page, &buf, true).map_err(|e| e.to_string())?;
        served.push((i, write));
    }
    Ok(served)
}

#[test]
fn faults_are_served_with_decompressed_pages_and_read_back_exactly() {
    const PAGES: usize = 64;
    let Some(uffd) = open_or_skip("decompressed pages", Features::NONE) else { return };
    let uffd = Arc::new(uffd);
    let region = Region::anonymous(PAGES * page_size()).expect("mmap");
    uffd.register(region.addr(), region.len(), Modes::MISSING).expect("register");
    assert!(region.resident().expect("mincore").iter().all(|&r| !r), "nothing touched yet");
    let images: Vec<Option<Vec<u8>>> = (0..PAGES).map(|i| Some(packed(&pattern(i)))).collect();
    let handler = spawn_handler(uffd.clone(), (region.addr(), region.len()), images, PAGES);

    let mut bad = Vec::new();
    for i in 0..PAGES {
        if read_page(&region, i) != pattern(i) {
            bad.push(i);
        }
    }
    let served = handler.join().expect("the handler thread").expect("the handler");
    assert!(bad.is_empty(), "pages read back wrong: {bad:?}");
    let expected: Served = (0..PAGES).map(|i| (i, false)).collect();
    assert_eq!(served, expected, "one read fault per page, in touch order");
    assert!(region.resident().expect("mincore").iter().all(|&r| r));
    uffd.unregister(region.addr(), region.len()).expect("unregister");
}

#[test]
fn a_page_moved_out_leaves_a_hole_whose_next_touch_faults_and_is_served() {
    const PAGES: usize = 8;
    const EVICTED: usize = 3;
    let Some(uffd) = open_or_skip("move out", Features::MOVE) else { return };
    let uffd = Arc::new(uffd);
    let region = Region::anonymous(PAGES * page_size()).expect("mmap");
    let staging = Region::anonymous(PAGES * page_size()).expect("mmap");
    let unregistered = Region::anonymous(page_size()).expect("mmap");
    uffd.register(region.addr(), region.len(), Modes::MISSING).expect("register");
    uffd.register(staging.addr(), staging.len(), Modes::MISSING).expect("register staging");
    for i in 0..PAGES {
        uffd.copy(region.page(i), &pattern(i), true).expect("populate");
    }
    assert!(region.resident().expect("mincore").iter().all(|&r| r));

    // SAFETY: the region is reached through raw addresses only; no reference into it is live.
    let to_unregistered =
        unsafe { uffd.move_pages(unregistered.addr(), region.page(0), page_size()) };
    match to_unregistered {
        Err(UffdError::Os { err, .. }) => assert_eq!(err.raw_os_error(), Some(libc::EINVAL)),
        other => panic!("a move into an unregistered area: {other:?}"),
    }
    assert_eq!(read_page(&region, 0), pattern(0), "a refused move leaves the page in place");

    // SAFETY: as above.
    unsafe { uffd.move_pages(staging.page(EVICTED), region.page(EVICTED), page_size()) }
        .expect("move out");
    let resident = region.resident().expect("mincore");
    let want: Vec<bool> = (0..PAGES).map(|i| i != EVICTED).collect();
    assert_eq!(resident, want, "the moved page is gone from the region, the others stay");
    assert_eq!(read_page(&staging, EVICTED), pattern(EVICTED), "the staging page has its bytes");
    let mut images: Vec<Option<Vec<u8>>> = vec![None; PAGES];
    images[EVICTED] = Some(packed(&read_page(&staging, EVICTED)));

    let handler = spawn_handler(uffd.clone(), (region.addr(), region.len()), images, 1);
    let p = region.page(EVICTED) as *mut u8;
    // SAFETY: inside the live region; the write faults (the page is missing) and waits for the
    // handler, so it lands on the served page, not on the one moved out.
    unsafe { p.write_volatile(0xEE) };
    let served = handler.join().expect("the handler thread").expect("the handler");
    assert_eq!(served, vec![(EVICTED, true)], "exactly one write fault, on the moved page");
    let mut want_page = pattern(EVICTED);
    want_page[0] = 0xEE;
    assert_eq!(read_page(&region, EVICTED), want_page, "the write landed on the served page");
    for i in (0..PAGES).filter(|&i| i != EVICTED) {
        assert_eq!(read_page(&region, i), pattern(i), "page {i} untouched");
    }
    uffd.unregister(region.addr(), region.len()).expect("unregister");
    uffd.unregister(staging.addr(), staging.len()).expect("unregister staging");
}

#[test]
fn serving_fills_holes_only() {
    let Some(uffd) = open_or_skip("holes only", Features::NONE) else { return };
    let region = Region::anonymous(4 * page_size()).expect("mmap");
    uffd.register(region.addr(), region.len(), Modes::MISSING).expect("register");
    uffd.copy(region.page(0), &pattern(0), true).expect("copy");
    match uffd.copy(region.page(0), &pattern(1), true) {
        Err(UffdError::AlreadyMapped { addr, .. }) => assert_eq!(addr, region.page(0)),
        other => panic!("a second copy onto a present page: {other:?}"),
    }
    assert_eq!(read_page(&region, 0), pattern(0), "the first copy stands");
    uffd.zeropage(region.page(1), page_size()).expect("zeropage");
    assert!(read_page(&region, 1).iter().all(|&b| b == 0));
    assert!(matches!(
        uffd.copy(region.page(2) + 8, &pattern(2), true),
        Err(UffdError::Unaligned { .. })
    ));
    let outside = Region::anonymous(page_size()).expect("mmap");
    match uffd.copy(outside.addr(), &pattern(3), true) {
        Err(UffdError::Os { op: "UFFDIO_COPY", err }) => {
            assert_eq!(err.raw_os_error(), Some(libc::ENOENT), "{err}")
        }
        other => panic!("a copy outside any registered range: {other:?}"),
    }
    uffd.wake(region.addr(), region.len()).expect("wake with nobody waiting");
    uffd.unregister(region.addr(), region.len()).expect("unregister");
}

#[test]
fn the_kernel_offers_what_the_tier_needs() {
    let Some(_) = open_or_skip("features", Features::NONE) else { return };
    let offered = Uffd::offered().expect("the features offered");
    eprintln!("offered: {offered}");
    let uffd = Uffd::open(Wait::Blocking, Features::MOVE | Features::THREAD_ID);
    match uffd {
        Ok(u) => assert!(u.features().contains(Features::MOVE | Features::THREAD_ID)),
        Err(UffdError::FeaturesUnavailable { missing }) => {
            assert!(!offered.contains(missing), "refused {missing} though offered")
        }
        Err(e) => panic!("{e}"),
    }
    let all = Features(u64::MAX);
    match Uffd::open(Wait::Blocking, all) {
        Err(UffdError::FeaturesUnavailable { missing }) => {
            assert_eq!(missing, all.without(offered))
        }
        other => panic!("asking for every bit: {other:?}"),
    }
}

#[test]
fn a_handler_that_fails_releases_the_faulting_thread() {
    let Some(uffd) = open_or_skip("handler failure", Features::NONE) else { return };
    let uffd = Arc::new(uffd);
    let region = Region::anonymous(page_size()).expect("mmap");
    uffd.register(region.addr(), region.len(), Modes::MISSING).expect("register");
    let handler = spawn_handler(uffd.clone(), (region.addr(), region.len()), vec![None], 1);
    // The handler has no image for this page: it gives up and unregisters, and the read goes on.
    let page = read_page(&region, 0);
    let failure = handler.join().expect("the handler thread").expect_err("no image to serve");
    assert!(failure.contains("no image"), "{failure}");
    assert!(page.iter().all(|&b| b == 0), "released unserved, the page is the kernel's zeros");
}

#[test]
fn a_write_to_a_write_protected_page_waits_until_released() {
    let Some(uffd) = open_or_skip("write-protect", Features::PAGEFAULT_FLAG_WP) else { return };
    let uffd = Arc::new(uffd);
    let region = Region::anonymous(page_size()).expect("mmap");
    uffd.register(region.addr(), region.len(), Modes::MISSING_AND_WP).expect("register");
    uffd.copy(region.page(0), &pattern(0), true).expect("populate");
    uffd.write_protect(region.addr(), region.len(), true).expect("protect");
    let (handler_uffd, base) = (uffd.clone(), region.addr());
    let handler = thread::spawn(move || -> Result<Event, String> {
        let got = handler_uffd.poll(TIMEOUT).map_err(|e| e.to_string())?;
        // Released in every case, so the writer never waits past the timeout.
        let event = if got { handler_uffd.read_event().map_err(|e| e.to_string())? } else { None };
        handler_uffd.write_protect(base, page_size(), false).map_err(|e| e.to_string())?;
        event.ok_or_else(|| format!("no fault within {TIMEOUT:?}"))
    });
    let p = region.page(0) as *mut u8;
    // SAFETY: inside the live region; the write waits while the page is write-protected.
    unsafe { p.write_volatile(0x5A) };
    match handler.join().expect("the handler thread").expect("the handler") {
        Event::PageFault { address, write, write_protect, .. } => {
            assert_eq!((address, write, write_protect), (region.page(0), true, true));
        }
        other => panic!("expected a write-protect fault: {other:?}"),
    }
    let mut want = pattern(0);
    want[0] = 0x5A;
    assert_eq!(read_page(&region, 0), want, "the write landed once released");
    uffd.unregister(region.addr(), region.len()).expect("unregister");
}

#[test]
fn a_user_mode_only_descriptor_serves_the_programs_faults_and_fails_the_kernels() {
    use zsmalloc_tier::uffd::Faults;
    let test = "user-mode only";
    let uffd = match Uffd::open_for(Wait::NonBlocking, Features::NONE, Faults::UserModeOnly) {
        Ok(u) => Arc::new(u),
        Err(e @ (UffdError::NoPermission | UffdError::Unsupported)) => {
            let _ = writeln!(std::io::stderr(), "{test}: skipped: {e}");
            return;
        }
        Err(e) => panic!("{test}: {e}"),
    };
    let region = Region::anonymous(3 * page_size()).expect("mmap");
    uffd.register(region.addr(), region.len(), Modes::MISSING).expect("register");
    let images: Vec<Option<Vec<u8>>> = (0..3).map(|i| Some(packed(&pattern(i)))).collect();
    // Two faults are expected, pages 1 and 2, touched by this thread; a report of the kernel's
    // fault on page 0 would be served in their stead and show in the list.
    let handler = spawn_handler(uffd.clone(), (region.addr(), region.len()), images, 2);
    assert_eq!(read_page(&region, 1), pattern(1));
    let zero = std::fs::File::open("/dev/zero").expect("/dev/zero");
    // SAFETY: read(2) into page 0 of the live region, one page long.
    let n = unsafe {
        libc::read(
            std::os::fd::AsRawFd::as_raw_fd(&zero),
            region.page(0) as *mut libc::c_void,
            page_size(),
        )
    };
    let err = std::io::Error::last_os_error();
    assert_eq!((n, err.raw_os_error()), (-1, Some(libc::EFAULT)), "the kernel's fault fails");
    assert_eq!(read_page(&region, 2), pattern(2));
    let served = handler.join().expect("the handler thread").expect("the handler");
    assert_eq!(served, vec![(1, false), (2, false)]);
    uffd.unregister(region.addr(), region.len()).expect("unregister");
}
