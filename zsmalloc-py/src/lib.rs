//! Python binding over zsmalloc-core (`zsmalloc._zsmalloc`, wrapped by the pure-Python package
//! `zsmalloc`). Translation only: every allocator decision is the core's.
//!
//! Modules, bottom up (each uses only those above it):
//!
//! - [`errors`], [`buffers`]: exceptions; bytes-like arguments and new `bytes`;
//! - [`int_keywords`]: the integer keywords, a value out of range a `ValueError` naming it;
//! - [`config`]: keywords to a `PoolConfig`, statistics and class tables as dicts;
//! - [`raw`]: handle words at addresses (the core's raw layer);
//! - [`gate`]: the per-object gate and when calls release the GIL;
//! - [`pool`]: the `Pool` object's data (a share of the core pool, its `struct zs_pool *`);
//! - [`bulk`]: the chunked loops of the bulk calls;
//! - [`handle`], [`handles`], [`view`]: `Handle`, the packed `Handles` array, `View` sections;
//! - [`pool_api`]: `Pool`'s Python methods, which hand out the three above.

// pyo3 0.22's #[pymethods] expansion converts `PyErr` into itself for every fallible method,
// which newer clippy flags at each method (fixed in pyo3 0.23).
#![allow(clippy::useless_conversion)]
#![warn(clippy::undocumented_unsafe_blocks)]

use pyo3::prelude::*;
use pyo3::types::PyList;

mod buffers;
mod bulk;
mod config;
mod errors;
mod gate;
mod handle;
mod handles;
mod int_keywords;
mod pool;
mod pool_api;
mod raw;
mod view;

// The C ABI (`zs_create_pool`, `zs_store`, ...) exported by this very module, so that ctypes/cffi
// bind to the allocator instance Python uses (`zsmalloc.library_path()`).
zsmalloc::export_c_abi!();

/// The class table of a configuration (same keywords as `Pool`): one dict per created class.
/// The rows are accepted back as `Pool(class_table=...)` (their `size` and `pages_per_zspage`).
#[pyfunction]
#[pyo3(signature = (*, page_size = 4096, chain_size = 8, class_delta = 0, chain_policy = None,
    read_mode = "copy", mem_limit_pages = 0, backing = "anonymous", class_table = None,
    multi_page_size = 0),
    text_signature = "(*, page_size=4096, chain_size=8, class_delta=0, chain_policy='classic', \
        read_mode='copy', mem_limit_pages=0, backing='anonymous', class_table=None, \
        multi_page_size=0)")]
// One argument per keyword of the Python signature.
#[allow(clippy::too_many_arguments)]
fn class_table<'py>(
    py: Python<'py>,
    #[pyo3(from_py_with = "int_keywords::page_size")] page_size: u32,
    #[pyo3(from_py_with = "int_keywords::chain_size")] chain_size: u32,
    #[pyo3(from_py_with = "int_keywords::class_delta")] class_delta: u32,
    chain_policy: Option<&Bound<'py, PyAny>>,
    read_mode: &str,
    #[pyo3(from_py_with = "int_keywords::mem_limit_pages")] mem_limit_pages: u64,
    backing: &str,
    class_table: Option<&Bound<'py, PyAny>>,
    #[pyo3(from_py_with = "int_keywords::multi_page_size")] multi_page_size: u32,
) -> PyResult<Bound<'py, PyList>> {
    use errors::PyRes;
    let (cfg, failed) = config::build(
        page_size,
        chain_size,
        class_delta,
        chain_policy,
        read_mode,
        mem_limit_pages,
        backing,
        class_table,
        multi_page_size,
    )?;
    let table = zsmalloc_core::ClassTable::new(&cfg).py();
    config::take_policy_error(&failed)?;
    config::class_table_rows(py, &table?)
}

#[pymodule]
fn _zsmalloc(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<pool::Pool>()?;
    m.add_class::<handle::Handle>()?;
    m.add_class::<handles::Handles>()?;
    m.add_class::<view::View>()?;
    m.add("ZsError", m.py().get_type_bound::<errors::ZsError>())?;
    m.add_function(wrap_pyfunction!(class_table, m)?)?;
    m.add("HANDLE_SIZE", zsmalloc_core::HANDLE_SIZE)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
