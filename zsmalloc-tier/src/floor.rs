//! The fault-service floor: how long a thread touching a missing page waits when a minimal
//! handler serves it — a `read` of the fault, `LZ4_decompress_safe` of one compressed 4 KiB
//! page, `UFFDIO_COPY` — measured from the faulting thread (a clock read before and after the
//! touch). The tier's own fault service, with a pool lookup in it, is held against these
//! figures; where the handler runs against the faulting thread decides most of them, so each
//! placement is a scenario, beside a plain first touch without userfaultfd.

use std::fmt;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use zsmalloc_codec::{Codec, Compressor, DEFAULT_ZSTD_LEVEL};

use crate::cpu;
use crate::latency::Summary;
use crate::pattern::pattern_page;
use crate::region::Region;
use crate::uffd::{page_size, Event, Features, Modes, Uffd, UffdError, Wait};

/// Where the handler runs and how it waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// Handler and faulting thread pinned on one CPU; the handler sleeps in `read`.
    SameCpu,
    /// Handler pinned on another CPU, sleeping in `read`: each fault wakes that CPU.
    OtherCpu,
    /// Handler pinned on another CPU, never sleeping: a non-blocking `read` in a loop.
    Spinning,
    /// No userfaultfd: the kernel's own first touch of an anonymous page (a write, which
    /// allocates and zeroes a page as `UFFDIO_COPY` allocates and fills one).
    FirstTouch,
}

impl Scenario {
    pub const ALL: [Scenario; 4] =
        [Scenario::SameCpu, Scenario::OtherCpu, Scenario::Spinning, Scenario::FirstTouch];

    /// The key in JSON.
    pub fn key(self) -> &'static str {
        match self {
            Scenario::SameCpu => "same_cpu",
            Scenario::OtherCpu => "other_cpu",
            Scenario::Spinning => "spinning",
            Scenario::FirstTouch => "first_touch",
        }
    }

    /// The row's label in the table.
    pub fn label(self) -> &'static str {
        match self {
            Scenario::SameCpu => "uffd, handler on the same CPU (blocking read)",
            Scenario::OtherCpu => "uffd, handler on another CPU (blocking read)",
            Scenario::Spinning => "uffd, handler on another CPU (spinning read)",
            Scenario::FirstTouch => "no uffd, plain first touch (write)",
        }
    }

    fn needs_two_cpus(self) -> bool {
        matches!(self, Scenario::OtherCpu | Scenario::Spinning)
    }
}

/// Why a measurement did not complete.
#[derive(Debug)]
pub enum FloorError {
    Uffd(UffdError),
    /// The page's compressor could not be made.
    Codec(zsmalloc_codec::Error),
    /// A system call around the measurement failed (`what` names it).
    Os {
        what: &'static str,
        reason: String,
    },
    /// Fewer than two CPUs are allowed, so the handler cannot run apart.
    OneCpu,
    /// The handler failed; the faults were released unserved.
    Handler(String),
    /// A page read back differs from the page compressed.
    Corrupt {
        page: usize,
    },
    /// The run did not end in time (the handler or the faulting thread is stuck).
    Timeout {
        after: Duration,
    },
}

impl fmt::Display for FloorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FloorError::Uffd(e) => write!(f, "{e}"),
            FloorError::Codec(e) => write!(f, "{e}"),
            FloorError::Os { what, reason } => write!(f, "{what}: {reason}"),
            FloorError::OneCpu => {
                f.write_str("needs two allowed CPUs to place the handler apart (see taskset)")
            }
            FloorError::Handler(why) => write!(f, "the fault handler failed: {why}"),
            FloorError::Corrupt { page } => {
                write!(f, "page {page} read back differs from the page served")
            }
            FloorError::Timeout { after } => {
                write!(
                    f,
                    "no result after {} s: the handler or the faulting thread is stuck",
                    after.as_secs()
                )
            }
        }
    }
}

impl std::error::Error for FloorError {}

impl From<zsmalloc_codec::Error> for FloorError {
    fn from(e: zsmalloc_codec::Error) -> FloorError {
        FloorError::Codec(e)
    }
}

impl From<UffdError> for FloorError {
    fn from(e: UffdError) -> FloorError {
        FloorError::Uffd(e)
    }
}

fn os(what: &'static str) -> impl Fn(std::io::Error) -> FloorError {
    move |e| FloorError::Os { what, reason: zsmalloc_core::text_input::io_reason(&e) }
}

