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
    let Ok(c) = std::ffi::CString::new(path) else { return true };
    // SAFETY: open of a NUL-terminated path; the descriptor is closed below.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        return true;
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
    if blocks == 0 {
        // SAFETY: the descriptor opened above.
        unsafe { libc::close(fd) };
        return true;
    }
    // SAFETY: a shared mapping of the file's first blocks; it aliases nothing of ours.
    let p = unsafe {
        sys::mmap(0, blocks * BYTES, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0)
    };
    // SAFETY: the descriptor opened above; the mapping keeps the file.
    unsafe { libc::close(fd) };
    if p == libc::MAP_FAILED {
        return true;
    }
    set_file(p as usize, blocks);
    match claim_block() {
        Some(block) => {
            STATS.store(block, Ordering::Release);
            true
        }
        None => false,
    }
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
/// exec: the new one takes the block over, its figures of what it holds reset), else the first
/// free one, claimed. `None` when every block is taken: the first block counts it.
pub fn claim_block() -> Option<usize> {
    let blocks = BLOCKS.load(Ordering::Relaxed);
    if FILE.load(Ordering::Acquire) == 0 || blocks == 0 {
        return None;
    }
    // SAFETY: getpid has no preconditions.
    let pid = unsafe { libc::getpid() } as u64;
    // Blocks are claimed in order and never given back, so the taken ones come first.
    let i = (0..blocks).find(|&i| {
        let w = block(i);
        w.get(Field::Pid) == pid || w.claim(pid)
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
    ] {
        w.set(f, 0);
    }
    let comm = std::fs::read("/proc/self/comm").unwrap_or_default();
    let [lo, hi] = name_words(comm.strip_suffix(b"\n").unwrap_or(&comm));
    w.set(Field::Comm, lo);
    w.set(Field::CommEnd, hi);
    w.set(Field::UserFaultsOnly, u64::from(USER_FAULTS_ONLY.load(Ordering::Relaxed)));
    w.set_state(TierState::NotStarted, "");
    w.set(Field::Magic, zsmalloc_tier::stats::MAGIC);
    Some(FILE.load(Ordering::Acquire) + i * BYTES)
}
