//! The training worker built with relaxed SIMD (feature `relaxed-simd`): the same program as
//! `worker.rs`, whose matrix products use fused multiply-adds. Its module does not compile in a
//! browser without relaxed SIMD (Safari), so `assets/worker.js` starts it only where
//! `WebAssembly.validate` accepts relaxed SIMD, and `worker.rs`'s build elsewhere.

#[global_allocator]
static ALLOCATOR: engine::counting_alloc::Counting = engine::counting_alloc::Counting;

fn main() {
    attention_lab_web::worker::start();
}
