//! A global allocator for binaries that measure memory (the CLI, the training worker): the
//! system's, counting live heap bytes and their peak, so `experiments::measure_attention`
//! reports what an op really held (`peak_bytes`), not an estimate. Each binary installs it
//! with `#[global_allocator]`; without it the counts stay 0.
//!
//! Counted: every byte handed out by `alloc`/`alloc_zeroed`/`realloc` and not yet freed, by
//! any thread, at the size the caller asked for (the system allocator's own overhead and
//! rounding are not counted). Two relaxed atomics; the cost is a few nanoseconds a call.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

pub struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(n: usize) {
    let now = LIVE.fetch_add(n, Relaxed) + n;
    PEAK.fetch_max(now, Relaxed);
}

fn shrank(n: usize) {
    LIVE.fetch_sub(n, Relaxed);
}

// SAFETY: every call is passed unchanged to `System`, which upholds GlobalAlloc's contract;
// the counting only reads sizes and touches atomics (it never allocates).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            // The old block is freed only on success; the peak sees old + growth, not old + new
            // (an in-place or moved realloc holds both only inside the system allocator).
            match new_size.cmp(&layout.size()) {
                std::cmp::Ordering::Greater => grew(new_size - layout.size()),
                std::cmp::Ordering::Less => shrank(layout.size() - new_size),
                std::cmp::Ordering::Equal => {}
            }
        }
        p
    }
}

/// Bytes live now.
pub fn live() -> usize {
    LIVE.load(Relaxed)
}

/// Starts a new peak at the bytes live now, and returns them.
pub fn reset_peak() -> usize {
    let now = live();
    PEAK.store(now, Relaxed);
    now
}

/// The most bytes live at once since the last `reset_peak`.
pub fn peak() -> usize {
    PEAK.load(Relaxed)
}
