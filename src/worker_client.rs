//! Page side of the training worker: spawn it, queue messages until it says Hello, hand every
//! reply to one callback.

use crate::worker_io::{decode, encode, Packet};
use protocol::{FromWorker, LabError, LabResult, ToWorker};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{ErrorEvent, MessageEvent, Worker};

/// Trunk's loader shim for the worker bin (`data-loader-shim` in index.html).
const WORKER_SCRIPT: &str = "attention-lab-worker_loader.js";

/// A worker that has not said Hello by then is taken for dead (its script or wasm failed to
/// load: the loader's promise rejects inside the worker, and the page hears nothing else).
const START_TIMEOUT_MS: i32 = 30_000;

pub struct LabClient {
    worker: Worker,
    listening: Rc<Cell<bool>>,
    queue: Rc<RefCell<Vec<Packet>>>,
}

impl LabClient {
    /// Start a worker: `on_reply` gets its messages, `on_death` why it died (its `error` event:
    /// a trap, such as an abort after a panic or out of memory; or no Hello in time). Its
    /// `Crashed` message, sent from its panic hook, comes through `on_reply`.
    pub fn spawn(
        on_reply: impl Fn(FromWorker, Vec<Vec<u8>>) + 'static,
        on_death: impl Fn(String) + 'static,
    ) -> LabResult<LabClient> {
        let worker = Worker::new(WORKER_SCRIPT).map_err(|e| {
            LabError::browser(format!("could not start the training worker: {e:?}"))
        })?;
        let listening = Rc::new(Cell::new(false));
        let queue: Rc<RefCell<Vec<Packet>>> = Rc::default();
        let on_reply = Rc::new(on_reply);
        let on_death = Rc::new(on_death);

        let (w, l, q, reply) = (
            worker.clone(),
            listening.clone(),
            queue.clone(),
            on_reply.clone(),
        );
        let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
            match decode::<FromWorker>(&event.data()) {
                Ok((FromWorker::Hello, _)) => {
                    l.set(true);
                    for packet in q.borrow_mut().drain(..) {
                        let _ = w.post_message_with_transfer(&packet.data, &packet.transfer);
                    }
                }
                Ok((message, attachments)) => reply(message, attachments),
                Err(e) => reply(FromWorker::Failed(e), Vec::new()),
            }
        });
        worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        on_message.forget();

        let died = on_death.clone();
        let on_error = Closure::<dyn FnMut(ErrorEvent)>::new(move |event: ErrorEvent| {
            // Handled here: the page says so, the console need not.
            event.prevent_default();
            died(death_message(&event.message()));
        });
        worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        on_error.forget();

        let l = listening.clone();
        let too_late = Closure::once_into_js(move || {
            if !l.get() {
                on_death(format!(
                    "it did not start within {} s",
                    START_TIMEOUT_MS / 1000
                ));
            }
        });
        if let Some(window) = web_sys::window() {
            let _ = window.set_timeout_with_callback_and_timeout_and_arguments_0(
                too_late.unchecked_ref(),
                START_TIMEOUT_MS,
            );
        }
        Ok(LabClient {
            worker,
            listening,
            queue,
        })
    }

    pub fn send(&self, message: &ToWorker, attachments: &[&[u8]]) -> LabResult<()> {
        let packet = encode(message, attachments)?;
        if self.listening.get() {
            self.worker
                .post_message_with_transfer(&packet.data, &packet.transfer)
                .map_err(|e| {
                    LabError::browser(format!("could not reach the training worker: {e:?}"))
                })
        } else {
            self.queue.borrow_mut().push(packet);
            Ok(())
        }
    }

    /// End the worker now; nothing it still had in flight arrives.
    pub fn terminate(&self) {
        self.worker.terminate();
    }
}

/// The `error` event's text for people: an abort without a panic message is a trap, most
/// likely memory running out.
fn death_message(event: &str) -> String {
    let event = event.trim_start_matches("Uncaught ").to_string();
    if event.contains("unreachable") {
        format!("it aborted ({event}), most likely out of memory")
    } else if event.is_empty() {
        "it failed without a message".into()
    } else {
        event
    }
}
