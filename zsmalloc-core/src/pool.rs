//! The pool: what it owns, how it is created, and the rules every job follows.
//!
//! The jobs live in their own modules, each an `impl Pool` block on the fields declared here:
//! `layout` (where an object's bytes lie), `placement` (is this word my object), `store`,
//! `free` (frees and handle moves), `read` (read sections), `compact` and `stats`.
//!
//! Locking order and ownership:
//! - A class lock (`SizeClass::lock`) covers that class's fullness lists, its zspages' freelists
//!   and counters, zspage creation and release, and compaction of the class. No code holds two
//!   class locks. The page arena's and zspage table's own mutexes nest inside a class lock and
//!   are held only for a list push/pop.
//! - Readers take no lock. A reader of a non-huge object registers on its header (`header.rs`)
//!   and holds nothing else: it finds the header from the handle word and the role of its page
//!   (pages never change role, `arena.rs`, so the word there is a header, a link or zero, never
//!   payload). An object with readers is neither freed (`Error::Busy`) nor moved. A huge
//!   object's header lives in its zspage, so its reader pins the zspage first (`pin.rs`).
//! - Compaction moves objects only out of a zspage it could lock for migration (no huge reader's
//!   pin) and whose every allocated object it could claim (`header::claim`: no reader
//!   registered; readers meeting a claim back off). Release needs the migration lock: a free
//!   that empties a pinned (huge) zspage leaves it listed as empty; it is released by the next
//!   free or compaction of its class that can lock it (mainline's deferred free when
//!   `trylock_zspage` fails). Single-threaded, a zspage is never pinned when it empties.
//! - A store allocates, writes header and payload, and publishes the handle word, all under the
//!   class lock: the object is reachable only once complete, and nothing can move it meanwhile.
//! - Compaction rewrites each moved object's handle word (Release) before it frees the old place,
//!   and drops the claims of the objects it left before unlocking the source.
//! - Every owner address in a header is a live handle word: the safe layer's handle slots live as
//!   long as the pool; raw-layer callers promise it (see `store_raw`). Compaction relies on this.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use crate::arena::PageArena;
use crate::class_table::ClassTable;
use crate::config::PoolConfig;
use crate::counters::AccessCounters;
use crate::error::{Error, Result};
use crate::handle_slots::HandleSlots;
use crate::handle_word::TAG_MAX;
use crate::payload::{InPages, Payload};
use crate::size_class::SizeClass;
use crate::zspage::{Zspage, ZspageTable};

/// A zsmalloc pool. `P` says how it keeps its objects (`payload.rs`): [`InPages`], the kernel's
/// layout with every byte (the default), or [`crate::payload::PlacementOnly`] (lengths only).
pub struct Pool<P: Payload = InPages> {
    pub(crate) name: String,
    pub(crate) tag: u8,
    /// Unique among all pools ever created (the open-section records name pools by it).
    pub(crate) id: u64,
    pub(crate) config: PoolConfig,
    pub(crate) table: ClassTable,
    pub(crate) classes: Box<[SizeClass]>,
    pub(crate) zspages: ZspageTable,
    pub(crate) arena: PageArena,
    pub(crate) slots: HandleSlots,
    pub(crate) pages_allocated: AtomicU64,
    pub(crate) pages_peak: AtomicU64,
    pub(crate) pages_compacted: AtomicU64,
    pub(crate) objs_moved: AtomicU64,
    pub(crate) bytes_moved: AtomicU64,
    pub(crate) access: AccessCounters,
    pub(crate) payload: P,
}

/// A pool that keeps lengths and placement only, never bytes (`payload.rs`).
pub type PlacementPool = Pool<crate::payload::PlacementOnly>;

static NEXT_TAG: AtomicU8 = AtomicU8::new(0);
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Pool {
    /// A pool with `config` (validated; the environment is not read).
    pub fn new(config: PoolConfig) -> Result<Pool> {
        Self::with_name("pool", config)
    }

    /// A named pool (the name shows in reports). A placement-only configuration
    /// (`config.payload` false) is refused: it makes a [`PlacementPool`] (or an `AnyPool`).
    pub fn with_name(name: &str, config: PoolConfig) -> Result<Pool> {
        Self::build(name, config)
    }

    /// A pool configured by the `ZSMALLOC_*` environment variables.
    pub fn from_env(name: &str) -> Result<Pool> {
        Self::with_name(name, PoolConfig::from_env()?)
    }
}

