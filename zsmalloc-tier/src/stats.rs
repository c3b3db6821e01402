//! The figures the preloaded tier keeps while the program runs, in a file the command names
//! (`ZSMALLOC_TIER_STATS`) and both map: words of 64 bits at fixed places, so the command
//! reads them whatever way the program ended — by a signal too, when no exit handler runs.
//!
//! The file holds [`SLOTS`] blocks of [`WORDS`] words, one per tiered process: the program the
//! command started takes the first, and with `--follow-children` each process it starts (by
//! fork or exec, down the generations) claims a free one by a compare-and-swap of its pid
//! word. A process that executes another program is the same process: the new program takes
//! over its slot. A process that finds every slot taken runs untiered and is counted in the
//! first block ([`Field::SlotsFull`]).

use std::sync::atomic::{AtomicU64, Ordering};

/// The first word of a file the tier has written: "zstier" and the layout's version.
pub const MAGIC: u64 = 0x7a73_7469_6572_0007;

/// A word's place in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum Field {
    Magic,
    /// [`State`] as a number.
    State,
    BudgetPages,
    ResidentPages,
    PeakResidentPages,
    Evictions,
    /// Faults on evicted pages (served from the pool or a same-filled value).
    Faults,
    /// Faults on pages never touched (served with zeros).
    FirstTouches,
    SameFilledPages,
    StoredPages,
    CompressedBytes,
    PoolPages,
    MaxPoolPages,
    /// Evictions skipped because the page is shared (with a forked child) or pinned.
    SharedSkips,
    /// Times the pool refused a store (its limit reached) and eviction paused.
    PoolFullStops,
    /// Bytes the program asked for that were served outside the tier (its reserve full).
    UntieredBytes,
    /// Forks before which every evicted page was brought back.
    Forks,
    FaultMaxNs,
    EvictMaxNs,
    /// Trace lines (pool operations) written to the record file (`ZSMALLOC_TIER_RECORD`).
    RecordedOps,
    /// The OS error that stopped the recording (0: none).
    RecordErrno,
    /// Pages per eviction unit (`ZSMALLOC_TIER_FOLIO_PAGES`): 1, 4 or 16.
    FolioPages,
    /// Bytes decompressed (or copied, for objects stored whole) out of pool objects.
    DecompressedBytes,
    /// Aligned groups evicted as one object (with folios above a page).
    GroupEvictions,
    /// Pages decompressed into the readahead cache beside a faulting page.
    ReadaheadPages,
    /// Faults served from the readahead cache, without a pool read.
    ReadaheadHits,
    /// Pages stored over the whole run (each eviction's, same-filled ones apart).
    StoresTotalPages,
    /// Compressed bytes stored over the whole run.
    StoresTotalBytes,
    /// The largest time of each [`Step`] of a fault's service (timed only on request).
    LookupMaxNs,
    ReadMaxNs,
    DecompressMaxNs,
    CopyMaxNs,
    FaultEvictMaxNs,
    /// Pages the policy kept for another round because they were written (`clock`).
    SecondChances,
    /// `PAGEMAP_SCAN` ioctls the policy made to learn which pages were written.
    WrittenScans,
    /// Pages the scans reported written (each then protected again).
    WrittenSeen,
    /// The OS error that stopped the scans (0: none); the policy goes on by arrival.
    ScanErrno,
    /// The scans' time in all, in nanoseconds.
    WrittenScanNs,
    /// Evictions whose `UFFDIO_MOVE` was answered `EEXIST` although the page moved.
    MovesDespiteEexist,
    /// The process this block is: its pid (0: a free block, claimed by compare-and-swap).
    Pid,
    /// Its command name (`/proc/self/comm`: 16 bytes in two words).
    Comm,
    CommEnd,
    /// The userfaultfd takes user-mode faults only (`--user-faults-only`): 1.
    UserFaultsOnly,
    /// Resident pages the tier may not evict (locked, `PROT_NONE`, writable and executable,
    /// or under a protection key): beside the budget, which [`Field::ResidentPages`] holds.
    PinnedPages,
    PeakPinnedPages,
    /// In the first block: processes that found every block taken, and ran untiered.
    SlotsFull,
    /// The handler thread's CPU time, in nanoseconds (as it last stored it: at each sleep,
    /// when it stopped, and at the program's exit).
    HandlerCpuNs,
    /// The handlers' CPU time of the programs this process ran before its last exec.
    HandlerCpuEarlierNs,
    /// The tiered pages held at once at most, resident or evicted: the budget at which nothing
    /// would have been evicted (kept by [`Words`] as the three figures change).
    PeakHeldPages,
    /// Programs this process executed that took its block over (each loading the library).
    Execs,
    /// In the first block, without `--follow-children`: programs executed in child processes
    /// (forked, vfork'd or spawned) that loaded the library and ran untiered.
    ChildPrograms,
    /// Under `--policy lru`: pages moved from the program's memory to the inactive list, and
    /// the time those moves took, in nanoseconds.
    Demotions,
    DemoteNs,
    /// Faults on pages of the inactive list, served by moving them back (not in
    /// [`Field::Faults`], which counts faults on compressed or same-filled pages).
    InactiveRefaults,
    /// Pages on the inactive list now, and at most (within [`Field::ResidentPages`]).
    InactivePages,
    PeakInactivePages,
}

