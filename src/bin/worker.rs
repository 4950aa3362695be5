//! The training worker: owns the model, runs steps in short slices so it can still hear the
//! page, and posts progress and snapshots. All logic is in `Session`; this file only moves
//! messages and keeps time.

fn main() {
    console_error_panic_hook::set_once();
    attention_lab_web::worker::start();
}
