//! A gradient worker's side of data-parallel training: a copy of the lead's model (built once
//! from its shape, its weights replaced by those each job brings), which computes one share
//! of a step's batch (`engine::step::share_gradients`) and answers with its gradients. It
//! keeps no optimiser and no generator: the lead owns the run.

use crate::worker_io::{floats_into_params, params_into_floats};
use engine::batch::Batch;
use engine::forward::Losses;
use engine::model::BertForPreTraining;
use engine::seq2seq::{EncoderDecoder, Seq2SeqBatch};
use engine::step::{share_gradients, Trainable};
use js_sys::Float32Array;
use protocol::workers::{GradientJob, ReplicaShape, ShareBatch};
use protocol::{LabError, LabResult};

/// One model's copy, its gradient buffer and the activations its last share left.
struct ModelCopy<M: Trainable> {
    model: M,
    grads: M,
    buffers: M::Buffers,
}

impl<M: Trainable> ModelCopy<M> {
    fn new(model: M) -> Self {
        ModelCopy {
            grads: model.zeros(),
            model,
            buffers: M::Buffers::default(),
        }
    }

    fn gradients(
        &mut self,
        weights: &Float32Array,
        batch: &M::Batch,
        job: &GradientJob,
    ) -> LabResult<(Losses, Float32Array)> {
        floats_into_params(weights, self.model.params_mut())?;
        let losses = share_gradients(
            &self.model,
            &mut self.grads,
            batch,
            &job.opts,
            &job.share,
            &mut self.buffers,
        )?;
        // Back in the buffer the weights came in: it goes back to the lead, for the next job.
        let grads = params_into_floats(&self.grads.params(), Some(weights.clone()));
        Ok((losses, grads))
    }
}

// One lives per gradient worker: Box only the larger one.
enum Model {
    Bert(Box<ModelCopy<BertForPreTraining>>),
    EncoderDecoder(Box<ModelCopy<EncoderDecoder>>),
}

/// The model a gradient worker holds, under the lead's id for it.
#[derive(Default)]
pub struct Replica {
    /// The model under its id, or why it could not be built.
    held: Option<(u64, LabResult<Model>)>,
}

impl Replica {
    /// Build the copy the lead calls `id` (zeros until a job brings its weights).
    pub fn build(&mut self, id: u64, shape: ReplicaShape) {
        self.held = Some((id, Self::model(shape)));
    }

    fn model(shape: ReplicaShape) -> LabResult<Model> {
        Ok(match shape {
            ReplicaShape::Bert(stack) => Model::Bert(Box::new(ModelCopy::new(
                BertForPreTraining::zeroed(&stack.config()?, stack.parts)?,
            ))),
            ReplicaShape::EncoderDecoder { encoder, decoder } => {
                let model = EncoderDecoder::zeroed(
                    (&encoder.config()?, encoder.parts),
                    (&decoder.config()?, decoder.parts),
                )?;
                Model::EncoderDecoder(Box::new(ModelCopy::new(model)))
            }
        })
    }

    /// The job's share: its losses and gradients (f32 in parameter order).
    pub fn gradients(
        &mut self,
        job: GradientJob,
        weights: &Float32Array,
    ) -> LabResult<(Losses, Float32Array)> {
        let Some((id, model)) = self.held.as_mut() else {
            return Err(LabError::unavailable(
                "a gradient job came before its model",
            ));
        };
        let model = model.as_mut().map_err(|e| e.clone())?;
        if *id != job.replica {
            return Err(LabError::unavailable(format!(
                "a gradient job for model {} came to model {id}",
                job.replica
            )));
        }
        match (model, job.batch.clone()) {
            (Model::Bert(copy), ShareBatch::Bert(batch)) => {
                let batch = Batch::try_from(batch)?;
                copy.gradients(weights, &batch, &job)
            }
            (Model::EncoderDecoder(copy), ShareBatch::EncoderDecoder { source, target }) => {
                let batch = Seq2SeqBatch {
                    source: Batch::try_from(source)?,
                    target: Batch::try_from(target)?,
                };
                copy.gradients(weights, &batch, &job)
            }
            _ => Err(LabError::Malformed(
                "a gradient job's batch is another kind of model's".into(),
            )),
        }
    }
}
