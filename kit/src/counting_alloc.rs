//! [`CountingAlloc`]: a global allocator that counts the heap a thread
//! uses, for tests that bound what an input costs in memory, and the
//! allocator work it causes (calls, and bytes handed out, reallocations
//! included), for tests that bound what it costs in work: counted, so the
//! bound holds whatever else the machine is doing.
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
    static CALLS: Cell<usize> = const { Cell::new(0) };
    static TRAFFIC: Cell<usize> = const { Cell::new(0) };
}

/// One allocation or reallocation of `size` bytes: counted as work. A
/// reallocation counts its whole new size, what it may copy and what it
/// adds, so growing a buffer by a byte at a time costs quadratic traffic
/// and doubling it costs linear traffic.
fn work(size: usize) {
    let _ = CALLS.try_with(|calls| calls.set(calls.get() + 1));
    let _ = TRAFFIC.try_with(|traffic| traffic.set(traffic.get() + size));
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
            work(layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as given (see the impl).
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            record(layout.size() as isize);
            work(layout.size());
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
            work(new_size);
        }
        new
    }
}

/// The heap this thread has in use, measured from a starting point.
#[derive(Debug, Clone, Copy)]
pub struct HeapUse {
    base: isize,
    calls: usize,
    traffic: usize,
}

impl HeapUse {
    /// Starts measuring: what is in use now is the baseline, and the peak
    /// is reset to it.
    pub fn start() -> Self {
        let base = IN_USE.with(Cell::get);
        PEAK.with(|peak| peak.set(base));
        Self {
            base,
            calls: CALLS.with(Cell::get),
            traffic: TRAFFIC.with(Cell::get),
        }
    }

    /// Calls to `alloc`, `alloc_zeroed` and `realloc` since
    /// [`HeapUse::start`].
    pub fn calls(&self) -> usize {
        CALLS.with(Cell::get) - self.calls
    }

    /// Bytes the allocator handed out since [`HeapUse::start`]: the size
    /// of every allocation and the new size of every reallocation (an
    /// upper bound of the bytes it moved plus those it added). Work done
    /// through the allocator, in counted units: a buffer grown by exact
    /// fits, once per piece, costs quadratic traffic; grown by doubling,
    /// linear.
    pub fn traffic(&self) -> usize {
        TRAFFIC.with(Cell::get) - self.traffic
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
