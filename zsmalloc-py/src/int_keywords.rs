//! The integer keywords of `Pool(...)` and `class_table(...)`.
//!
//! pyo3's own conversion of an int that does not fit the field (`chain_size=-1`,
//! `page_size=2**40`) raises an `OverflowError` that names no argument; these raise the
//! `ValueError` of any other bad setting instead ("invalid chain_size: -1 is out of range;
//! expected 1..=16"). A value that is not an int stays pyo3's `TypeError`, which names it.

use pyo3::exceptions::PyOverflowError;
use pyo3::prelude::*;
use zsmalloc_core::Error;

use crate::errors::to_py;

/// `v` as a `T`, or the `ValueError` naming `setting` and what it accepts.
fn extract<'py, T: FromPyObject<'py>>(
    v: &Bound<'py, PyAny>,
    setting: &'static str,
    accepted: &str,
) -> PyResult<T> {
    v.extract::<T>().map_err(|e| {
        if !e.is_instance_of::<PyOverflowError>(v.py()) {
            return e;
        }
        let value = v.repr().map(|r| r.to_string()).unwrap_or_else(|_| "the value".into());
        let message = format!("{value} is out of range; expected {accepted}");
        to_py(Error::Config { setting, message })
    })
}

pub fn page_size(v: &Bound<'_, PyAny>) -> PyResult<u32> {
    extract(v, "page_size", "a power of two in 4096..=65536")
}

pub fn chain_size(v: &Bound<'_, PyAny>) -> PyResult<u32> {
    extract(v, "chain_size", "1..=16")
}

pub fn class_delta(v: &Bound<'_, PyAny>) -> PyResult<u32> {
    extract(v, "class_delta", "0 (page_size >> 8) or a multiple of 8 below the page size")
}

pub fn multi_page_size(v: &Bound<'_, PyAny>) -> PyResult<u32> {
    extract(v, "multi_page_size", "0 or page_size << K, K in 1..=4, at most 65536")
}

pub fn mem_limit_pages(v: &Bound<'_, PyAny>) -> PyResult<u64> {
    extract(v, "mem_limit_pages", "a page count, 0 for no limit")
}
