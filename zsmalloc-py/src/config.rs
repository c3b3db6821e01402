//! Keyword configuration, and statistics / class tables as Python dicts.

use std::sync::{Arc, Mutex};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PySequence, PyString};
use zsmalloc_core::{
    Backing, ClassSpec, ClassStats, ClassTable, ClassTableSpec, FnPolicy, PolicyRef, PoolConfig,
    PoolStats, ReadMode,
};

use zsmalloc_core::band::MAX_OBJECT;
use zsmalloc_core::class_table_file::max_class_lines;
use zsmalloc_core::text_input::escape;

use crate::errors::PyRes;

/// An error raised by a Python chain-policy callable while a class table was built.
pub type PolicyError = Arc<Mutex<Option<PyErr>>>;

/// Builds a `PoolConfig` from the keywords of `Pool(...)` / `class_table(...)`.
///
/// `chain_policy` is a name (`classic`, `heuristic`, `fixed-N`; `None` is `classic`) or a
/// callable `f(class_size, page_size, max_chain) -> pages`; a callable's exception is kept in the
/// returned slot and must be raised by the caller after the table is built
/// ([`take_policy_error`]). `class_table` is read by [`explicit_table`].
// One argument per keyword of the Python signature.
#[allow(clippy::too_many_arguments)]
pub fn build(
    page_size: u32,
    chain_size: u32,
    class_delta: u32,
    chain_policy: Option<&Bound<'_, PyAny>>,
    read_mode: &str,
    mem_limit_pages: u64,
    backing: &str,
    class_table: Option<&Bound<'_, PyAny>>,
    multi_page_size: u32,
) -> PyResult<(PoolConfig, PolicyError)> {
    let failed: PolicyError = Arc::new(Mutex::new(None));
    let policy = match chain_policy {
        None => PoolConfig::default().chain_policy,
        Some(p) => policy(p, &failed)?,
    };
    let config = PoolConfig {
        page_size,
        chain_size,
        class_delta,
        chain_policy: policy,
        read_mode: ReadMode::parse(read_mode).py()?,
        mem_limit_pages,
        backing: Backing::parse(backing).py()?,
        class_table: class_table
            .map(|t| explicit_table(t, page_size, multi_page_size))
            .transpose()?,
        multi_page_size,
        ..PoolConfig::default()
    };
    // A table with the band (orders given) brings its multi-page size when none is given.
    let config = match &config.class_table {
        Some(t) if multi_page_size == 0 => {
            PoolConfig { multi_page_size: t.multi_page_size(), ..config }
        }
        _ => config,
    };
    Ok((config, failed))
}

/// The explicit class table of `Pool(class_table=...)`: a sequence of `(size, chain)` pairs,
/// `(size, chain, order)` triples or class rows (dicts with `size`, `pages_per_zspage` and
/// optionally `order`, as `zsmalloc.class_table()` and `Pool.class_table()` return them), for
/// `page_size`-byte pages; or the path of a table file, whose page size must be `page_size`.
/// An entry without its order above the page takes the order of `multi_page_size`. A bad entry
/// raises `ValueError` (`TypeError` for an entry of the wrong type) naming it: `class_table[i]`
/// or the file's line.
pub fn explicit_table(
    table: &Bound<'_, PyAny>,
    page_size: u32,
    multi_page_size: u32,
) -> PyResult<ClassTableSpec> {
    if table.is_instance_of::<PyString>() || table.hasattr("__fspath__")? {
        let fspath = table.py().import_bound("os")?.getattr("fspath")?;
        let path: std::path::PathBuf = fspath.call1((table,))?.extract()?;
        // A FIFO blocks until its writer comes, which may be a thread of this interpreter.
        return table.py().allow_threads(|| ClassTableSpec::load(&path)).py();
    }
    if table.is_instance_of::<PyDict>() || table.is_instance_of::<pyo3::types::PyBytes>() {
        return Err(PyTypeError::new_err(
            "class_table must be a sequence of (size, chain) pairs or class rows, or a file path",
        ));
    }
    // An iterable may be endless (a generator): its entries are taken one by one and refused at
    // the first beyond the most classes any table has, never collected first.
    let limit = max_class_lines();
    let mut classes = Vec::new();
    for (i, item) in table.iter()?.enumerate() {
        if i == limit {
            return Err(PyValueError::new_err(format!(
                "invalid class_table: too many classes: class_table[{i}] is beyond the most \
                 any table has, {limit} (one per multiple of 8 from 32 to {MAX_OBJECT}); the \
                 rest is not read"
            )));
        }
        let (size, chain, order) = class_entry(&item?, i)?;
        let order = order.unwrap_or_else(|| ClassSpec::order_in(size, page_size, multi_page_size));
        classes.push(ClassSpec { size, chain, order });
    }
    ClassTableSpec::new(page_size, classes).py()
}

