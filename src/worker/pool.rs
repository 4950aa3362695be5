//! The training worker's gradient workers (data parallel). The training worker (the lead)
//! starts them as the page starts it (`worker_client`, the same program: a worker that is
//! sent gradient jobs is a gradient worker). Each holds a copy of the model, built once per
//! model (`ToWorker::Replica`); every job brings the weights as they are, so a gradient worker
//! keeps no state a rewind, a load or a restart would have to reach.

use crate::worker_client::{Death, LabClient};
use protocol::workers::{GradientJob, GradientResult, ReplicaShape};
use protocol::{Crash, FromWorker, LabError, LabResult, ToWorker};
use std::cell::Cell;
use std::rc::Rc;

/// A gradient worker's answer: the share's losses (or why not) and its gradients.
pub type Answer = (GradientResult, Vec<f32>);

/// Where the pool reports: each answer by the index of the worker that sent it, and a gradient
/// worker's death in words.
#[derive(Clone)]
pub struct Listeners {
    pub answer: Rc<dyn Fn(usize, Answer)>,
    pub death: Rc<dyn Fn(String)>,
}

struct Helper {
    client: LabClient,
    /// The replica it holds (the lead's id), once told.
    replica: Option<u64>,
    /// False once it is ended: its late words (a start timeout) are ignored.
    alive: Rc<Cell<bool>>,
}

impl Helper {
    fn end(self) {
        self.alive.set(false);
        self.client.terminate();
    }
}

#[derive(Default)]
pub struct Pool {
    helpers: Vec<Helper>,
}

impl Pool {
    /// Exactly `count` gradient workers: new ones started, surplus ones ended. An error when
    /// the browser refuses to start one (the pool keeps those it has).
    pub fn resize(&mut self, count: usize, listeners: &Listeners) -> LabResult<()> {
        while self.helpers.len() > count {
            if let Some(helper) = self.helpers.pop() {
                helper.end();
            }
        }
        while self.helpers.len() < count {
            let index = self.helpers.len();
            let alive = Rc::new(Cell::new(true));
            let (answer, death) = (listeners.answer.clone(), listeners.death.clone());
            let (still, current) = (alive.clone(), alive.clone());
            let died = death.clone();
            let client = LabClient::spawn(
                move |message, _, floats| {
                    if !still.get() {
                        return;
                    }
                    match message {
                        FromWorker::Gradients(result) => answer(index, (result, floats)),
                        FromWorker::Crashed { message } => died(message),
                        // A gradient worker says nothing else unless asked.
                        _ => {}
                    }
                },
                move |why: Death| {
                    if current.get() {
                        death(why.to_string());
                    }
                },
            )
            .map_err(|why| LabError::browser(why.to_string()))?;
            self.helpers.push(Helper {
                client,
                replica: None,
                alive,
            });
        }
        Ok(())
    }

    /// End every gradient worker (another model, or fewer workers wanted).
    pub fn clear(&mut self) {
        self.helpers.drain(..).for_each(Helper::end);
    }

    /// Send `job` to gradient worker `index` with the weights, after the model's shape when it
    /// holds another model.
    pub fn send(
        &mut self,
        index: usize,
        shape: impl FnOnce() -> Option<ReplicaShape>,
        job: GradientJob,
        weights: &[f32],
    ) -> LabResult<()> {
        let helper = self
            .helpers
            .get_mut(index)
            .ok_or_else(|| LabError::unavailable(format!("no gradient worker {index}")))?;
        if helper.replica != Some(job.replica) {
            let shape = shape()
                .ok_or_else(|| LabError::unavailable("this model cannot be trained in shares"))?;
            helper.client.send(
                &ToWorker::Replica {
                    id: job.replica,
                    shape,
                },
                &[],
            )?;
            helper.replica = Some(job.replica);
        }
        helper
            .client
            .send_with_floats(&ToWorker::Gradients(job), weights)
    }

    /// Test only: make the first gradient worker panic.
    pub fn crash_one(&self) -> LabResult<()> {
        let helper = self
            .helpers
            .first()
            .ok_or_else(|| LabError::unavailable("no gradient worker runs: set Workers to 2"))?;
        helper.client.send(&ToWorker::Crash(Crash::Panic), &[])
    }
}
