//! A global allocator that counts live heap bytes, for the idle-memory
//! scenario. Counting is off until [`enable`] is called, so the timed
//! scenarios pay one relaxed load per allocation and nothing else.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering::Relaxed};

static ENABLED: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicIsize = AtomicIsize::new(0);

/// The system allocator, plus a live-bytes counter while enabled.
pub(crate) struct Counting;

/// Starts counting. Bytes allocated before this call and freed after it make
/// the counter go down, so only differences between two readings mean
/// anything.
pub(crate) fn enable() {
    ENABLED.store(true, Relaxed);
}

/// Live heap bytes counted so far (allocations minus frees since `enable`).
pub(crate) fn live_bytes() -> isize {
    LIVE.load(Relaxed)
}

fn add(n: usize) {
    if ENABLED.load(Relaxed) {
        LIVE.fetch_add(n as isize, Relaxed);
    }
}

fn sub(n: usize) {
    if ENABLED.load(Relaxed) {
        LIVE.fetch_sub(n as isize, Relaxed);
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged, so `System`'s guarantees are ours; the counting touches only
// atomics and never allocates.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is; the caller upholds `alloc`'s contract.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            add(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            add(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        sub(layout.size());
        // SAFETY: forwarded as is; `ptr` came from this allocator.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as is.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            sub(layout.size());
            add(new_size);
        }
        p
    }
}
