//! The side that starts a worker: the page starts the training worker, which starts its
//! gradient workers the same way. Spawn it, queue messages until it says Hello, hand every
//! reply to one callback, and say in words why it died or never started.

use crate::worker_io::{decode, encode, encode_with_floats, float_attachment, Packet};
use js_sys::Float32Array;
use protocol::{LabError, LabResult, Role, WorkerSays};
use serde::Serialize;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{ErrorEvent, Event, MessageEvent, Worker, WorkerOptions};

/// The worker's loader (assets/worker.js): it picks the build the browser can compile and
/// reports what failed before the worker's own code runs.
const WORKER_SCRIPT: &str = "worker.js";

/// A worker that has said neither Hello nor why it failed by then is taken for dead. Every
/// failure the loader can see is reported at once; this is for what nothing reports (a browser
/// that stalls the download).
const START_TIMEOUT_MS: i32 = 30_000;

/// Which build of the worker runs: `relaxed-simd` or `simd128`, on the root element as
/// `data-worker-simd` (for the speed benchmark and the tests).
const BUILD_ATTRIBUTE: &str = "data-worker-simd";

/// Why the worker is gone: it stopped (a panic, a trap) or never started. Its text is the
/// sentence the page shows.
#[derive(Clone, Debug, PartialEq)]
pub enum Death {
    Stopped(String),
    NotStarted(String),
}

impl std::fmt::Display for Death {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Death::Stopped(why) => write!(f, "The trainer stopped: {why}"),
            Death::NotStarted(why) => write!(f, "The trainer could not start: {why}"),
        }
    }
}

/// The loader's report of a failed start (`stage` as assets/worker.js names it), for people:
/// what failed, then what they can do.
pub fn start_failure(stage: &str, detail: &str) -> Death {
    let detail = if detail.trim().is_empty() {
        String::new()
    } else {
        format!(" ({})", detail.trim())
    };
    const BROWSERS: &str =
        "Safari 16.4 or later, Firefox 89 or later, or Chrome or Edge 91 or later";
    Death::NotStarted(match stage {
        "simd" => format!(
            "this browser has no WebAssembly SIMD, which the trainer needs{detail}. Open the page in {BROWSERS}."
        ),
        "compile" => format!(
            "this browser could not compile the trainer's WebAssembly{detail}. Update the browser to {BROWSERS}, then reload."
        ),
        "instantiate" => format!(
            "the trainer's WebAssembly would not start{detail}. Reload the page; if this stays, update the browser."
        ),
        "run" => format!(
            "it failed as it started{detail}. Reload the page; if this stays, update the browser."
        ),
        "blocked" => format!(
            "the browser refused to start a web worker{detail}. Private browsing, a content blocker or a site policy can forbid them: allow workers for this page, then press Restart."
        ),
        "script" => format!(
            "its script could not be loaded{detail}. Check the network connection, then press Restart."
        ),
        _ => format!(
            "its files could not be downloaded{detail}. Check the network connection, then press Restart."
        ),
    })
}

pub struct LabClient {
    worker: Worker,
    listening: Rc<Cell<bool>>,
    queue: Rc<RefCell<Vec<Packet>>>,
}