const FIELDS: usize = Field::PeakInactivePages as usize + 1;

/// The steps of serving a fault on an evicted page, each timed with its own histogram when the
/// library is asked to (`ZSMALLOC_TIER_BREAKDOWN`): what the faulting thread waits for beyond
/// them is the fault's message and the switches between the threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// From the fault's message read to the page's entry found: the state's lock and the lookup.
    Lookup,
    /// The pool's `read_into_raw` of the object (zs_obj_read).
    Read,
    /// The decompression into the page buffer.
    Decompress,
    /// `UFFDIO_COPY` with its wake.
    Copy,
    /// The evictions the fault causes before the handler waits again.
    Evict,
}

impl Step {
    pub const ALL: [Step; 5] =
        [Step::Lookup, Step::Read, Step::Decompress, Step::Copy, Step::Evict];

    /// The key in JSON.
    pub fn key(self) -> &'static str {
        match self {
            Step::Lookup => "lookup",
            Step::Read => "read",
            Step::Decompress => "decompress",
            Step::Copy => "copy",
            Step::Evict => "evict",
        }
    }

    fn max_field(self) -> Field {
        match self {
            Step::Lookup => Field::LookupMaxNs,
            Step::Read => Field::ReadMaxNs,
            Step::Decompress => Field::DecompressMaxNs,
            Step::Copy => Field::CopyMaxNs,
            Step::Evict => Field::FaultEvictMaxNs,
        }
    }
}

/// Where the tier stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// The library has not started (not loaded, or the program ended before).
    NotStarted = 0,
    Tiering = 1,
    /// The tier stepped aside (every page brought back): the program ran on untiered.
    SteppedAside = 2,
    /// The tier could not go on and ended the program.
    Failed = 3,
}

impl State {
    fn from_word(w: u64) -> State {
        match w {
            1 => State::Tiering,
            2 => State::SteppedAside,
            3 => State::Failed,
            _ => State::NotStarted,
        }
    }
}

/// Latencies are counted in buckets: exact below 64 ns, then 32 per power of two (each within
/// 1/32 of its values).
pub const BUCKETS: usize = 64 + 58 * 32;

/// The bucket of `ns`.
pub fn bucket(ns: u64) -> usize {
    if ns < 64 {
        return ns as usize;
    }
    let e = 63 - ns.leading_zeros() as usize;
    64 + (e - 6) * 32 + ((ns >> (e - 5)) & 31) as usize
}

/// The largest value bucket `b` counts.
pub fn bucket_top(b: usize) -> u64 {
    if b < 64 {
        return b as u64;
    }
    let e = (b - 64) / 32 + 6;
    let m = ((b - 64) % 32) as u64;
    ((32 + m) << (e - 5)) + (1u64 << (e - 5)) - 1
}