/// Entry `i` of a class table: a `(size, chain)` pair, a `(size, chain, order)` triple or a
/// row with `size`, `pages_per_zspage` and optionally `order`: size, chain and the order if
/// given.
fn class_entry(item: &Bound<'_, PyAny>, i: usize) -> PyResult<(u32, u32, Option<u32>)> {
    type Entry<'py> = (Bound<'py, PyAny>, Bound<'py, PyAny>, Option<Bound<'py, PyAny>>);
    let (size, chain, order): Entry<'_> = if let Ok(row) = item.downcast::<PyDict>() {
        match (row.get_item("size")?, row.get_item("pages_per_zspage")?) {
            (Some(size), Some(chain)) => (size, chain, row.get_item("order")?),
            _ => {
                return Err(PyValueError::new_err(format!(
                    "invalid class_table: class_table[{i}] is a dict without 'size' and \
                         'pages_per_zspage'"
                )))
            }
        }
    } else if let Some(seq) = item
        .downcast::<PySequence>()
        .ok()
        .filter(|s| !item.is_instance_of::<PyString>() && matches!(s.len(), Ok(2 | 3)))
    {
        let order = if seq.len()? == 3 { Some(seq.get_item(2)?) } else { None };
        (seq.get_item(0)?, seq.get_item(1)?, order)
    } else {
        return Err(PyTypeError::new_err(format!(
            "class_table[{i}] is {}, not a (size, chain) pair or (size, chain, order) triple",
            shown(item)?
        )));
    };
    let number = |v: &Bound<'_, PyAny>, what: &str| -> PyResult<u32> {
        let Ok(n) = v.extract::<i64>() else {
            let shown = shown(v)?;
            return Err(PyTypeError::new_err(format!(
                "class_table[{i}]: {what} {shown} is not an int"
            )));
        };
        u32::try_from(n).map_err(|_| {
            PyValueError::new_err(format!(
                "invalid class_table: class_table[{i}]: {what} {n} is out of range"
            ))
        })
    };
    let order = order.map(|o| number(&o, "order")).transpose()?;
    Ok((number(&size, "size")?, number(&chain, "chain")?, order))
}

/// `v`'s `repr()` as a message quotes it: its control characters escaped (a `__repr__` of the
/// caller's may return anything), so that the message stays one line.
fn shown(v: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(escape(&v.repr()?.to_string_lossy()).into_owned())
}

/// The chain policy named by, or calling, `chain_policy`.
fn policy(chain_policy: &Bound<'_, PyAny>, failed: &PolicyError) -> PyResult<PolicyRef> {
    let policy = if let Ok(name) = chain_policy.extract::<String>() {
        PolicyRef::by_name(&name)
            .ok_or_else(|| zsmalloc_core::Error::Config {
                setting: "chain_policy",
                message: format!(
                    "'{name}' is unknown; accepted: classic, heuristic, fixed-N (N in 1..=16) \
                     or a callable"
                ),
            })
            .py()?
    } else if chain_policy.is_callable() {
        let name = chain_policy
            .getattr("__name__")
            .and_then(|n| n.extract::<String>())
            .unwrap_or_else(|_| "callable".into());
        let f: Py<PyAny> = chain_policy.clone().unbind();
        let slot = failed.clone();
        PolicyRef::new(FnPolicy::new(name, move |size: u32, page: u32, max: u32| -> u32 {
            Python::with_gil(|py| {
                let res = f.call1(py, (size, page, max)).and_then(|v| v.extract::<u32>(py));
                match res {
                    Ok(pages) if (1..=max).contains(&pages) => pages,
                    Ok(pages) => {
                        record(
                            &slot,
                            pyo3::exceptions::PyValueError::new_err(format!(
                                "chain policy returned {pages} pages for class size {size}; \
                             expected 1..={max}"
                            )),
                        );
                        1
                    }
                    Err(e) => {
                        record(&slot, e);
                        1
                    }
                }
            })
        }))
    } else {
        return Err(PyTypeError::new_err(
            "chain_policy must be a policy name or a callable(class_size, page_size, max_chain)",
        ));
    };
    Ok(policy)
}

fn record(slot: &PolicyError, e: PyErr) {
    let mut g = slot.lock().unwrap_or_else(|p| p.into_inner());
    if g.is_none() {
        *g = Some(e);
    }
}

