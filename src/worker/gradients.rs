//! A gradient worker: the lead's model copy (`worker_core::replica`), which computes one share
//! of a step's batch per job and answers with its gradients, in the buffer its weights came in.

use super::{crash, post, post_packet, read};
use crate::worker_io::{
    encode_with_floats, float_attachment, floats_into_params, params_into_floats,
};
use js_sys::Float32Array;
use protocol::{Crash, FromGradientWorker, ToGradientWorker, WorkerSays};
use wasm_bindgen::JsValue;
use worker_core::replica::{Io, Replica};

/// What a gradient worker does with each packet from the lead.
pub fn start() -> impl FnMut(JsValue) {
    let mut replica = Replica::default();
    move |data: JsValue| match read::<ToGradientWorker>(&data) {
        Ok((ToGradientWorker::Replica { id, shape }, _)) => replica.build(id, shape),
        Ok((ToGradientWorker::Gradients(job), _)) => {
            let weights =
                float_attachment(&data).unwrap_or_else(|| Float32Array::new_with_length(0));
            // The gradients go back in the buffer the weights came in, for the lead's next job.
            let io = Io {
                weights_in: Box::new(|params| floats_into_params(&weights, params)),
                grads_out: Box::new(|grads| params_into_floats(grads, Some(weights.clone()))),
            };
            let (result, grads) = match replica.gradients(job, io) {
                Ok((losses, grads)) => (Ok(losses), grads),
                Err(e) => (Err(e), Float32Array::new_with_length(0)),
            };
            post_packet(encode_with_floats(
                &FromGradientWorker::Gradients(result),
                &grads,
            ));
        }
        Ok((ToGradientWorker::Crash, _)) => crash(Crash::GradientWorker),
        Err(e) => post(&FromGradientWorker::failed(e), &[]),
    }
}