const FAULT_HIST: usize = FIELDS;
const EVICT_HIST: usize = FAULT_HIST + BUCKETS;
const MESSAGE: usize = EVICT_HIST + BUCKETS;
/// The message's length in bytes (a reason the tier stepped aside or failed).
pub const MESSAGE_BYTES: usize = 256;
const STEP_HIST: usize = MESSAGE + MESSAGE_BYTES / 8;
/// A process's block's length in words.
pub const WORDS: usize = STEP_HIST + Step::ALL.len() * BUCKETS;
/// A process's block's length in bytes.
pub const BYTES: usize = WORDS * 8;
/// The blocks in the file: the processes one run can report (about 106 KiB each; the file is
/// sparse, only the blocks claimed take space).
pub const SLOTS: usize = 256;
/// The file's length in bytes.
pub const FILE_BYTES: usize = SLOTS * BYTES;

/// A name of up to 16 bytes as two words (NUL-padded).
pub fn name_words(name: &[u8]) -> [u64; 2] {
    let mut bytes = [0u8; 16];
    let n = name.len().min(16);
    bytes[..n].copy_from_slice(&name[..n]);
    let word = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
    [word(0), word(8)]
}

/// The words, wherever they are mapped.
pub struct Words<'a>(pub &'a [AtomicU64; WORDS]);

impl Words<'_> {
    pub fn add(&self, f: Field, n: u64) {
        self.0[f as usize].fetch_add(n, Ordering::Relaxed);
        self.held_changed(f);
    }
    pub fn sub(&self, f: Field, n: u64) {
        self.0[f as usize].fetch_sub(n, Ordering::Relaxed);
        self.held_changed(f);
    }
    pub fn set(&self, f: Field, v: u64) {
        self.0[f as usize].store(v, Ordering::Relaxed);
        self.held_changed(f);
    }
    /// After a change of what the tier holds (resident, stored, same-filled pages), their sum's
    /// largest kept. An eviction adds the stored page before the resident one leaves, so the
    /// sum can run a unit (a page, or a folio's 16) over for a moment; a transient below zero
    /// (a field taken down first) overflows the sum and is not kept.
    fn held_changed(&self, f: Field) {
        if !matches!(f, Field::ResidentPages | Field::StoredPages | Field::SameFilledPages) {
            return;
        }
        let held = self
            .get(Field::ResidentPages)
            .checked_add(self.get(Field::StoredPages))
            .and_then(|n| n.checked_add(self.get(Field::SameFilledPages)));
        if let Some(n) = held.filter(|&n| n < 1 << 40) {
            self.raise(Field::PeakHeldPages, n);
        }
    }
    pub fn get(&self, f: Field) -> u64 {
        self.0[f as usize].load(Ordering::Relaxed)
    }
    /// Claims this block for process `pid` if it is free: whether it is `pid`'s now.
    pub fn claim(&self, pid: u64) -> bool {
        let word = &self.0[Field::Pid as usize];
        match word.compare_exchange(0, pid, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => true,
            Err(owner) => owner == pid,
        }
    }
    pub fn raise(&self, f: Field, v: u64) {
        self.0[f as usize].fetch_max(v, Ordering::Relaxed);
    }
    pub fn fault(&self, ns: u64) {
        self.0[FAULT_HIST + bucket(ns)].fetch_add(1, Ordering::Relaxed);
        self.raise(Field::FaultMaxNs, ns);
    }
    pub fn eviction(&self, ns: u64) {
        self.0[EVICT_HIST + bucket(ns)].fetch_add(1, Ordering::Relaxed);
        self.raise(Field::EvictMaxNs, ns);
    }
    pub fn step(&self, step: Step, ns: u64) {
        self.0[STEP_HIST + step as usize * BUCKETS + bucket(ns)].fetch_add(1, Ordering::Relaxed);
        self.raise(step.max_field(), ns);
    }
    /// Sets the state with its reason (cut to [`MESSAGE_BYTES`]).
    pub fn set_state(&self, state: State, why: &str) {
        let mut bytes = [0u8; MESSAGE_BYTES];
        let n = why.len().min(MESSAGE_BYTES - 1);
        bytes[..n].copy_from_slice(&why.as_bytes()[..n]);
        for (i, w) in bytes.chunks(8).enumerate() {
            let word = u64::from_le_bytes(w.try_into().expect("8 bytes"));
            self.0[MESSAGE + i].store(word, Ordering::Relaxed);
        }
        self.set(Field::State, state as u64);
    }
}

