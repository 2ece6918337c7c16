//! [`CountingAlloc`]: a global allocator that counts the heap a thread
//! uses, for tests that bound what an input costs in memory.
//!
//! A test binary opts in with
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOC: support::CountingAlloc = support::CountingAlloc;
//! ```
//!
//! Counts are per thread, so tests running in parallel in the same binary
//! do not see each other's allocations. Memory freed by another thread than
//! the one that allocated it is counted where it is freed; cost tests keep
//! the work they measure on one thread.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The system allocator, counting bytes in use and their peak per thread.
#[derive(Debug, Clone, Copy, Default)]
pub struct CountingAlloc;

thread_local! {
    // Const-initialised `Cell`s have no destructor and never allocate, so
    // they are usable from inside the allocator.
    static IN_USE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn record(delta: isize) {
    // `try_with`: the thread's slots may already be gone while it exits.
    let _ = IN_USE.try_with(|in_use| {
        let now = in_use.get() + delta;
        in_use.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

#[allow(unsafe_code)]
// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged, so `System`'s guarantees hold; the bookkeeping touches only
// const-initialised thread-local cells and never allocates.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as given (see the impl).
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            record(layout.size() as isize);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as given (see the impl).
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            record(layout.size() as isize);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as given (see the impl).
        unsafe { System.dealloc(ptr, layout) };
        record(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as given (see the impl).
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            record(new_size as isize - layout.size() as isize);
        }
        new
    }
}

/// The heap this thread has in use, measured from a starting point.
#[derive(Debug, Clone, Copy)]
pub struct HeapUse {
    base: isize,
}

impl HeapUse {
    /// Starts measuring: what is in use now is the baseline, and the peak
    /// is reset to it.
    pub fn start() -> Self {
        let base = IN_USE.with(Cell::get);
        PEAK.with(|peak| peak.set(base));
        Self { base }
    }

    /// Bytes in use above the baseline (0 if less is in use).
    pub fn now(&self) -> usize {
        (IN_USE.with(Cell::get) - self.base).max(0) as usize
    }

    /// The most bytes in use above the baseline since [`HeapUse::start`].
    pub fn peak(&self) -> usize {
        (PEAK.with(Cell::get) - self.base).max(0) as usize
    }
}
