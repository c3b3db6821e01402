//! The zblock backend (being built: pool creation is refused until it lands).

use std::convert::Infallible;
use std::sync::atomic::AtomicUsize;

use crate::backend::Backend;
use crate::config::PoolConfig;
use crate::error::{Error, Result};
use crate::read::SgSegments;
use crate::stats::{ClassStats, PoolStats};

/// A zblock pool.
pub struct ZblockPool {
    never: Infallible,
}

impl ZblockPool {
    pub fn with_name(_name: &str, _config: PoolConfig) -> Result<ZblockPool> {
        Err(Error::Config { setting: "backend", message: "zblock is not built yet".into() })
    }
}

impl Backend for ZblockPool {
    fn name(&self) -> &str {
        match self.never {}
    }
    fn config(&self) -> &PoolConfig {
        match self.never {}
    }
    fn total_pages(&self) -> u64 {
        match self.never {}
    }
    fn stats(&self) -> PoolStats {
        match self.never {}
    }
    fn class_stats(&self) -> Vec<ClassStats> {
        match self.never {}
    }
    fn compact(&self) -> u64 {
        match self.never {}
    }
    fn huge_class_size(&self) -> usize {
        match self.never {}
    }
    fn lookup_class_index(&self, _size: usize) -> u32 {
        match self.never {}
    }
    fn metadata_bytes(&self) -> (usize, usize) {
        match self.never {}
    }
    unsafe fn store_raw(&self, _h: &AtomicUsize, _data: &[u8]) -> Result<()> {
        match self.never {}
    }
    unsafe fn malloc_raw(&self, _h: &AtomicUsize, _len: usize) -> Result<()> {
        match self.never {}
    }
    unsafe fn write_raw(&self, _h: &AtomicUsize, _data: &[u8]) -> Result<()> {
        match self.never {}
    }
    unsafe fn free_raw(&self, _h: &AtomicUsize) -> Result<()> {
        match self.never {}
    }
    unsafe fn handle_move_raw(&self, _f: &AtomicUsize, _t: &AtomicUsize) -> Result<()> {
        match self.never {}
    }
    unsafe fn read_begin_raw(&self, _h: &AtomicUsize, _n: usize, _c: *mut u8) -> Result<*const u8> {
        match self.never {}
    }
    unsafe fn read_end_at_raw(
        &self,
        _h: &AtomicUsize,
        _n: Option<usize>,
        _m: *const u8,
    ) -> Result<()> {
        match self.never {}
    }
    unsafe fn read_sg_begin_raw(&self, _h: &AtomicUsize, _n: usize) -> Result<SgSegments> {
        match self.never {}
    }
    unsafe fn read_into_raw(&self, _h: &AtomicUsize, _o: &mut [u8]) -> Result<usize> {
        match self.never {}
    }
    unsafe fn object_len_raw(&self, _h: &AtomicUsize) -> Result<usize> {
        match self.never {}
    }
}