impl LabClient {
    /// Start a worker in `role` (its name, which it reads as it starts): `on_reply` gets its
    /// messages (of the type that role says), `on_death` why it died (its `error` event:
    /// a trap, such as an abort after a panic or out of memory; the loader's report of a failed
    /// start; or no Hello in time). Its `Crashed` message, sent from its panic hook, comes
    /// through `on_reply`. A browser that refuses to create the worker gives `Err`.
    /// The floats beside a message (`worker_io::encode_with_floats`: a gradient worker's
    /// gradients) come as `on_reply`'s third argument.
    pub fn spawn<F: WorkerSays + 'static>(
        role: Role,
        on_reply: impl Fn(F, Vec<Vec<u8>>, Option<Float32Array>) + 'static,
        on_death: impl Fn(Death) + 'static,
    ) -> Result<LabClient, Death> {
        let options = WorkerOptions::new();
        options.set_name(role.name());
        let worker = Worker::new_with_options(WORKER_SCRIPT, &options)
            .map_err(|e| start_failure("blocked", &js_error_text(&e)))?;
        let listening = Rc::new(Cell::new(false));
        let queue: Rc<RefCell<Vec<Packet>>> = Rc::default();
        let on_reply = Rc::new(on_reply);
        let on_death = Rc::new(on_death);

        let (w, l, q, reply, died) = (
            worker.clone(),
            listening.clone(),
            queue.clone(),
            on_reply.clone(),
            on_death.clone(),
        );
        let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
            let data = event.data();
            if let Some(report) = field(&data, "bootFailed") {
                let text = |key| field(&report, key).and_then(|v| v.as_string());
                died(start_failure(
                    &text("stage").unwrap_or_default(),
                    &text("detail").unwrap_or_default(),
                ));
                return;
            }
            if let Some(build) = field(&data, "bootBuild").and_then(|b| b.as_string()) {
                if let Some(root) = web_sys::window()
                    .and_then(|w| w.document())
                    .and_then(|d| d.document_element())
                {
                    let _ = root.set_attribute(BUILD_ATTRIBUTE, &build);
                }
                return;
            }
            match decode::<F>(&data) {
                Ok((hello, _)) if hello.is_hello() => {
                    l.set(true);
                    for packet in q.borrow_mut().drain(..) {
                        let _ = w.post_message_with_transfer(&packet.data, &packet.transfer);
                    }
                }
                Ok((message, attachments)) => reply(message, attachments, float_attachment(&data)),
                Err(e) => reply(F::failed(e), Vec::new(), None),
            }
        });
        worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        on_message.forget();

        let (died, l) = (on_death.clone(), listening.clone());
        // A trap reaches the page as an ErrorEvent; a worker script that failed to load, as a
        // plain Event with no message.
        let on_error = Closure::<dyn FnMut(Event)>::new(move |event: Event| {
            // Handled here: the page says so, the console need not.
            event.prevent_default();
            let message = event
                .dyn_ref::<ErrorEvent>()
                .map(ErrorEvent::message)
                .unwrap_or_default();
            died(if l.get() || !message.is_empty() {
                Death::Stopped(death_message(&message))
            } else {
                start_failure("script", WORKER_SCRIPT)
            });
        });
        worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        on_error.forget();

        let l = listening.clone();
        let too_late = Closure::once_into_js(move || {
            if !l.get() {
                on_death(Death::NotStarted(format!(
                    "it did not start within {} s. Check the network connection, then press Restart.",
                    START_TIMEOUT_MS / 1000
                )));
            }
        });
        crate::tasks::after_ms(too_late, START_TIMEOUT_MS);
        Ok(LabClient {
            worker,
            listening,
            queue,
        })
    }

    pub fn send<T: Serialize>(&self, message: &T, attachments: &[&[u8]]) -> LabResult<()> {
        self.post(encode(message, attachments)?)
    }

    /// `message` with `floats` beside it (a gradient job's weights).
    pub fn send_with_floats<T: Serialize>(
        &self,
        message: &T,
        floats: &Float32Array,
    ) -> LabResult<()> {
        self.post(encode_with_floats(message, floats)?)
    }

    fn post(&self, packet: Packet) -> LabResult<()> {
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

/// `value[key]` when `value` is an object that has it.
fn field(value: &JsValue, key: &str) -> Option<JsValue> {
    if !value.is_object() {
        return None;
    }
    js_sys::Reflect::get(value, &JsValue::from_str(key))
        .ok()
        .filter(|v| !v.is_undefined() && !v.is_null())
}

/// A thrown JS value as text: an Error's message, else the value itself.
fn js_error_text(error: &JsValue) -> String {
    field(error, "message")
        .and_then(|m| m.as_string())
        .or_else(|| error.as_string())
        .unwrap_or_else(|| format!("{error:?}"))
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
