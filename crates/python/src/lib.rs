//! critpath-python: the native half of the `critpath` Python package
//! (`critpath._native`, built by maturin from python/pyproject.toml).
//!
//! It adds no analysis of its own: traces are opened by critpath-import,
//! analyzed by critpath-engine and rendered by critpath-views exactly as
//! the command line does, and results cross into Python as the CLI's JSON
//! documents (python/critpath turns them into DataFrames). Every failure
//! becomes a `critpath._native.Error` (a `ValueError`) carrying the message
//! the CLI prints after `critpath: error:`; a panic is caught at the
//! boundary and becomes the same exception, never a crash.

mod analysis;
mod batch;
mod requests;

/// The package's settings: its edge reads the environment (docs/settings.md).
fn settings() -> critpath_session::Settings {
    let env = |name: &str| std::env::var(name).ok();
    critpath_session::env::settings_from(critpath_session::Settings::default(), env)
}

use pyo3::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};

pyo3::create_exception!(
    _native,
    Error,
    pyo3::exceptions::PyValueError,
    "A trace could not be read or analyzed, or a request does not fit it; the message is the CLI's."
);

/// A failure in the CLI's words.
pub(crate) type Result<T> = std::result::Result<T, String>;

/// Runs `f` without the GIL; its error or its panic becomes an [`Error`].
pub(crate) fn guarded<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> Result<T> + Send,
) -> PyResult<T> {
    let outcome = py.allow_threads(|| catch_unwind(AssertUnwindSafe(f)));
    match outcome {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(msg)) => Err(Error::new_err(msg)),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown cause".into());
            Err(Error::new_err(format!(
                "internal error in critpath (please report it): {what}"
            )))
        }
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("Error", m.py().get_type::<Error>())?;
    m.add_class::<analysis::Native>()?;
    m.add_function(wrap_pyfunction!(analysis::analyze, m)?)?;
    m.add_function(wrap_pyfunction!(requests::requests, m)?)?;
    m.add_function(wrap_pyfunction!(batch::analyze_file, m)?)?;
    m.add_function(wrap_pyfunction!(batch::join_split, m)?)?;
    m.add_function(wrap_pyfunction!(batch::given_once, m)?)?;
    m.add_class::<batch::Results>()?;
    Ok(())
}
