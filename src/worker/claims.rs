//! The claim worker: claims measured on a copy of the lead's models
//! (`worker_core::claim_worker`), one unit per task, so a Cancel gets through between units;
//! its reports go to the lead as they are.

use super::{crash, now, post, read};
use crate::tasks::next_task;
use protocol::turns::ClaimReport;
use protocol::{Crash, FromClaimWorker, ToClaimWorker};
use std::cell::RefCell;
use std::rc::Rc;
use wasm_bindgen::JsValue;
use worker_core::claim_worker::ClaimWorker;

#[derive(Default)]
struct State {
    worker: ClaimWorker,
    /// A unit is already asked for.
    unit_pending: bool,
}

/// What the claim worker does with each packet from the lead.
pub fn start() -> impl FnMut(JsValue) {
    let state: Rc<RefCell<State>> = Rc::default();
    move |data: JsValue| {
        let said = match read::<ToClaimWorker>(&data) {
            Ok((ToClaimWorker::Crash, _)) => {
                crash(Crash::ClaimWorker);
                Vec::new()
            }
            // Still borrowed: a panic trapped inside a unit; the worker is dead and reported.
            Ok((message, attachments)) => match state.try_borrow_mut() {
                Ok(mut s) => s.worker.handle(message, attachments),
                Err(_) => return,
            },
            Err(e) => {
                let message = format!("a message to it did not decode ({e})");
                post(&FromClaimWorker::Crashed { message }, &[]);
                Vec::new()
            }
        };
        said.into_iter().for_each(report);
        next_unit(&state);
    }
}

/// The claim's next unit in a task of its own, while one is under way.
fn next_unit(state: &Rc<RefCell<State>>) {
    {
        let Ok(mut s) = state.try_borrow_mut() else {
            return;
        };
        if !s.worker.measuring() || s.unit_pending {
            return;
        }
        s.unit_pending = true;
    }
    let state = state.clone();
    next_task(move || {
        let said = {
            let Ok(mut s) = state.try_borrow_mut() else {
                return;
            };
            s.unit_pending = false;
            s.worker.unit(&now)
        };
        said.into_iter().for_each(report);
        next_unit(&state);
    });
}

fn report(report: ClaimReport) {
    post(&FromClaimWorker::Report(report), &[]);
}
