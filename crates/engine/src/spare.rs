//! Room kept for the next analysis on the same thread. A file of many
//! requests analyzes each on its own, a few dozen records each; making the
//! engine's tables anew for every request cost more than the analysis
//! itself: glibc consolidates its lists of freed small blocks whenever a
//! block of a kilobyte or more is asked for, and each request asked for
//! several. An analysis that ends puts its emptied tables here, if they
//! are small ([`SMALL`] entries or fewer); the next one on the thread
//! takes them. What a large analysis held is freed as before.

use std::any::Any;
use std::cell::RefCell;

/// Entries a table may have room for and still be kept.
pub(crate) const SMALL: usize = 4096;

/// Kinds of tables kept at most (one of each).
const KINDS: usize = 8;

thread_local! {
    static KEPT: RefCell<Vec<Box<dyn Any>>> = const { RefCell::new(Vec::new()) };
}

/// Tables of type `T` kept by an analysis that ended on this thread.
pub(crate) fn take<T: 'static>() -> Option<T> {
    KEPT.try_with(|kept| {
        let mut kept = kept.borrow_mut();
        let i = kept.iter().position(|b| b.is::<T>())?;
        kept.swap_remove(i).downcast::<T>().ok().map(|b| *b)
    })
    .ok()
    .flatten()
}

/// Keeps `tables` (emptied) for the next analysis on this thread, unless
/// tables of its type are kept already.
pub(crate) fn keep<T: 'static>(tables: T) {
    let _ = KEPT.try_with(|kept| {
        let mut kept = kept.borrow_mut();
        if kept.len() < KINDS && !kept.iter().any(|b| b.is::<T>()) {
            kept.push(Box::new(tables));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_kept_come_back_once_on_their_thread_only() {
        keep(vec![1u32; 3]);
        keep(vec![9u32]);
        std::thread::spawn(|| assert_eq!(take::<Vec<u32>>(), None))
            .join()
            .unwrap();
        assert_eq!(take::<Vec<u32>>(), Some(vec![1, 1, 1]));
        assert_eq!(take::<Vec<u32>>(), None);
        assert_eq!(take::<Vec<u8>>(), None);
    }
}
