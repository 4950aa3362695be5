//! Page side of the training worker: spawn it, queue messages until it says Hello, hand every
//! reply to one callback.

use crate::protocol::{FromWorker, ToWorker};
use crate::worker_io::{decode, encode, Packet};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{ErrorEvent, MessageEvent, Worker};

/// Trunk's loader shim for the worker bin (`data-loader-shim` in index.html).
const WORKER_SCRIPT: &str = "attention-lab-worker_loader.js";

pub struct LabClient {
    worker: Worker,
    listening: Rc<Cell<bool>>,
    queue: Rc<RefCell<Vec<Packet>>>,
}

impl LabClient {
    pub fn spawn(
        on_reply: impl Fn(FromWorker, Vec<Vec<u8>>) + 'static,
    ) -> Result<LabClient, String> {
        let worker = Worker::new(WORKER_SCRIPT)
            .map_err(|e| format!("could not start the training worker: {e:?}"))?;
        let listening = Rc::new(Cell::new(false));
        let queue: Rc<RefCell<Vec<Packet>>> = Rc::default();
        let on_reply = Rc::new(on_reply);

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
                Err(message) => reply(FromWorker::Failed { message }, Vec::new()),
            }
        });
        worker.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        on_message.forget();

        let on_error = Closure::<dyn FnMut(ErrorEvent)>::new(move |event: ErrorEvent| {
            let message = format!("the training worker failed: {}", event.message());
            on_reply(FromWorker::Failed { message }, Vec::new());
        });
        worker.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        on_error.forget();
        Ok(LabClient {
            worker,
            listening,
            queue,
        })
    }

    pub fn send(&self, message: &ToWorker, attachments: &[&[u8]]) -> Result<(), String> {
        let packet = encode(message, attachments)?;
        if self.listening.get() {
            self.worker
                .post_message_with_transfer(&packet.data, &packet.transfer)
                .map_err(|e| format!("could not reach the training worker: {e:?}"))
        } else {
            self.queue.borrow_mut().push(packet);
            Ok(())
        }
    }
}