/// One measured scenario.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub scenario: Scenario,
    pub faulting_cpu: usize,
    /// `None` for [`Scenario::FirstTouch`].
    pub handler_cpu: Option<usize>,
    /// The wait of the faulting thread, per fault.
    pub summary: Summary,
    /// With [`Plan::breakdown`], the handler's `LZ4_decompress_safe` and `UFFDIO_COPY`, per
    /// fault (what remains of the wait is the message, the switches and the wake-ups).
    pub decompress: Option<Summary>,
    pub copy: Option<Summary>,
}

/// How to measure.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// Faults timed per scenario.
    pub faults: usize,
    /// Untimed faults before them.
    pub warmup: usize,
    /// The faulting thread's CPU (and the handler's on the same CPU).
    pub faulting_cpu: usize,
    /// The handler's CPU when apart.
    pub other_cpu: usize,
    /// Also time the handler's decompression and copy: two more clock reads per fault, and a
    /// copy without wake followed by `UFFDIO_WAKE`, so the copy's time is its own.
    pub breakdown: bool,
}

/// The floor's compressor: lz4, the cheapest of the three to decompress.
pub const COMPRESSOR: Compressor = Compressor::Lz4;

/// A codec of [`COMPRESSOR`] for one page.
fn page_codec() -> Result<Codec, FloorError> {
    Ok(Codec::new(COMPRESSOR, DEFAULT_ZSTD_LEVEL, page_size())?)
}

/// The page every fault is served with, and its lz4 image.
pub struct ServedPage {
    pub page: Vec<u8>,
    pub packed: Vec<u8>,
}

impl ServedPage {
    /// A [`pattern_page`] page and its compression.
    pub fn pattern(seed: u64) -> Result<ServedPage, FloorError> {
        let mut page = vec![0u8; page_size()];
        pattern_page(seed, &mut page);
        let mut packed = vec![0u8; COMPRESSOR.bound(page.len())];
        let n = page_codec()?.compress(&page, &mut packed)?;
        packed.truncate(n);
        Ok(ServedPage { page, packed })
    }
}

/// How long one scenario may take before it is called stuck.
const DEADLINE: Duration = Duration::from_secs(120);

/// Measures `scenario` as `plan` says, every fault served with `served`.
pub fn measure(scenario: Scenario, served: &ServedPage, plan: Plan) -> Result<Outcome, FloorError> {
    let Plan { faults, warmup, faulting_cpu, other_cpu, breakdown } = plan;
    if scenario.needs_two_cpus() && other_cpu == faulting_cpu {
        return Err(FloorError::OneCpu);
    }
    let handler_cpu = match scenario {
        Scenario::SameCpu => Some(faulting_cpu),
        Scenario::OtherCpu | Scenario::Spinning => Some(other_cpu),
        Scenario::FirstTouch => None,
    };
    let total = warmup + faults;
    let region = Region::anonymous(total * page_size()).map_err(os("mmap"))?;
    let handler = match handler_cpu {
        Some(cpu) => {
            let wait =
                if scenario == Scenario::Spinning { Wait::NonBlocking } else { Wait::Blocking };
            let uffd = Uffd::open(wait, Features::NONE)?;
            uffd.register(region.addr(), region.len(), Modes::MISSING)?;
            let packed = served.packed.clone();
            let steps = Steps { expected: total, warmup, timed: breakdown };
            // Made here: the handler allocates nothing once it serves.
            let codec = page_codec()?;
            Some(thread::spawn(move || serve(uffd, codec, &packed, steps, cpu)))
        }
        None => None,
    };
    let (tx, rx) = mpsc::channel();
    let (base, write) = (region.addr(), handler_cpu.is_none());
    thread::spawn(move || {
        let _ = tx.send(touch(base, total, warmup, write, faulting_cpu));
    });
    let samples = match rx.recv_timeout(DEADLINE) {
        Ok(r) => r?,
        Err(_) => {
            // The faulting thread may still be blocked inside the region: leave it mapped.
            std::mem::forget(region);
            return Err(FloorError::Timeout { after: DEADLINE });
        }
    };
    let (mut decompress, mut copy) = (None, None);
    if let Some(h) = handler {
        let mut handled = h.join().map_err(|_| FloorError::Handler("it panicked".into()))??;
        let served_faults = handled.served;
        decompress = Summary::of(&mut handled.decompress_ns);
        copy = Summary::of(&mut handled.copy_ns);
        if served_faults != total {
            return Err(FloorError::Handler(format!("served {served_faults} of {total} faults")));
        }
        for i in 0..total {
            // SAFETY: every page of the region is present now (served), the handler is gone and
            // the faulting thread has ended, so nothing writes these bytes while they are read.
            let got =
                unsafe { std::slice::from_raw_parts(region.page(i) as *const u8, page_size()) };
            if got != served.page.as_slice() {
                return Err(FloorError::Corrupt { page: i });
            }
        }
    }
    let mut samples = samples;
    let summary =
        Summary::of(&mut samples).ok_or(FloorError::Handler("no faults measured".into()))?;
    Ok(Outcome { scenario, faulting_cpu, handler_cpu, summary, decompress, copy })
}

