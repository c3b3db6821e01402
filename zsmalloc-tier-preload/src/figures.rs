//! This process's figures: its block of the stats file the command made
//! (`ZSMALLOC_TIER_STATS`), mapped shared, one block per tiered process claimed by a
//! compare-and-swap of its pid word, or words of its own when there is none (a forked child
//! that is not tiered writes its own, never its parent's).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use zsmalloc_tier::stats::{
    name_words, Field, State as TierState, Words, BYTES, FILE_BYTES, WORDS,
};

use crate::modes::USER_FAULTS_ONLY;
use crate::sys;

/// The stats file's words (mapped from `ZSMALLOC_TIER_STATS`), else these.
static LOCAL: [AtomicU64; WORDS] = [const { AtomicU64::new(0) }; WORDS];
static STATS: AtomicUsize = AtomicUsize::new(0);
/// In a forked child, which runs untiered and must not write the parent's figures.
pub static IN_CHILD: AtomicBool = AtomicBool::new(false);
static CHILD_WORDS: [AtomicU64; WORDS] = [const { AtomicU64::new(0) }; WORDS];

pub fn stats() -> Words<'static> {
    if IN_CHILD.load(Ordering::Relaxed) {
        return Words(&CHILD_WORDS);
    }
    let p = STATS.load(Ordering::Acquire);
    if p == 0 {
        return Words(&LOCAL);
    }
    // SAFETY: a block of `WORDS` words of the shared mapping `map_stats` made, never unmapped.
    Words(unsafe { &*(p as *const [AtomicU64; WORDS]) })
}

/// Maps the stats file at `path` (made by the command, `FILE_BYTES` long) and claims this
/// process's block of it ([`claim_block`]): false when every block is taken.
pub fn map_stats(path: &str) -> bool {
    let Some((p, blocks)) = map_file(path) else { return true };
    set_file(p, blocks);
    match claim_block() {
        Some(block) => {
            STATS.store(block, Ordering::Release);
            true
        }
        None => false,
    }
}

/// Counts, in the started program's block of the stats file at `path`, a program executed in
/// a child process that runs untiered: the report names what the tier did not see.
pub fn count_child_program(path: &str) {
    let Some((p, blocks)) = map_file(path) else { return };
    // SAFETY: the first block of the mapping just made, WORDS atomics long; unmapped below.
    let first = Words(unsafe { &*(p as *const [AtomicU64; WORDS]) });
    first.add(Field::ChildPrograms, 1);
    // SAFETY: the mapping made by map_file, of that length, no longer used.
    unsafe { sys::munmap(p, blocks * BYTES) };
}

/// The stats file at `path` mapped shared: its address and whole blocks (`None` for a file
/// missing or shorter than a block).
fn map_file(path: &str) -> Option<(usize, usize)> {
    let c = std::ffi::CString::new(path).ok()?;
    // SAFETY: open of a NUL-terminated path; the descriptor is closed below.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    // A file shorter than the layout (one set by hand) would fault on its missing pages: it is
    // left alone, as a missing one is, and the figures are kept in the process only.
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat of the descriptor opened above into a buffer of its size.
    let size = if unsafe { libc::fstat(fd, st.as_mut_ptr()) } != 0 {
        0
    } else {
        // SAFETY: fstat succeeded, so it filled the buffer.
        (unsafe { st.assume_init() }.st_size as usize).min(FILE_BYTES)
    };
    let blocks = size / BYTES;
    let p = if blocks == 0 {
        libc::MAP_FAILED
    } else {
        // SAFETY: a shared mapping of the file's first blocks; it aliases nothing of ours.
        unsafe {
            sys::mmap(
                0,
                blocks * BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        }
    };
    // SAFETY: the descriptor opened above; a mapping keeps the file.
    unsafe { libc::close(fd) };
    (p != libc::MAP_FAILED).then_some((p as usize, blocks))
}

/// Makes the words at `block` (a block of the stats file this process claimed) its figures.
pub fn use_block(block: usize) {
    STATS.store(block, Ordering::Release);
}

/// The stats file's mapping and its number of blocks.
static FILE: AtomicUsize = AtomicUsize::new(0);
static BLOCKS: AtomicUsize = AtomicUsize::new(0);

pub fn set_file(at: usize, blocks: usize) {
    BLOCKS.store(blocks, Ordering::Relaxed);
    FILE.store(at, Ordering::Release);
}

fn block(i: usize) -> Words<'static> {
    let at = FILE.load(Ordering::Acquire) + i * BYTES;
    // SAFETY: block `i` (below BLOCKS) of the shared mapping `map_stats` made, WORDS words of
    // atomics, never unmapped.
    Words(unsafe { &*(at as *const [std::sync::atomic::AtomicU64; WORDS]) })
}

/// This process's block: the one its pid holds already (it was another program before an
/// exec: the new one takes the block over, its figures of what it holds reset, its counts
/// kept, the trace's figures reset as the new program begins the trace anew), else the first
/// free one, claimed. `None` when every block is taken: the first block counts it.
pub fn claim_block() -> Option<usize> {
    let blocks = BLOCKS.load(Ordering::Relaxed);
    if FILE.load(Ordering::Acquire) == 0 || blocks == 0 {
        return None;
    }
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() } as u64;
    // Blocks are claimed in order and never given back, so the taken ones come first.
    let mut executed = false;
    let i = (0..blocks).find(|&i| {
        let w = block(i);
        executed = w.get(Field::Pid) == pid;
        executed || w.claim(pid)
    });
    let Some(i) = i else {
        block(0).add(Field::SlotsFull, 1);
        return None;
    };
    let w = block(i);
    for f in [
        Field::ResidentPages,
        Field::StoredPages,
        Field::CompressedBytes,
        Field::SameFilledPages,
        Field::PoolPages,
        Field::RecordedOps,
        Field::RecordErrno,
    ] {
        w.set(f, 0);
    }
    if executed {
        // The handler of the program before the exec is gone: its time as last stored.
        w.add(Field::HandlerCpuEarlierNs, w.get(Field::HandlerCpuNs));
        w.set(Field::HandlerCpuNs, 0);
        w.add(Field::Execs, 1);
    }
    write_comm(&w);
    w.set(Field::UserFaultsOnly, u64::from(USER_FAULTS_ONLY.load(Ordering::Relaxed)));
    w.set_state(TierState::NotStarted, "");
    w.set(Field::Magic, zsmalloc_tier::stats::MAGIC);
    Some(FILE.load(Ordering::Acquire) + i * BYTES)
}

/// The process's command name (`/proc/self/comm`) into its block: the command compares it with
/// the name the process ended under, and a program executed that never loaded the library (a
/// static or setuid one, or one run with the environment cleared) shows so.
fn write_comm(w: &Words<'_>) {
    let comm = std::fs::read("/proc/self/comm").unwrap_or_default();
    let [lo, hi] = name_words(comm.strip_suffix(b"\n").unwrap_or(&comm));
    w.set(Field::Comm, lo);
    w.set(Field::CommEnd, hi);
}

/// At the program's exit: its name again, as a program that renamed itself (`prctl`) ends
/// under the new one.
pub fn at_exit() {
    if STATS.load(Ordering::Acquire) != 0 && !IN_CHILD.load(Ordering::Relaxed) {
        write_comm(&stats());
    }
}
