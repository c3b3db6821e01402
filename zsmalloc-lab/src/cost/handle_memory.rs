//! What a pool-owned handle costs beside a caller's embedded word: heap bytes of the handle
//! slots per object, measured on a safe-layer pool of the first zsmalloc configuration (the
//! other backends have no safe layer).

use std::sync::atomic::AtomicUsize;

use zsmalloc_core::ReadMode;

use super::compressed::Compressed;
use super::fill::make_pool;
use super::model::HandleMemory;
use super::options::CostOptions;
use crate::error::LabResult;

/// Objects stored at most for the measurement.
const MAX_OBJECTS: usize = 65_536;

/// Stores the corpus once (up to `MAX_OBJECTS`) through pool-owned handles and reads the
/// growth of the handle tables; `None` without a zsmalloc configuration.
pub fn measure(opts: &CostOptions, corpora: &[Compressed]) -> LabResult<Option<HandleMemory>> {
    let Some((spec, any)) = opts.specs.iter().find_map(|s| {
        let pool = make_pool(s, ReadMode::Copy).ok()?;
        pool.as_zsmalloc().is_some().then_some((s, pool))
    }) else {
        return Ok(None);
    };
    let Some(corpus) = corpora.iter().find(|c| c.page == spec.config.page_size as usize) else {
        return Ok(None);
    };
    let Some(pool) = any.as_zsmalloc() else { return Ok(None) };
    let huge = pool.huge_class_size();
    let before = pool.metadata_bytes().1;
    let n = corpus.objects().min(MAX_OBJECTS);
    let mut handles = Vec::with_capacity(n);
    for e in 0..n {
        handles.push(pool.store(corpus.stored(e, huge).bytes)?);
    }
    let after = pool.metadata_bytes().1;
    drop(handles);
    Ok(Some(HandleMemory {
        embedded_bytes_per_object: std::mem::size_of::<AtomicUsize>() as u64,
        pool_slot_bytes_per_object: ((after.saturating_sub(before)) as f64 / n.max(1) as f64
            * 100.0)
            .round()
            / 100.0,
        objects: n as u64,
    }))
}
