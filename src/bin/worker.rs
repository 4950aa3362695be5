//! The training worker: owns the model, runs steps in short slices so it can still hear the
//! page, and posts progress and snapshots. `worker` moves messages, keeps time and reports its
//! own death; `session` turns messages into replies.

fn main() {
    attention_lab_web::worker::start();
}
