//! A training step after the first allocates no buffer the size of an activation: it writes
//! into the buffers the step before left (`train::StepBuffers`). Counted by this binary's own
//! allocator, which records every allocation made while a step runs, on any thread. Counts,
//! not times: they do not depend on the machine's load.
//!
//! The engine makes a new activation buffer zeroed (`ops::reuse` falls back to
//! `Array::zeros`), so zeroed allocations of that size are what is counted. Not all large
//! allocations: the gemm crate allocates its own packing buffer for each large product (about
//! 64 KiB, uninitialised), which its API gives no way to keep.

use engine::forward::ForwardOptions;
use engine::optim::{Optimizer, OptimizerConfig};
use engine::train::{train_step, StepBuffers};
use engine::{workload, MaskMode, Rng};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;

struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
/// Zeroed allocations of at least `LARGE` bytes: how many, and the largest.
static LARGE: AtomicUsize = AtomicUsize::new(usize::MAX);
static LARGE_COUNT: AtomicUsize = AtomicUsize::new(0);
static LARGEST: AtomicUsize = AtomicUsize::new(0);
static COUNT: AtomicUsize = AtomicUsize::new(0);
static BYTES: AtomicUsize = AtomicUsize::new(0);

fn record(size: usize, zeroed: bool) {
    if COUNTING.load(Relaxed) {
        COUNT.fetch_add(1, Relaxed);
        BYTES.fetch_add(size, Relaxed);
        if zeroed && size >= LARGE.load(Relaxed) {
            LARGE_COUNT.fetch_add(1, Relaxed);
            LARGEST.fetch_max(size, Relaxed);
        }
    }
}

// SAFETY: every call goes unchanged to `System`; the bookkeeping only touches atomics.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        record(layout.size(), false);
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        record(layout.size(), true);
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        record(new_size, false);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The counters are global: one test counts at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// (allocations, bytes, zeroed allocations of ≥ `large` bytes, the largest of those) of each step,
/// for `steps` steps of the tiny workload (dropout on) on batches whose masked positions
/// differ, with `opts`.
fn per_step(opts: &ForwardOptions, steps: usize, large: usize) -> Vec<[usize; 4]> {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let preset = &workload::presets()[0];
    let batches: Vec<_> = (0..3)
        .map(|seed| workload::fixed_batch(preset.seq_len, seed))
        .collect();
    let mut model = workload::model(preset);
    let mut grads = model.zeros_like();
    let mut optimizer = Optimizer::new(OptimizerConfig::adam(1e-3), &model).unwrap();
    let (mut rng, mut buffers) = (Rng::new(5), StepBuffers::default());
    LARGE.store(large, Relaxed);
    (0..steps)
        .map(|i| {
            for c in [&COUNT, &BYTES, &LARGE_COUNT, &LARGEST] {
                c.store(0, Relaxed);
            }
            COUNTING.store(true, Relaxed);
            let step = train_step(
                &mut model,
                &mut grads,
                &mut optimizer,
                &batches[i % batches.len()],
                opts,
                &mut rng,
                &mut buffers,
            );
            COUNTING.store(false, Relaxed);
            step.expect("the workload trains");
            [&COUNT, &BYTES, &LARGE_COUNT, &LARGEST].map(|c| c.load(Relaxed))
        })
        .collect()
}

#[test]
fn after_the_first_step_no_buffer_the_size_of_an_activation_is_allocated() {
    let preset = &workload::presets()[0];
    // The smallest activation: (N, C) floats, N = B·T.
    let activation = workload::BATCH * preset.seq_len * preset.config.hidden_size * 4;
    let steps = per_step(&ForwardOptions::training(MaskMode::Padding), 6, activation);
    for (i, [count, bytes, large, largest]) in steps.iter().enumerate() {
        println!(
            "step {}: {count} allocations, {bytes} bytes; {large} zeroed of ≥ {activation} bytes (largest {largest})",
            i + 1
        );
    }
    let [_, first_bytes, first_large, _] = steps[0];
    assert!(first_large > 0, "the first step allocates its activations");
    for (i, &[_, bytes, large, largest]) in steps.iter().enumerate().skip(1) {
        assert_eq!(
            large,
            0,
            "step {} allocated {large} zeroed buffers of ≥ {activation} bytes (largest {largest})",
            i + 1
        );
        // What is left is small bookkeeping and gemm's packing: well under half the first
        // step's bytes, most of which are the activations.
        assert!(
            bytes * 2 < first_bytes,
            "step {} allocated {bytes} bytes, the first {first_bytes}",
            i + 1
        );
    }
}
