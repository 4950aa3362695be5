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

/// Runs `f` on every item: on the pool's threads, or in order on the calling thread with one
/// thread (no hand-off to the pool, whose thread would otherwise do the work while this one
/// waits).
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn for_each<T: Send>(items: Vec<T>, f: impl Fn(T) + Send + Sync) {
    if rayon::current_num_threads() > 1 {
        use rayon::prelude::*;
        items.into_par_iter().for_each(f);
        return;
    }
    items.into_iter().for_each(f);
}
