//! The per-object gate and the GIL: when a call waits, and with what held.
//!
//! A gate (`RwLock<()>`) orders whole-object writes and frees against reads of the same object
//! on other threads (the core pins objects but does not order their bytes). Lock rule (no
//! deadlock with the GIL): a gate is only ever waited for with the GIL released; with the GIL
//! held it is only tried.

use std::sync::{PoisonError, RwLock};

use pyo3::prelude::*;
use zsmalloc_core::Error;

use crate::errors::{busy_error, freed_error, to_py};

/// Objects at least this long are stored and read with the GIL released; shorter single-object
/// calls keep it (releasing and re-taking it costs more than the copy). Bulk calls always
/// release it.
pub const GIL_RELEASE_BYTES: usize = 16 * 1024;

/// Runs `f` holding `gate` shared. Waits only with the GIL released.
pub fn shared<R: Send>(
    py: Python<'_>,
    gate: &RwLock<()>,
    release_gil: bool,
    f: impl FnOnce() -> R + Send,
) -> R {
    if !release_gil {
        if let Ok(_g) = gate.try_read() {
            return f();
        }
    }
    py.allow_threads(|| {
        let _g = gate.read().unwrap_or_else(PoisonError::into_inner);
        f()
    })
}

/// Runs `f` holding `gate` exclusively. Waits only with the GIL released.
pub fn exclusive<R: Send>(
    py: Python<'_>,
    gate: &RwLock<()>,
    release_gil: bool,
    f: impl FnOnce() -> R + Send,
) -> R {
    if !release_gil {
        if let Ok(_g) = gate.try_write() {
            return f();
        }
    }
    py.allow_threads(|| {
        let _g = gate.write().unwrap_or_else(PoisonError::into_inner);
        f()
    })
}

/// Why a gated operation was refused. Built with the GIL released (while the gate is held) and
/// turned into an exception once the gate is let go.
pub enum Refused {
    Freed,
    ViewOpen,
    Core(Error),
}

impl From<Refused> for PyErr {
    fn from(r: Refused) -> PyErr {
        match r {
            Refused::Freed => freed_error(),
            Refused::ViewOpen => busy_error(),
            Refused::Core(e) => to_py(e),
        }
    }
}
