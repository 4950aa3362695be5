//! The weights kept for the History slider and for rewinding.

use engine::model::BertForPreTraining;

/// Weights kept every `interval` steps for the History slider and for rewinding, within a
/// memory budget: when over it, every other entry goes and the interval doubles.
pub struct WeightHistory {
    entries: Vec<(u64, BertForPreTraining)>,
    interval: u64,
    budget_bytes: usize,
}

impl WeightHistory {
    pub fn new(budget_bytes: usize) -> Self {
        WeightHistory {
            entries: Vec::new(),
            interval: 5,
            budget_bytes,
        }
    }

    /// The starting point of a run, whatever its step.
    pub fn record_first(&mut self, step: u64, model: &BertForPreTraining) {
        self.entries.clear();
        self.entries.push((step, model.clone()));
    }

    /// Keep `model` if `step` falls on the interval (step 0 always).
    pub fn record(&mut self, step: u64, model: &BertForPreTraining) -> bool {
        if !step.is_multiple_of(self.interval)
            || self.entries.last().is_some_and(|(s, _)| *s == step)
        {
            return false;
        }
        self.entries.push((step, model.clone()));
        while self.bytes() > self.budget_bytes && self.entries.len() > 2 {
            let mut i = 0;
            self.entries.retain(|_| {
                i += 1;
                i % 2 == 1
            });
            self.interval *= 2;
        }
        true
    }

    fn bytes(&self) -> usize {
        self.entries.iter().map(|(_, m)| m.num_params() * 4).sum()
    }

    pub fn steps(&self) -> Vec<u64> {
        self.entries.iter().map(|(s, _)| *s).collect()
    }

    pub fn get(&self, at: usize) -> Option<&(u64, BertForPreTraining)> {
        self.entries.get(at)
    }

    /// Forget everything after entry `at` (the run continues from there).
    pub fn truncate_after(&mut self, at: usize) {
        self.entries.truncate(at + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::BertConfig;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn history_stays_within_budget_by_thinning() {
        let model = BertForPreTraining::init(&BertConfig::tiny(100), &mut engine::Rng::new(0));
        let per_entry = model.num_params() * 4;
        let mut h = WeightHistory::new(per_entry * 4);
        for step in 0..=100 {
            h.record(step, &model);
        }
        let steps = h.steps();
        assert!(steps.len() <= 4, "{steps:?}");
        assert_eq!(steps[0], 0);
        assert!(*steps.last().unwrap() >= 60, "{steps:?}");
    }
}
