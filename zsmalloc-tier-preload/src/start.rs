//! The tier's start: the userfaultfd opened, the page table, staging area and codec made (the
//! compressor's library loaded: nothing of it is made in the handler), the handler thread
//! started (it registers the reserve); the program runs on once it has.

use std::sync::atomic::{AtomicBool, Ordering};

use zsmalloc_codec::Compressor;
use zsmalloc_core::PoolConfig;
use zsmalloc_tier::policy::PolicyName;
use zsmalloc_tier::stats::Field;
use zsmalloc_tier::uffd::{Features, Uffd, Wait};

use crate::group_table::Folios;
use crate::own_fds::{self, Own};
use crate::readahead_cache::Readahead;
use crate::record::Recorder;
use crate::sys::{self, Locked, PAGE};
use crate::tier::{stats, Entry, PageTable, State, Tier, TIER};
use crate::{evict, handler, page_codec, policy, reserve, serve};

/// How evicted pages leave and come back: pages per eviction unit (`folio.rs`) and the
/// readahead's page-cluster (`readahead.rs`).
#[derive(Clone, Copy)]
pub struct Unit {
    pub folio_pages: usize,
    pub readahead: u32,
}

/// Opens the userfaultfd and starts the handler (which registers the reserve): the program's
/// memory is tiered from then on, under `budget_pages`, evicted pages compressed with
/// `compressor`, `unit` at a time, the victims chosen by `policy`.
pub fn start(
    budget_pages: u64,
    config: PoolConfig,
    compressor: Compressor,
    policy: PolicyName,
    record: Option<Recorder>,
    unit: Unit,
) -> Result<(), String> {
    let bytes = unit.folio_pages.max(1) * PAGE;
    let codec = page_codec::new(compressor, bytes)?;
    let victims = policy::new(policy)?;
    let protect = victims.protects();
    let features = Features::MOVE | policy.features();
    let floor = zsmalloc_tier::fd_number::high_floor();
    let uffd = Uffd::open_for(Wait::NonBlocking, features, crate::modes::faults())
        .and_then(|u| u.raised(floor))
        .map_err(|e| e.to_string())?;
    let fd = std::os::fd::AsRawFd::as_raw_fd(&std::os::fd::AsFd::as_fd(&uffd));
    let mut record = record;
    if let Some(r) = &mut record {
        r.raise(floor);
    }
    let record_fd = record.as_ref().map_or(-1, Recorder::fd);
    let pagemap_fd = victims.own_fd();
    let pages = reserve::reserve_len() / PAGE;
    if pages == 0 {
        return Err("the reserve of address space could not be made".into());
    }
    let table = sys::own_memory(pages * std::mem::size_of::<Entry>())
        .ok_or("no memory for the page table")?;
    let staging = evict::new_staging(&uffd, None).map_err(|e| format!("staging area: {e}"))?;
    crate::doorbell::make(&uffd)?;
    // A folio group leaves whole, straight into the pool: the list holds single pages.
    let inactive = if victims.keeps_inactive() && unit.folio_pages <= 1 {
        Some(crate::inactive::new_list(&uffd, budget_pages)?)
    } else {
        None
    };
    let state = State {
        pages: PageTable::new(table, pages, budget_pages),
        policy: victims,
        pool: None,
        config: Some(config),
        zero: vec![0; serve::FAULT_AROUND * PAGE],
        page: vec![0; PAGE],
        packed: vec![0; page_codec::buffer_len(bytes)],
        codec,
        staging,
        staging_used: 0,
        paused: false,
        pool_full: false,
        record,
        folio: Folios::new(unit.folio_pages, pages)?,
        readahead: Readahead::new(unit.readahead, budget_pages),
        inactive,
    };
    let tier = Tier {
        uffd,
        fd,
        state: Locked::new(state),
        active: AtomicBool::new(false),
        protect,
        features,
        wakeup: crate::wakeup::Wakeup::new()?,
    };
    let wakeup_fd = tier.wakeup.raw();
    if TIER.set(tier).is_err() {
        return Err("started twice".into());
    }
    own_fds::keep(Own::Uffd, fd);
    own_fds::keep(Own::Wakeup, wakeup_fd);
    own_fds::keep(Own::Record, record_fd);
    own_fds::keep(Own::Pagemap, pagemap_fd);
    stats().set(Field::BudgetPages, budget_pages);
    handler::spawn()?;
    // The program goes on once the reserve is registered, so that what it touches from then
    // on is counted as it arrives and the budget holds from its first instruction.
    let t0 = std::time::Instant::now();
    while !handler::BEGUN.load(Ordering::Acquire) {
        if t0.elapsed() > std::time::Duration::from_secs(10) {
            return Err("the handler thread did not start within 10 s".into());
        }
        std::thread::sleep(std::time::Duration::from_micros(100));
    }
    Ok(())
}

/// The record file, its header naming the program (its command line) and the pool's
/// configuration (the variables set for it, and the page size and chain size they gave).
pub fn open_record(path: &str, config: &PoolConfig) -> Recorder {
    let command = std::fs::read("/proc/self/cmdline").unwrap_or_default();
    let command: Vec<String> = command
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let mut vars: Vec<String> = std::env::vars()
        .filter(|(k, _)| k.starts_with("ZSMALLOC_") && !k.starts_with("ZSMALLOC_TIER_"))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    vars.sort();
    let header = [
        format!("workload: tier {}", command.join(" ")),
        format!(
            "config: page_size {} chain_size {}{}{}{}",
            config.page_size,
            config.chain_size,
            match config.multi_page_size {
                0 => String::new(),
                m => format!(" multi_page_size {m} (replay with --multi-page {m})"),
            },
            if vars.is_empty() { "" } else { ", " },
            vars.join(" ")
        ),
        "ids are pages of the tier's reserve; same-filled pages are not in the pool".into(),
    ];
    Recorder::open(path, &header)
}
