//! The web worker, in whichever role its name gives (`protocol::Role`): the lead the page talks
//! to, a gradient worker or the claim worker. `worker` is the browser's glue (messages, timers,
//! child workers, the store, its own death); `worker_core` decides everything else.

/// Counts live heap bytes: the Claims panel's memory experiment reports what attention held.
#[global_allocator]
static ALLOCATOR: engine::counting_alloc::Counting = engine::counting_alloc::Counting;

fn main() {
    attention_lab_web::worker::start();
}
