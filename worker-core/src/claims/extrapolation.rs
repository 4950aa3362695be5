//! Length extrapolation: masked passes through copies of Compare's two models, whose positions
//! differ, over sequences of 2T packed from the corpus; one pass of one model per call.

use super::{Experiment, Models, Started};
use engine::config::PositionEmbeddingType;
use engine::data::Corpus;
use engine::experiments::{mlm_hits_by_position, packed_sequences, Tally};
use engine::model::BertForPreTraining;
use protocol::claims::{ByPosition, Extrapolation};
use protocol::{ClaimResult, LabError, LabResult};

/// Sequences of 2T packed from the corpus; masked passes through Compare's two models, whose
/// positions differ (absolute, rotary, ALiBi). Copies of the models: training goes on
/// meanwhile, and no claim touches them.
struct Extrapolating {
    corpus: Corpus,
    sequences: Vec<Vec<u32>>,
    trained_len: usize,
    steps: u64,
    seed: u64,
    /// (model, its learned positions if absolute, its tally by sequence and position): A's, B's.
    models: [(BertForPreTraining, Option<usize>, Vec<Vec<Tally>>); 2],
    /// (model, pass) still to run, popped from the end.
    todo: Vec<(usize, usize)>,
    total: usize,
}

/// Most sequences the extrapolation claim measures, and masked passes over each (a pass masks
/// one position in `STRIDE`, about what training masks).
const EXTRAPOLATION_SEQUENCES: usize = 64;
const STRIDE: usize = 7;

pub fn start(models: &Models) -> LabResult<Started> {
    Ok(Started::Running(Box::new(extrapolating(models)?)))
}

/// The extrapolation claim's set-up: Compare with two models of different positions (any two
/// of absolute, rotary, ALiBi), trained side by side at length T; sequences of 2T from their
/// corpus.
fn extrapolating(models: &Models) -> LabResult<Extrapolating> {
    let how = "turn on Compare with the two models' Positions different (Absolute, Rotary or ALiBi), Reset, train them, then Run";
    let (Some(a), Some(b)) = (models.lab, models.lab_b) else {
        return Err(LabError::unavailable(format!(
            "this experiment needs two models trained side by side: {how}"
        )));
    };
    let (Some(ta), Some(tb)) = (a.trainer(), b.trainer()) else {
        return Err(LabError::unavailable(format!(
            "both models must train: {how}"
        )));
    };
    let positions = |t: &engine::train::Trainer| t.model.config.position_embedding_type;
    if positions(ta) == positions(tb) {
        return Err(LabError::unavailable(format!(
            "both models have the same positions: {how}"
        )));
    }
    if ta.stepper.step == 0 {
        return Err(LabError::unavailable(
            "the models have not trained yet: press Play, let them learn, then Run",
        ));
    }
    // Training examples are sentence pairs, padded to T: the positions trained are those the
    // longest pair can fill.
    let trained_len = ta.corpus.longest_example(ta.batch_config.max_len);
    // One sequence per starting sentence at most: two from the same start would be the same.
    let count = EXTRAPOLATION_SEQUENCES.min(ta.corpus.len());
    let sequences = packed_sequences(&ta.corpus, 2 * trained_len, count)?;
    // An absolute model reads only its learned positions.
    let model = |t: &engine::train::Trainer| {
        let p = (positions(t) == PositionEmbeddingType::Absolute)
            .then_some(t.model.config.max_position_embeddings);
        let len = p.map_or(2 * trained_len, |p| p.min(2 * trained_len));
        (t.model.clone(), p, vec![vec![(0, 0); len]; sequences.len()])
    };
    let todo: Vec<(usize, usize)> = (0..2)
        .flat_map(|m| (0..STRIDE).map(move |pass| (m, pass)))
        .rev()
        .collect();
    Ok(Extrapolating {
        corpus: ta.corpus.clone(),
        trained_len,
        steps: ta.stepper.step,
        seed: models.seed,
        models: [model(ta), model(tb)],
        total: todo.len(),
        todo,
        sequences,
    })
}

impl Experiment for Extrapolating {
    fn progress(&self) -> (usize, usize) {
        (self.total - self.todo.len(), self.total)
    }

    fn step(&mut self, _: &Models, _: &dyn Fn() -> f64) -> LabResult<Option<ClaimResult>> {
        if let Some((m, pass)) = self.todo.pop() {
            let (model, _, tally) = &mut self.models[m];
            // An absolute model reads only its learned positions.
            let len = tally.first().map_or(0, Vec::len);
            let cut: Vec<Vec<u32>> = self.sequences.iter().map(|s| s[..len].to_vec()).collect();
            mlm_hits_by_position(model, &self.corpus, &cut, STRIDE, pass, tally)?;
        }
        if !self.todo.is_empty() {
            return Ok(None);
        }
        let [a, b] = self.models.each_ref().map(|(model, p, tally)| ByPosition {
            kind: model.config.position_embedding_type,
            tally,
            max_positions: *p,
        });
        Ok(Some(Extrapolation::result(
            self.trained_len,
            self.steps,
            self.seed,
            a,
            b,
        )))
    }

    /// It measures copies of the old models: it stops.
    fn goes_on_with_new_models(&mut self) -> bool {
        false
    }
}
