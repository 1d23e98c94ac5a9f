//! A hint to the CPU shared by the stages' hot loops: fetch what will be
//! read soon, so that the loop does not wait for memory.

/// Asks the CPU to fetch the cache lines of `v[i]` (nothing when `i` is
/// out of bounds, or on other CPUs than x86-64).
#[inline(always)]
pub fn prefetch<T>(v: &[T], i: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(x) = v.get(i) {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let first: *const i8 = (x as *const T).cast();
        // SAFETY: a prefetch is a hint: it reads nothing the program sees
        // and never faults.
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(first);
            if std::mem::size_of::<T>() > 1 {
                // The element's last byte: its second line, if it has one.
                _mm_prefetch::<_MM_HINT_T0>(first.wrapping_add(std::mem::size_of::<T>() - 1));
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (v, i);
}
