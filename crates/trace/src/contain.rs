//! Panics of code that is not critpath's own (a third-party decoder meeting
//! bytes it did not expect) contained where that code is called, so that
//! the input is refused with a message instead of the process ending.

use std::any::Any;
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};

thread_local! {
    static CONTAINING: Cell<u32> = const { Cell::new(0) };
}

/// Runs `f`; a panic in it comes back as `Err` with its message. While
/// `f` runs, [`containing`] is true on this thread, so that a panic hook
/// may leave the message unprinted (the caller reports it).
pub fn contained<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    CONTAINING.with(|c| c.set(c.get() + 1));
    let out = catch_unwind(AssertUnwindSafe(f));
    CONTAINING.with(|c| c.set(c.get() - 1));
    out.map_err(|p| panic_message(p.as_ref()))
}

/// Whether this thread is inside [`contained`].
pub fn containing() -> bool {
    CONTAINING.with(|c| c.get() > 0)
}

/// The text a panic was raised with.
pub fn panic_message(p: &(dyn Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_its_message() {
        let r: Result<(), String> = contained(|| panic!("bad {}", 7));
        assert_eq!(r, Err("bad 7".to_string()));
        assert!(!containing());
        assert_eq!(contained(|| 3), Ok(3));
    }
}