/// What the handler serves, and whether it times its steps (after `warmup` faults).
#[derive(Debug, Clone, Copy)]
struct Steps {
    expected: usize,
    warmup: usize,
    timed: bool,
}

/// What the handler did.
struct Handled {
    served: usize,
    decompress_ns: Vec<u64>,
    copy_ns: Vec<u64>,
}

/// The handler: serves `steps.expected` faults with `packed` decompressed, then closes the
/// userfaultfd. On any failure it returns early, and closing the descriptor releases the
/// waiting thread (whose page then reads as zeros, which the check after the run reports).
fn serve(
    uffd: Uffd,
    mut codec: Codec,
    packed: &[u8],
    steps: Steps,
    cpu: usize,
) -> Result<Handled, FloorError> {
    cpu::pin_current_thread(cpu).map_err(os("sched_setaffinity"))?;
    let page = page_size();
    let mut buf = vec![0u8; page];
    let room = if steps.timed { steps.expected } else { 0 };
    let mut h = Handled {
        served: 0,
        decompress_ns: Vec::with_capacity(room),
        copy_ns: Vec::with_capacity(room),
    };
    while h.served < steps.expected {
        match uffd.read_event()? {
            Some(Event::PageFault { address, .. }) => {
                let timed = steps.timed && h.served >= steps.warmup;
                let t0 = timed.then(Instant::now);
                if codec.decompress(packed, &mut buf) != Ok(page) {
                    return Err(FloorError::Handler("the page does not decompress".into()));
                }
                let t1 = timed.then(Instant::now);
                let dst = address & !(page - 1);
                // Timed, the copy does not wake: the woken thread could run before the clock
                // is read again (on the same CPU it does), and its time would count as the copy's.
                match uffd.copy(dst, &buf, !timed) {
                    Ok(()) | Err(UffdError::AlreadyMapped { .. }) => h.served += 1,
                    Err(e) => return Err(e.into()),
                }
                if let (Some(t0), Some(t1)) = (t0, t1) {
                    h.decompress_ns.push((t1 - t0).as_nanos() as u64);
                    h.copy_ns.push(t1.elapsed().as_nanos() as u64);
                    uffd.wake(dst, page)?;
                }
            }
            Some(_) => {}
            None => std::hint::spin_loop(),
        }
    }
    Ok(h)
}

/// The faulting thread: touches each of the `total` pages at `base` once (a read, or a write
/// with `write`), timing each touch after the first `warmup`.
fn touch(
    base: usize,
    total: usize,
    warmup: usize,
    write: bool,
    cpu: usize,
) -> Result<Vec<u64>, FloorError> {
    cpu::pin_current_thread(cpu).map_err(os("sched_setaffinity"))?;
    let page = page_size();
    let mut samples = Vec::with_capacity(total - warmup);
    for i in 0..total {
        let p = (base + i * page) as *mut u8;
        let t0 = Instant::now();
        if write {
            // SAFETY: `p` is inside the region, which outlives this thread's use of it (the
            // caller waits for this thread, or leaks the region when it gives up on it).
            unsafe { p.write_volatile(1) };
        } else {
            // SAFETY: as above; the read blocks until the handler has served the page.
            unsafe { p.read_volatile() };
        }
        let dt = t0.elapsed();
        if i >= warmup {
            samples.push(dt.as_nanos() as u64);
        }
    }
    Ok(samples)
}

/// The CPUs to use: the faulting thread's and the handler's when apart (the same one when
/// only one is allowed).
pub fn placement() -> Result<(usize, usize), FloorError> {
    let cpus = cpu::allowed().map_err(os("sched_getaffinity"))?;
    let first = *cpus.first().ok_or(FloorError::OneCpu)?;
    Ok((first, cpus.get(1).copied().unwrap_or(first)))
}
