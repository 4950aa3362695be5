//! A worker the lead starts itself (a gradient worker, the claim worker): the same program in
//! another `Role`, started through `worker_client` as the page starts the lead. Once ended, its
//! late words are ignored.

use crate::worker_client::{Death, LabClient};
use js_sys::Float32Array;
use protocol::{LabError, LabResult, Role, WorkerSays};
use serde::Serialize;
use std::cell::Cell;
use std::rc::Rc;

pub struct Child {
    client: LabClient,
    /// False once ended.
    alive: Rc<Cell<bool>>,
}

impl Child {
    /// Start one in `role`. `heard` gets what it says (with its floats, if any); `death` gets
    /// why it died, in words: its panic's message, or the trap or failed start the browser
    /// reported.
    pub fn spawn<F: WorkerSays + 'static>(
        role: Role,
        heard: impl Fn(F, Vec<Vec<u8>>, Option<Float32Array>) + 'static,
        death: Rc<dyn Fn(String)>,
    ) -> LabResult<Child> {
        let alive = Rc::new(Cell::new(true));
        let (still, current) = (alive.clone(), alive.clone());
        let died = death.clone();
        let client = LabClient::spawn(
            role,
            move |message: F, attachments, floats| {
                if !still.get() {
                    return;
                }
                match message.crash_message() {
                    Some(why) => died(why.to_string()),
                    None => heard(message, attachments, floats),
                }
            },
            move |why: Death| {
                if current.get() {
                    let (Death::Stopped(why) | Death::NotStarted(why)) = why;
                    death(why);
                }
            },
        )
        .map_err(|why| LabError::browser(why.to_string()))?;
        Ok(Child { client, alive })
    }

    pub fn send<T: Serialize>(&self, message: &T, attachments: &[&[u8]]) -> LabResult<()> {
        self.client.send(message, attachments)
    }

    pub fn send_with_floats<T: Serialize>(
        &self,
        message: &T,
        floats: &Float32Array,
    ) -> LabResult<()> {
        self.client.send_with_floats(message, floats)
    }

    pub fn end(self) {
        self.alive.set(false);
        self.client.terminate();
    }
}