/// A latency summary from a histogram: p50, p99 (each the top of its bucket, never above the
/// largest seen) and the largest.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Percentiles {
    pub count: u64,
    pub p50: u64,
    pub p99: u64,
    pub max: u64,
}

/// The figures as the command reads them after the program ended.
#[derive(Debug, Clone)]
pub struct Snapshot {
    words: Vec<u64>,
}

impl Snapshot {
    /// The figures in `bytes` (a stats file's contents), `None` when the tier never wrote it.
    pub fn from_bytes(bytes: &[u8]) -> Option<Snapshot> {
        if bytes.len() < BYTES {
            return None;
        }
        let words: Vec<u64> = bytes[..BYTES]
            .chunks(8)
            .map(|w| u64::from_ne_bytes(w.try_into().expect("8 bytes")))
            .collect();
        (words[0] == MAGIC).then_some(Snapshot { words })
    }

    /// Every block of a stats file that a process wrote, in slot order: the program the
    /// command started first.
    pub fn processes(bytes: &[u8]) -> Vec<Snapshot> {
        bytes.chunks_exact(BYTES).filter_map(Snapshot::from_bytes).collect()
    }

    /// The figures of several processes as one: the counts and histograms added, the largest
    /// latencies kept, the peaks added (what the processes could have held at once, at
    /// most); the pid, state, message and budget those of the first.
    pub fn total(parts: &[Snapshot]) -> Option<Snapshot> {
        let (first, rest) = parts.split_first()?;
        let mut words = first.words.clone();
        let own = [
            Field::Magic,
            Field::State,
            Field::BudgetPages,
            Field::Pid,
            Field::Comm,
            Field::CommEnd,
            Field::UserFaultsOnly,
            Field::SlotsFull,
            Field::FolioPages,
        ];
        let mut largest = vec![Field::FaultMaxNs, Field::EvictMaxNs];
        largest.extend(Step::ALL.map(Step::max_field));
        for p in rest {
            for (i, w) in words.iter_mut().enumerate() {
                if (MESSAGE..STEP_HIST).contains(&i) || own.iter().any(|&f| f as usize == i) {
                    continue;
                }
                if largest.iter().any(|&f| f as usize == i) {
                    *w = (*w).max(p.words[i]);
                } else {
                    *w += p.words[i];
                }
            }
        }
        Some(Snapshot { words })
    }

    pub fn get(&self, f: Field) -> u64 {
        self.words[f as usize]
    }

    /// The process's pid (0 in a file of one process that predates the slots).
    pub fn pid(&self) -> u64 {
        self.get(Field::Pid)
    }

    /// The process's command name, as `/proc/PID/comm` gives it.
    pub fn command(&self) -> String {
        let bytes: Vec<u8> =
            [Field::Comm, Field::CommEnd].iter().flat_map(|&f| self.get(f).to_le_bytes()).collect();
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        String::from_utf8_lossy(&bytes[..end]).into_owned()
    }

    pub fn state(&self) -> State {
        State::from_word(self.get(Field::State))
    }

    pub fn message(&self) -> String {
        let bytes: Vec<u8> =
            self.words[MESSAGE..STEP_HIST].iter().flat_map(|w| w.to_le_bytes()).collect();
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        String::from_utf8_lossy(&bytes[..end]).into_owned()
    }

    fn percentiles(&self, at: usize, max: Field) -> Percentiles {
        let hist = &self.words[at..at + BUCKETS];
        let count: u64 = hist.iter().sum();
        let max = self.get(max);
        let rank = |p: u64| {
            let want = (count * p).div_ceil(100).max(1);
            let mut seen = 0;
            for (b, &n) in hist.iter().enumerate() {
                seen += n;
                if seen >= want {
                    return bucket_top(b).min(max);
                }
            }
            max
        };
        if count == 0 {
            return Percentiles::default();
        }
        Percentiles { count, p50: rank(50), p99: rank(99), max }
    }

    pub fn fault_ns(&self) -> Percentiles {
        self.percentiles(FAULT_HIST, Field::FaultMaxNs)
    }

    pub fn evict_ns(&self) -> Percentiles {
        self.percentiles(EVICT_HIST, Field::EvictMaxNs)
    }

    /// A step's times (count 0 unless the steps were timed).
    pub fn step_ns(&self, step: Step) -> Percentiles {
        self.percentiles(STEP_HIST + step as usize * BUCKETS, step.max_field())
    }

