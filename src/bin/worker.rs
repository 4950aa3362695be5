//! The training worker: owns the model, runs steps in short slices so it can still hear the
//! page, and posts progress and snapshots. `worker` moves messages, keeps time, does the work on
//! the browser's store and reports its own death; `worker_core::session` turns messages into replies.

/// Counts live heap bytes: the Claims panel's memory experiment reports what attention held.
#[global_allocator]
static ALLOCATOR: engine::counting_alloc::Counting = engine::counting_alloc::Counting;

fn main() {
    attention_lab_web::worker::start();
}