/// Raises the first exception a callable chain policy raised, if any.
pub fn take_policy_error(slot: &PolicyError) -> PyResult<()> {
    match slot.lock().unwrap_or_else(|p| p.into_inner()).take() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The configuration as a dict (keywords of `Pool(...)`, `class_delta` as effective).
pub fn config_dict<'py>(py: Python<'py>, c: &PoolConfig) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new_bound(py);
    d.set_item("page_size", c.page_size)?;
    d.set_item("chain_size", c.chain_size)?;
    d.set_item("class_delta", c.effective_delta())?;
    d.set_item("chain_policy", c.chain_policy.name())?;
    d.set_item("read_mode", c.read_mode.name())?;
    d.set_item("mem_limit_pages", c.mem_limit_pages)?;
    d.set_item("backing", c.effective_backing().name())?;
    d.set_item("backend", c.backend.name())?;
    let table = c
        .class_table
        .as_ref()
        .map(|t| t.classes().iter().map(|c| (c.size, c.chain)).collect::<Vec<(u32, u32)>>());
    d.set_item("class_table", table)?;
    d.set_item("multi_page_size", c.multi_page_size)?;
    d.set_item("payload", c.payload)?;
    Ok(d)
}

/// `struct zs_pool_stats` as a dict.
pub fn stats_dict<'py>(py: Python<'py>, s: &PoolStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new_bound(py);
    d.set_item("pages_compacted", s.pages_compacted)?;
    d.set_item("pages_allocated", s.pages_allocated)?;
    d.set_item("pages_peak", s.pages_peak)?;
    d.set_item("pages_cached", s.pages_cached)?;
    d.set_item("objs_allocated", s.objs_allocated)?;
    d.set_item("objs_inuse", s.objs_inuse)?;
    d.set_item("bytes_stored", s.bytes_stored)?;
    d.set_item("reads", s.reads)?;
    d.set_item("reads_spanning", s.reads_spanning)?;
    d.set_item("read_copy_bytes", s.read_copy_bytes)?;
    d.set_item("writes_spanning", s.writes_spanning)?;
    d.set_item("objs_moved", s.objs_moved)?;
    d.set_item("bytes_moved", s.bytes_moved)?;
    Ok(d)
}

/// One `zs_class_stats` row as a dict, with the page size its byte figures are relative to.
pub fn class_stats_dict<'py>(
    py: Python<'py>,
    c: &ClassStats,
    page_size: u32,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new_bound(py);
    d.set_item("page_size", page_size)?;
    d.set_item("index", c.index)?;
    d.set_item("size", c.size)?;
    d.set_item("pages_per_zspage", c.pages_per_zspage)?;
    d.set_item("objs_per_zspage", c.objs_per_zspage)?;
    d.set_item("huge", c.huge)?;
    d.set_item("order", c.order)?;
    d.set_item("fullness", PyList::new_bound(py, c.fullness))?;
    d.set_item("obj_allocated", c.obj_allocated)?;
    d.set_item("obj_used", c.obj_used)?;
    d.set_item("pages_used", c.pages_used)?;
    d.set_item("freeable", c.freeable)?;
    d.set_item("spanning_per_zspage", c.spanning_per_zspage)?;
    d.set_item("tail_waste", c.tail_waste)?;
    d.set_item("worst_merge_waste", c.worst_merge_waste)?;
    d.set_item("first_index", c.first_index)?;
    d.set_item("last_index", c.last_index)?;
    d.set_item("bytes_stored", c.bytes_stored)?;
    d.set_item("reads", c.reads)?;
    d.set_item("reads_spanning", c.reads_spanning)?;
    d.set_item("read_copy_bytes", c.read_copy_bytes)?;
    Ok(d)
}

/// The class table of a configuration: one dict per created class that stores objects (not the
/// multi-page band's first class, a page no length reaches), ascending by size.
pub fn class_table_rows<'py>(py: Python<'py>, table: &ClassTable) -> PyResult<Bound<'py, PyList>> {
    let page = table.page_size();
    let list = PyList::empty_bound(py);
    for c in table.classes().iter().filter(|c| table.stores_objects(c)) {
        let d = PyDict::new_bound(py);
        d.set_item("page_size", page)?;
        d.set_item("index", c.index)?;
        d.set_item("size", c.size)?;
        d.set_item("pages_per_zspage", c.pages_per_zspage)?;
        d.set_item("objs_per_zspage", c.objs_per_zspage)?;
        d.set_item("huge", c.huge)?;
        d.set_item("order", c.order)?;
        d.set_item("first_index", c.first_index)?;
        d.set_item("last_index", c.index)?;
        d.set_item("tail_waste", c.tail_waste(page))?;
        d.set_item("spanning_per_zspage", c.spanning_per_zspage(page))?;
        d.set_item("worst_merge_waste", table.worst_merge_waste(c))?;
        list.append(d)?;
    }
    Ok(list)
}
