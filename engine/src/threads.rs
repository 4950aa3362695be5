//! Native threads: how many, and the one way work is split across them.
//!
//! Work is cut into blocks by its shape alone, never by the number of threads, and each block
//! is computed exactly as it would be alone; so a run gives the same bits on 1 thread or many
//! (tests/threads.rs). wasm32 has one thread, and its kernels are not split.

/// Sets the number of threads of every later step (rayon's global pool). Without a call,
/// every core is used. Call it once, before any training.
#[cfg(not(target_arch = "wasm32"))]
pub fn set_threads(n: usize) -> crate::error::Result<()> {
    use crate::error::EngineError;
    rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build_global()
        .map_err(|e| EngineError::Input(format!("cannot start {n} threads: {e}")))
}

/// Runs `f` on one of the pool's threads and waits for it. Inside the pool, the thread that
/// runs a step takes its own share of every split (`for_each`) and the others steal the rest;
/// called from outside, every split would hand all of its blocks to the pool and sleep until
/// they were done, paying two thread wake-ups per split (on small, a second thread sped
/// `train` up 1.47× instead of 1.19×).
#[cfg(not(target_arch = "wasm32"))]
pub fn in_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    let mut out = None;
    rayon::scope(|_| out = Some(f()));
    out.expect("the scope ran f")
}

/// Keeps memory a step frees in the process for the next step, instead of glibc returning
/// each large buffer to the OS as it is freed. A step allocates and frees the same large
/// buffers every time: returned, each comes back as fresh pages (a fault apiece), and each
/// unmapping stops every other thread of the process to flush its TLB. Call it once, at the
/// start of a binary that trains, before it starts threads. Three settings:
/// - `M_MMAP_THRESHOLD` 32 MiB (glibc's largest): a large buffer comes from the heap, not from
///   a mapping of its own that is unmapped when freed;
/// - `M_TRIM_THRESHOLD` 1 GiB: the heap's free top is kept, not handed back after each step;
/// - `M_ARENA_MAX` 1: every thread allocates from that heap. A step runs on a pool thread
///   (`in_pool`), and glibc gives such a thread an arena of its own, built of 64 MiB heaps that
///   are unmapped as soon as they are wholly free, whatever the trim threshold: small allocates
///   about 150 MB a step, so every step faulted it all in again (585 000 page faults in one
///   `bench_step` run, 38 000 with one arena; tests/freed_memory.rs).
///
/// Returns whether the allocator took all three.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub fn keep_freed_memory() -> bool {
    // SAFETY: mallopt only sets allocator parameters; it is called before any training thread
    // exists. A refused value (0) leaves glibc's default, which is only slower.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20) == 1
            && libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30) == 1
            && libc::mallopt(libc::M_ARENA_MAX, 1) == 1
    }
}

/// Elsewhere the allocator's own policy stands.
#[cfg(all(
    not(target_arch = "wasm32"),
    not(all(target_os = "linux", target_env = "gnu"))
))]
pub fn keep_freed_memory() -> bool {
    false
}

/// Runs `f` on every item: on the pool's threads, or in order on the calling thread with one
/// thread (no hand-off to the pool, whose thread would otherwise do the work while this one
/// waits). Callers cut the work by its shape, and no item reads what another writes, so the
/// result does not depend on the order.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn for_each<T: Send>(items: Vec<T>, f: impl Fn(T) + Send + Sync) {
    if rayon::current_num_threads() > 1 {
        use rayon::prelude::*;
        items.into_par_iter().for_each(f);
        return;
    }
    items.into_iter().for_each(f);
}

/// wasm32 has one thread: every item in order.
#[cfg(target_arch = "wasm32")]
pub(crate) fn for_each<T>(items: Vec<T>, f: impl Fn(T)) {
    items.into_iter().for_each(f);
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    #[test]
    fn glibc_takes_the_settings_that_keep_freed_memory() {
        assert!(super::keep_freed_memory());
    }
}
