//! The lead's gradient workers (data parallel), as the browser holds them: each a `Child` in
//! the `Gradients` role, and the buffers their answers came in, reused for the next jobs'
//! weights. Which model each holds is the lead's to know (`worker_core::lead`).

use super::child::Child;
use crate::worker_io::params_into_floats;
use js_sys::Float32Array;
use protocol::{FromGradientWorker, LabError, LabResult, Role, ToGradientWorker};
use std::cell::RefCell;
use std::rc::Rc;
use worker_core::replica::Param;

/// Spare buffers kept: one per job in flight, which is one per gradient worker (Workers is at
/// most 4, so 3).
const MAX_SPARES: usize = 3;

/// Where the pool reports: each answer (its result and gradients) by the index of the worker
/// that sent it, and a gradient worker's death in words.
#[derive(Clone)]
pub struct Listeners {
    pub answer: Rc<dyn Fn(usize, protocol::workers::GradientResult, Vec<f32>)>,
    pub death: Rc<dyn Fn(String)>,
}

#[derive(Default)]
pub struct Pool {
    children: Vec<Child>,
    /// The buffers answers came in, once read: the next jobs' weights go out in them.
    spares: Rc<RefCell<Vec<Float32Array>>>,
}

impl Pool {
    /// Exactly `count` gradient workers: new ones started, surplus ones ended. An error when
    /// the browser refuses to start one (the pool keeps those it has).
    pub fn resize(&mut self, count: usize, listeners: &Listeners) -> LabResult<()> {
        while self.children.len() > count {
            if let Some(child) = self.children.pop() {
                child.end();
            }
        }
        if count == 0 {
            self.spares.borrow_mut().clear();
        }
        while self.children.len() < count {
            let index = self.children.len();
            let answer = listeners.answer.clone();
            let spares = self.spares.clone();
            let child = Child::spawn(
                Role::Gradients,
                move |message: FromGradientWorker, _, floats| {
                    // A gradient worker says nothing else unless asked.
                    if let FromGradientWorker::Gradients(result) = message {
                        let grads = floats.as_ref().map(Float32Array::to_vec);
                        if let Some(buffer) = floats.filter(|f| f.length() > 0) {
                            let mut spares = spares.borrow_mut();
                            if spares.len() < MAX_SPARES {
                                spares.push(buffer);
                            }
                        }
                        answer(index, result, grads.unwrap_or_default())
                    }
                },
                listeners.death.clone(),
            )?;
            self.children.push(child);
        }
        Ok(())
    }

    /// `message` to gradient worker `index`, with the weights beside it (written into a spare
    /// buffer when one fits).
    pub fn send(
        &self,
        index: usize,
        message: &ToGradientWorker,
        weights: Option<&[Param<'_>]>,
    ) -> LabResult<()> {
        let child = self
            .children
            .get(index)
            .ok_or_else(|| LabError::unavailable(format!("no gradient worker {index}")))?;
        match weights {
            Some(params) => {
                // A transferred buffer is gone from here: each job gets one of its own.
                let spare = self.spares.borrow_mut().pop();
                child.send_with_floats(message, &params_into_floats(params, spare))
            }
            None => child.send(message, &[]),
        }
    }
}
