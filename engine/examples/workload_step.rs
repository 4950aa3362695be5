//! Native side of the browser benchmark (e2e/bench/training.mjs): median ms per training step
//! of `engine::workload`, the same function the training worker times in WASM.
//!
//!   cargo run --release -p attention-lab-engine --example workload_step [-- ITERS [WARMUP]]

use std::time::Instant;

fn main() {
    // One thread, as the worker has: the ratio compares the code, not the core count.
    // Before any thread starts: the allocator's settings hold for threads started after them.
    engine::threads::keep_freed_memory();
    engine::threads::set_threads(1).expect("a 1-thread pool");
    let mut args = std::env::args().skip(1).map(|a| a.parse::<usize>());
    let iters = args.next().and_then(Result::ok).unwrap_or(20);
    let warmup = args.next().and_then(Result::ok).unwrap_or(3);
    let start = Instant::now();
    let now = || start.elapsed().as_secs_f64() * 1e3;
    let results: serde_json::Map<String, serde_json::Value> = engine::workload::presets()
        .iter()
        .map(|p| {
            (
                p.name.to_string(),
                engine::workload::median_step_ms(p, iters, warmup, now).into(),
            )
        })
        .collect();
    println!("{}", serde_json::Value::Object(results));
}
