//! The forward and backward passes through both stacks, and the step every model takes
//! (`step::Trainable`).

use super::batch::Seq2SeqBatch;
use super::model::EncoderDecoder;
use crate::backward::{backward_from_hidden, backward_with_encoder, BackwardScratch};
use crate::batch::MaskMode;
use crate::error::{EngineError, Result};
use crate::forward::Losses;
use crate::forward::{
    forward_share, whole_batch_noise, EncoderStates, ForwardOptions, ForwardOutput, ForwardShare,
};
use crate::ops::dropout::Noise;
use crate::rng::Rng;
use crate::step::{diverged_loss, LossCounts, Share, StepBuffers, Trainable};

pub struct Seq2SeqOutput {
    pub encoder: ForwardOutput,
    /// Its `mlm_logits` are the decoder's (Tt rows per example), `losses.total` the loss.
    pub decoder: ForwardOutput,
}

/// What an encoder–decoder's step keeps for the next: each stack's activations and scratch.
#[derive(Default)]
pub struct Seq2SeqBuffers {
    encoder: StepBuffers,
    decoder: StepBuffers,
}

/// An encoder–decoder trains through the one-BERT step (`step::train_step`): the source
/// through the encoder, the target through the decoder reading it, backward in reverse.
impl Trainable for EncoderDecoder {
    type Batch = Seq2SeqBatch;
    type Buffers = Seq2SeqBuffers;

    fn check_trainable(&self) -> Result<()> {
        self.check()
    }

    fn loss_counts(batch: &Seq2SeqBatch) -> LossCounts {
        LossCounts::of(&batch.target)
    }

    fn batch_rows(batch: &Seq2SeqBatch, rows: std::ops::Range<usize>) -> Seq2SeqBatch {
        batch.rows(rows)
    }

    fn batch_size(batch: &Seq2SeqBatch) -> usize {
        batch.target.batch_size()
    }

    fn train_forward(
        &self,
        batch: &Seq2SeqBatch,
        opts: &ForwardOptions,
        share: &Share,
        buffers: &mut Seq2SeqBuffers,
    ) -> Result<Losses> {
        let spares = [&mut buffers.encoder, &mut buffers.decoder].map(|b| b.forward.take());
        let mut noise = share.noise(batch.target.batch_size());
        let out = forward_reusing_both(self, batch, opts, (&mut noise, share.counts), spares)?;
        let losses = out.decoder.losses;
        buffers.encoder.forward = Some(out.encoder);
        buffers.decoder.forward = Some(out.decoder);
        losses.ok_or_else(|| {
            EngineError::Training("the batch has no labels: nothing to learn from".into())
        })
    }

    fn train_backward(
        &self,
        batch: &Seq2SeqBatch,
        grads: &mut Self,
        buffers: &mut Seq2SeqBuffers,
    ) -> Result<()> {
        let encoder = buffers.encoder.for_backward()?;
        let decoder = buffers.decoder.for_backward()?;
        backward_reusing_both(self, batch, [encoder, decoder], grads)
    }

    fn diverged_loss(&self) -> f32 {
        diverged_loss(self.decoder.config.vocab_size)
    }
}

/// The source through the encoder, then the target through the decoder reading it.
pub fn forward_seq2seq(
    model: &EncoderDecoder,
    batch: &Seq2SeqBatch,
    opts: &ForwardOptions,
    rng: &mut Rng,
) -> Result<Seq2SeqOutput> {
    model.check()?;
    let mut noise = whole_batch_noise(rng, opts, batch.target.batch_size());
    let counts = LossCounts::of(&batch.target);
    forward_reusing_both(model, batch, opts, (&mut noise, counts), [None, None])
}

/// `forward_seq2seq`, each stack writing into its spare [encoder, decoder] output; one noise
/// for both stacks (the encoder's dropout calls, then the decoder's), the decoder's loss
/// divided by `counts`.
fn forward_reusing_both(
    model: &EncoderDecoder,
    batch: &Seq2SeqBatch,
    opts: &ForwardOptions,
    (noise, counts): (&mut Noise, LossCounts),
    [encoder_spare, decoder_spare]: [Option<ForwardOutput>; 2],
) -> Result<Seq2SeqOutput> {
    let encoder_opts = ForwardOptions {
        mask: MaskMode::Padding,
        ..*opts
    };
    let (source, target) = (&batch.source, &batch.target);
    // The encoder has no heads: no loss to divide.
    let encoder_share = ForwardShare {
        noise: &mut *noise,
        counts: LossCounts::default(),
    };
    let encoder = forward_share(
        &model.encoder,
        source,
        &encoder_opts,
        None,
        encoder_share,
        encoder_spare,
    )?;
    let states = EncoderStates {
        hidden: &encoder.hidden,
        mask: source.attention_mask.view(),
    };
    let decoder = forward_share(
        &model.decoder,
        target,
        opts,
        Some(&states),
        ForwardShare { noise, counts },
        decoder_spare,
    )?;
    Ok(Seq2SeqOutput { encoder, decoder })
}

/// d(loss)/dθ of both halves into `grads` (zero it first): the decoder's backward, then the
/// encoder's from what the cross-attention sent back.
pub fn backward_seq2seq(
    model: &EncoderDecoder,
    batch: &Seq2SeqBatch,
    out: &Seq2SeqOutput,
    grads: &mut EncoderDecoder,
) -> Result<()> {
    let (mut encoder_scratch, mut decoder_scratch) = Default::default();
    let outputs = [
        (&out.encoder, &mut encoder_scratch),
        (&out.decoder, &mut decoder_scratch),
    ];
    backward_reusing_both(model, batch, outputs, grads)
}

/// `backward_seq2seq` from each stack's [encoder, decoder] forward output, with its scratch.
fn backward_reusing_both(
    model: &EncoderDecoder,
    batch: &Seq2SeqBatch,
    [(encoder, encoder_scratch), (decoder, decoder_scratch)]: [(&ForwardOutput, &mut BackwardScratch);
        2],
    grads: &mut EncoderDecoder,
) -> Result<()> {
    let states = EncoderStates {
        hidden: &encoder.hidden,
        mask: batch.source.attention_mask.view(),
    };
    let d_encoder = backward_with_encoder(
        &model.decoder,
        &batch.target,
        decoder,
        &mut grads.decoder,
        Some(&states),
        decoder_scratch,
    )?
    .expect("a decoder with cross-attention returns the encoder's gradient");
    backward_from_hidden(
        &model.encoder,
        &batch.source,
        encoder,
        &mut grads.encoder,
        d_encoder,
        None,
        encoder_scratch,
    )?;
    Ok(())
}