impl PlacementPool {
    /// A named pool that keeps no bytes (`config.payload` must be false).
    pub fn without_payload(name: &str, config: PoolConfig) -> Result<PlacementPool> {
        Self::build(name, config)
    }
}

impl<P: Payload> Pool<P> {
    fn build(name: &str, config: PoolConfig) -> Result<Self> {
        if config.backend != crate::config::BackendKind::Zsmalloc {
            return Err(crate::error::Error::Config {
                setting: "backend",
                message: format!(
                    "a zsmalloc Pool cannot be a {} pool; make it with AnyPool::with_name",
                    config.backend.name()
                ),
            });
        }
        if config.payload != P::KEEPS_BYTES {
            return Err(crate::error::Error::Config {
                setting: "payload",
                message: format!(
                    "a pool of {} cannot have payload = {}; make it with AnyPool::with_name",
                    P::NAME,
                    config.payload
                ),
            });
        }
        let table = ClassTable::new(&config)?;
        let classes: Box<[SizeClass]> =
            table.classes().iter().cloned().map(SizeClass::new).collect();
        let arena = PageArena::for_config(&config)?;
        Ok(Pool {
            name: name.to_owned(),
            tag: NEXT_TAG.fetch_add(1, Ordering::Relaxed) % TAG_MAX + 1,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            access: AccessCounters::new(classes.len()),
            arena,
            config,
            table,
            classes,
            zspages: ZspageTable::new(),
            slots: HandleSlots::new(),
            pages_allocated: AtomicU64::new(0),
            pages_peak: AtomicU64::new(0),
            pages_compacted: AtomicU64::new(0),
            objs_moved: AtomicU64::new(0),
            bytes_moved: AtomicU64::new(0),
            payload: P::new(),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn config(&self) -> &PoolConfig {
        &self.config
    }

    pub fn class_table(&self) -> &ClassTable {
        &self.table
    }

    /// Pages held by zspages (`zs_get_total_pages`).
    pub fn total_pages(&self) -> u64 {
        self.pages_allocated.load(Ordering::Relaxed)
    }

    /// Objects of this length or more are stored in huge classes (`zs_huge_class_size`).
    pub fn huge_class_size(&self) -> usize {
        self.table.huge_class_size() as usize
    }

    /// The longest object the pool stores: the multi-page size if it has the band (docs/
    /// DESIGN.md, Objects of several pages), else a page. A buffer of this many bytes plus the
    /// 8-byte header serves any read of the pool.
    pub fn max_object_size(&self) -> usize {
        self.table.max_size() as usize
    }

    /// `huge_class_size` of one band: 0 the base band ([`Pool::huge_class_size`]), 1 the
    /// multi-page band (`None` if the pool has none).
    pub fn huge_class_size_of_band(&self, band: u32) -> Option<usize> {
        self.table.huge_class_size_of_band(band).map(|s| s as usize)
    }

    /// Index of the class serving `size` (no header added), as `zs_lookup_class_index`.
    pub fn lookup_class_index(&self, size: usize) -> u32 {
        self.table.lookup_class_index(size)
    }

    pub(crate) fn slots(&self) -> &HandleSlots {
        &self.slots
    }

    #[inline]
    pub(crate) fn page_shift(&self) -> u32 {
        self.config.page_size.trailing_zeros()
    }

    /// The zspage at table entry `entry`, which the caller knows exists (it holds a listed or
    /// just created zspage's entry).
    #[inline]
    pub(crate) fn zspage(&self, entry: u32) -> &Zspage {
        self.zspages.get(entry).expect("zspage entry exists")
    }

    /// Refuses a safe handle of another pool.
    #[inline]
    pub(crate) fn same_pool(&self, other: &Self) -> Result<()> {
        if std::ptr::eq(self, other) {
            Ok(())
        } else {
            Err(Error::InvalidHandle("handle belongs to another pool"))
        }
    }
}

impl<P: Payload> std::fmt::Debug for Pool<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("name", &self.name)
            .field("config", &self.config)
            .field("payload", &P::NAME)
            .field("total_pages", &self.total_pages())
            .finish()
    }
}
