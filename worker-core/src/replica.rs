//! A gradient worker's side of data-parallel training: a copy of the lead's model (built once
//! from its shape, its weights replaced by those each job brings), which computes one share
//! of a step's batch (`engine::step::share_gradients`) and answers with its gradients. It
//! keeps no optimiser and no generator: the lead owns the run.

use engine::batch::Batch;
use engine::forward::Losses;
use engine::model::{zip_views, BertForPreTraining};
use engine::seq2seq::{EncoderDecoder, Seq2SeqBatch};
use engine::step::{share_gradients, Trainable};
use ndarray::{ArrayViewD, ArrayViewMutD};
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

    fn gradients<G>(
        &mut self,
        batch: &M::Batch,
        job: &GradientJob,
        io: Io<'_, G>,
    ) -> LabResult<(Losses, G)> {
        (io.weights_in)(self.model.params_mut())?;
        let losses = share_gradients(
            &self.model,
            &mut self.grads,
            batch,
            &job.opts,
            &job.share,
            &mut self.buffers,
        )?;
        Ok((losses, (io.grads_out)(&self.grads.params())))
    }
}

// One lives per gradient worker: Box only the larger one.
enum Model {
    Bert(Box<ModelCopy<BertForPreTraining>>),
    EncoderDecoder(Box<ModelCopy<EncoderDecoder>>),
}

/// How a job's weights come in and its gradients go out, in parameter order: the caller copies
/// them straight between its buffers and the model (in the browser, the `Float32Array` the
/// weights came in, which goes back with the gradients), so no copy is made here.
pub struct Io<'a, G> {
    pub weights_in: Box<dyn FnOnce(ParamsMut<'_>) -> LabResult<()> + 'a>,
    pub grads_out: GradsOut<'a, G>,
}

type GradsOut<'a, G> = Box<dyn FnOnce(&[Param<'_>]) -> G + 'a>;

/// A parameter by its name, as `Trainable::params` lists them.
pub type Param<'a> = (String, ArrayViewD<'a, f32>);
pub type ParamsMut<'a> = Vec<(String, ArrayViewMutD<'a, f32>)>;

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
    pub fn gradients<G>(&mut self, job: GradientJob, io: Io<'_, G>) -> LabResult<(Losses, G)> {
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
                copy.gradients(&batch, &job, io)
            }
            (Model::EncoderDecoder(copy), ShareBatch::EncoderDecoder { source, target }) => {
                let batch = Seq2SeqBatch {
                    source: Batch::try_from(source)?,
                    target: Batch::try_from(target)?,
                };
                copy.gradients(&batch, &job, io)
            }
            _ => Err(LabError::Malformed(
                "a gradient job's batch is another kind of model's".into(),
            )),
        }
    }
}

/// Every parameter's values in order, in one vector (a model's weights or gradients, as a job
/// or an answer carries them).
pub fn floats_of(params: &[Param<'_>]) -> Vec<f32> {
    params.iter().flat_map(|(_, p)| p.iter().copied()).collect()
}

/// `floats` (in `floats_of`'s order) into the parameters; an error, with nothing written, when
/// they are not as many.
pub fn fill_params(floats: &[f32], params: ParamsMut<'_>) -> LabResult<()> {
    zip_views(params, floats, |p, &x| *p = x).map_err(LabError::from)
}

/// `Io` over plain vectors: the weights read from `weights`, the gradients returned as a vector.
pub fn vec_io(weights: &[f32]) -> Io<'_, Vec<f32>> {
    Io {
        weights_in: Box::new(move |params| fill_params(weights, params)),
        grads_out: Box::new(|grads| floats_of(grads)),
    }
}
