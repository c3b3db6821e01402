//! Python binding over zsmalloc-core (`zsmalloc._zsmalloc`, wrapped by the pure-Python package
//! `zsmalloc`). Translation only: every allocator decision is the core's.
//!
//! - [`pool`]: `Pool` (keyword configuration, stores, reads, statistics, compaction);
//! - [`handle`]: `Handle`, the packed `Handles` array and `View` read sections;
//! - [`raw`]: handle words by address and pools by address (same pools as the C ABI);
//! - [`config`], [`errors`], [`buffers`]: keywords and dicts, exceptions, bytes-like arguments;
//! - [`bench`]: the pure-Rust side of the Python-vs-Rust speed harness.

// pyo3 0.22's #[pymethods] expansion converts `PyErr` into itself for every fallible method,
// which newer clippy flags at each method (fixed in pyo3 0.23).
#![allow(clippy::useless_conversion)]
#![warn(clippy::undocumented_unsafe_blocks)]

use pyo3::prelude::*;
use pyo3::types::PyList;

mod bench;
mod buffers;
mod config;
mod errors;
mod handle;
mod pool;
mod raw;

// The C ABI (`zs_create_pool`, `zs_store`, ...) exported by this very module, so that ctypes/cffi
// bind to the allocator instance Python uses (`zsmalloc.library_path()`).
zsmalloc::export_c_abi!();

/// The class table of a configuration (same keywords as `Pool`): one dict per created class.
#[pyfunction]
#[pyo3(signature = (*, page_size = 4096, chain_size = 8, class_delta = 0, chain_policy = None,
    read_mode = "copy", mem_limit_pages = 0))]
fn class_table<'py>(
    py: Python<'py>,
    page_size: u32,
    chain_size: u32,
    class_delta: u32,
    chain_policy: Option<&Bound<'py, PyAny>>,
    read_mode: &str,
    mem_limit_pages: u64,
) -> PyResult<Bound<'py, PyList>> {
    use errors::PyRes;
    let classic = pyo3::types::PyString::new_bound(py, "classic");
    let policy = chain_policy.unwrap_or(classic.as_any());
    let (cfg, failed) =
        config::build(page_size, chain_size, class_delta, policy, read_mode, mem_limit_pages)?;
    let table = zsmalloc_core::ClassTable::new(&cfg).py();
    config::take_policy_error(&failed)?;
    config::class_table_rows(py, &table?)
}

/// Addresses of a few exported C ABI functions as this module sees them, so tests can prove
/// that `ctypes.CDLL(zsmalloc.library_path())` binds to this very copy of the allocator.
#[pyfunction]
fn _c_abi_symbols() -> std::collections::HashMap<&'static str, usize> {
    use __zsmalloc_c_abi as c;
    [
        ("zs_create_pool", c::zs_create_pool as *const () as usize),
        ("zs_store", c::zs_store as *const () as usize),
        ("zs_obj_read_begin", c::zs_obj_read_begin as *const () as usize),
        ("zs_free", c::zs_free as *const () as usize),
        ("zs_version", c::zs_version as *const () as usize),
    ]
    .into_iter()
    .collect()
}

#[pymodule]
fn _zsmalloc(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<pool::Pool>()?;
    m.add_class::<handle::Handle>()?;
    m.add_class::<handle::Handles>()?;
    m.add_class::<handle::View>()?;
    m.add("ZsError", m.py().get_type_bound::<errors::ZsError>())?;
    m.add_function(wrap_pyfunction!(class_table, m)?)?;
    m.add_function(wrap_pyfunction!(bench::rust_bench, m)?)?;
    m.add_function(wrap_pyfunction!(_c_abi_symbols, m)?)?;
    m.add("HANDLE_SIZE", zsmalloc_core::HANDLE_SIZE)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