    /// A step's mean time (0 when it was not timed), from its buckets: within 1/32 above.
    pub fn step_mean_ns(&self, step: Step) -> u64 {
        let at = STEP_HIST + step as usize * BUCKETS;
        let hist = &self.words[at..at + BUCKETS];
        let (n, sum) = hist.iter().enumerate().fold((0u64, 0u128), |(n, sum), (b, &c)| {
            (n + c, sum + u128::from(c) * u128::from(bucket_top(b)))
        });
        if n == 0 {
            return 0;
        }
        ((sum / u128::from(n)) as u64).min(self.get(step.max_field()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_hold_their_values_within_a_32nd() {
        for ns in [0u64, 1, 63, 64, 65, 100, 1000, 3300, 123_456, 9_999_999_999, u64::MAX / 2] {
            let b = bucket(ns);
            assert!(b < BUCKETS, "{ns}");
            assert!(bucket_top(b) >= ns, "{ns}: top {}", bucket_top(b));
            assert!(bucket_top(b) - ns <= ns / 32, "{ns}: top {}", bucket_top(b));
            if b > 0 {
                assert!(bucket_top(b - 1) < ns, "{ns}");
            }
        }
    }

    #[test]
    fn a_snapshot_reads_what_the_words_hold() {
        let words: Box<[AtomicU64; WORDS]> = Box::new(std::array::from_fn(|_| AtomicU64::new(0)));
        let w = Words(&words);
        w.set(Field::Magic, MAGIC);
        w.add(Field::Evictions, 5);
        for ns in 1..=100u64 {
            w.fault(ns * 1000);
        }
        w.set_state(State::SteppedAside, "the pool failed");
        w.step(Step::Copy, 1500);
        let bytes: Vec<u8> =
            words.iter().flat_map(|a| a.load(Ordering::Relaxed).to_ne_bytes()).collect();
        let s = Snapshot::from_bytes(&bytes).expect("magic");
        assert_eq!(s.get(Field::Evictions), 5);
        assert_eq!(s.state(), State::SteppedAside);
        assert_eq!(s.message(), "the pool failed");
        let f = s.fault_ns();
        assert_eq!((f.count, f.max), (100, 100_000));
        assert!((50_000..=51_600).contains(&f.p50), "{f:?}");
        assert!((99_000..=100_000).contains(&f.p99), "{f:?}");
        assert_eq!(s.step_ns(Step::Copy).count, 1);
        assert_eq!(s.step_ns(Step::Copy).max, 1500);
        assert_eq!(s.step_ns(Step::Read).count, 0);
        assert!((1500..=1500 + 1500 / 32).contains(&s.step_mean_ns(Step::Copy)));
        assert_eq!(s.step_mean_ns(Step::Read), 0);
        assert!(Snapshot::from_bytes(&bytes[..100]).is_none());

        let other: Box<[AtomicU64; WORDS]> = Box::new(std::array::from_fn(|_| AtomicU64::new(0)));
        let o = Words(&other);
        o.set(Field::Magic, MAGIC);
        assert!(o.claim(42) && o.claim(42) && !o.claim(43), "a block is its claimer's");
        let [lo, hi] = name_words(b"tier_check");
        o.set(Field::Comm, lo);
        o.set(Field::CommEnd, hi);
        o.add(Field::Evictions, 7);
        o.fault(500_000);
        let mut file = bytes.clone();
        file.extend(other.iter().flat_map(|a| a.load(Ordering::Relaxed).to_ne_bytes()));
        file.extend(vec![0; BYTES]);
        let procs = Snapshot::processes(&file);
        assert_eq!(procs.len(), 2, "the free block is no process");
        assert_eq!((procs[1].pid(), procs[1].command()), (42, "tier_check".to_string()));
        let total = Snapshot::total(&procs).expect("two");
        assert_eq!(total.get(Field::Evictions), 12);
        assert_eq!(total.state(), State::SteppedAside, "the first process's");
        assert_eq!((total.fault_ns().count, total.fault_ns().max), (101, 500_000));
        assert!(Snapshot::from_bytes(&vec![0; BYTES]).is_none());
    }
}
