//! The web worker: glue around `worker_core`. Browser events in, calls to the core,
//! `postMessage` out. The same program runs in three roles, chosen once as it starts from the
//! worker's name (`protocol::Role`): the lead the page talks to (`lead`), a gradient worker
//! (`gradients`) and the claim worker (`claims`).

mod child;
mod claims;
mod gradients;
mod lead;
mod pool;

use crate::worker_io::{decode, encode, Packet};
use protocol::{
    Crash, FromClaimWorker, FromGradientWorker, FromWorker, LabResult, Role, WorkerSays,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{DedicatedWorkerGlobalScope, MessageEvent};

fn scope() -> DedicatedWorkerGlobalScope {
    js_sys::global().unchecked_into()
}

fn now() -> f64 {
    scope()
        .performance()
        .map_or_else(js_sys::Date::now, |p| p.now())
}

/// A packet to whoever started this worker.
fn post_packet(packet: LabResult<Packet>) {
    match packet {
        Ok(packet) => {
            let _ = scope().post_message_with_transfer(&packet.data, &packet.transfer);
        }
        Err(e) => web_sys::console::error_1(&e.to_string().into()),
    }
}

/// A message with its attachments to whoever started this worker.
fn post<T: Serialize>(message: &T, attachments: &[Vec<u8>]) {
    let attachments: Vec<&[u8]> = attachments.iter().map(Vec::as_slice).collect();
    post_packet(encode(message, &attachments));
}

pub fn start() {
    match Role::of_name(&scope().name()) {
        Role::Lead => begin::<FromWorker, _>(lead::start()),
        Role::Gradients => begin::<FromGradientWorker, _>(gradients::start()),
        Role::Claims => begin::<FromClaimWorker, _>(claims::start()),
    }
}

/// Listen as a worker whose role says `F`: each packet goes to `on_packet`, deaths are reported
/// in `F`, and the starter hears Hello (what it sent before the wasm loaded was dropped).
fn begin<F: WorkerSays, H: FnMut(JsValue) + 'static>(on_packet: H) {
    report_deaths::<F>();
    let mut on_packet = on_packet;
    let on_message =
        Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| on_packet(event.data()));
    scope().set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    on_message.forget();
    post(&F::hello(), &[]);
}

/// A packet's message and attachments, or the error a starter should hear.
fn read<T: DeserializeOwned>(data: &JsValue) -> LabResult<(T, Vec<Vec<u8>>)> {
    decode::<T>(data)
}

/// Tell the starter at once when this worker dies. A panic posts its message from the panic
/// hook, then traps (`panic = "abort"`); the starter also gets the trap as the Worker's `error`
/// event, which is all an abort without a panic (out of memory) leaves. A trap in a promise
/// callback would reach neither, so an unhandled rejection is reported too.
fn report_deaths<F: WorkerSays>() {
    std::panic::set_hook(Box::new(|info| {
        console_error_panic_hook::hook(info);
        let payload = info.payload();
        let what = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".into());
        let message = match info.location() {
            Some(at) => format!("{what} (at {}:{})", at.file(), at.line()),
            None => what,
        };
        post(&F::crashed(message), &[]);
    }));
    let on_rejection = Closure::<dyn FnMut(web_sys::Event)>::new(|event: web_sys::Event| {
        let reason = js_sys::Reflect::get(&event, &"reason".into()).unwrap_or_default();
        let message = match reason.dyn_ref::<js_sys::Error>() {
            Some(e) => String::from(e.message()),
            None => format!("{reason:?}"),
        };
        post(&F::crashed(message), &[]);
    });
    let _ = scope().add_event_listener_with_callback(
        "unhandledrejection",
        on_rejection.as_ref().unchecked_ref(),
    );
    on_rejection.forget();
}

/// Die as asked (a test: see `protocol::Crash`).
fn crash(how: Crash) {
    match how {
        // The lead passes these on (`worker_core::lead`); in the other roles, a panic.
        Crash::Panic | Crash::GradientWorker | Crash::ClaimWorker => {
            panic!("the trainer was asked to panic (a test)")
        }
        Crash::PanicLater => {
            wasm_bindgen_futures::spawn_local(async {
                panic!("the trainer was asked to panic in a task (a test)")
            });
        }
        Crash::OutOfMemory => {
            // 1 GB blocks, never touched, until wasm32's 4 GB address space runs out.
            let mut blocks: Vec<Vec<u8>> = Vec::new();
            loop {
                blocks.push(Vec::with_capacity(1 << 30));
                std::hint::black_box(&blocks);
            }
        }
    }
}
