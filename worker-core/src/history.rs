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
        self.thin();
        true
    }

    /// Entries kept before this run's first one (the History of a model kept in the browser,
    /// read back after a reload) go in front, at the spacing they had reached.
    pub fn prepend(&mut self, interval: u64, older: Vec<(u64, BertForPreTraining)>) {
        let first = self.entries.first().map_or(u64::MAX, |(s, _)| *s);
        let mut older: Vec<_> = older.into_iter().filter(|(s, _)| *s < first).collect();
        older.sort_by_key(|(s, _)| *s);
        older.dedup_by_key(|(s, _)| *s);
        older.append(&mut self.entries);
        self.entries = older;
        self.interval = self.interval.max(interval);
        self.thin();
    }

    /// Over budget: every other entry goes, and new ones come half as often.
    fn thin(&mut self) {
        while self.bytes() > self.budget_bytes && self.entries.len() > 2 {
            let mut i = 0;
            self.entries.retain(|_| {
                i += 1;
                i % 2 == 1
            });
            self.interval *= 2;
        }
    }

    pub fn interval(&self) -> u64 {
        self.interval
    }

    pub fn entries(&self) -> &[(u64, BertForPreTraining)] {
        &self.entries
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

    /// A History that keeps what its leader keeps (Compare's model B follows model A): it
    /// never thins by a budget of its own, only by `follow` and `keep_only`.
    pub fn follower() -> Self {
        WeightHistory::new(usize::MAX)
    }

    /// Compare's model B keeps its weights at the steps model A keeps (`leader`), so one
    /// History slider serves both: `model` is kept if A kept `step`, and entries A has thinned
    /// away go.
    pub fn follow(&mut self, leader: &WeightHistory, step: u64, model: &BertForPreTraining) {
        let kept_by_leader = leader.entries.last().is_some_and(|(s, _)| *s == step);
        if kept_by_leader && self.entries.last().is_none_or(|(s, _)| *s != step) {
            self.entries.push((step, model.clone()));
        }
        self.keep_only(leader);
    }

    /// Forget the entries at steps `leader` does not keep.
    pub fn keep_only(&mut self, leader: &WeightHistory) {
        let kept = |step: u64| {
            leader
                .entries
                .binary_search_by_key(&step, |(s, _)| *s)
                .is_ok()
        };
        self.entries.retain(|(s, _)| kept(*s));
    }

    /// The entry kept at `step`, if any.
    pub fn position(&self, step: u64) -> Option<usize> {
        self.entries.iter().position(|(s, _)| *s == step)
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

    #[test]
    fn history_stays_within_budget_by_thinning() {
        let model =
            BertForPreTraining::init(&BertConfig::tiny(100), &mut engine::Rng::new(0)).unwrap();
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

    #[test]
    fn a_follower_keeps_the_steps_its_leader_keeps() {
        let model =
            BertForPreTraining::init(&BertConfig::tiny(100), &mut engine::Rng::new(0)).unwrap();
        let mut leader = WeightHistory::new(model.num_params() * 4 * 3);
        let mut follower = WeightHistory::follower();
        leader.record_first(0, &model);
        follower.record_first(0, &model);
        for step in 1..=40 {
            leader.record(step, &model);
            follower.follow(&leader, step, &model);
            assert_eq!(follower.steps(), leader.steps(), "step {step}");
        }
        assert!(
            leader.steps().len() <= 3,
            "the leader thinned: {:?}",
            leader.steps()
        );
        assert_eq!(follower.position(leader.steps()[1]), Some(1));
        assert_eq!(follower.position(1), None);
    }

    #[test]
    fn a_kept_history_goes_in_front_and_stays_within_budget() {
        let model =
            BertForPreTraining::init(&BertConfig::tiny(100), &mut engine::Rng::new(0)).unwrap();
        let per_entry = model.num_params() * 4;
        let mut h = WeightHistory::new(per_entry * 6);
        h.record_first(100, &model);
        h.record(110, &model);
        // Kept before the reload: 0, 20, …, 100 (100 is this run's start, kept once).
        let older = (0..=5).map(|i| (i * 20, model.clone())).rev().collect();
        h.prepend(20, older);
        assert_eq!(h.interval(), 40, "over budget: thinned, spacing doubled");
        let steps = h.steps();
        assert!(steps.len() <= 6 && steps[0] == 0, "{steps:?}");
        assert!(steps.windows(2).all(|w| w[0] < w[1]), "{steps:?}");
        let mut roomy = WeightHistory::new(per_entry * 100);
        roomy.record_first(100, &model);
        roomy.prepend(
            20,
            vec![
                (40, model.clone()),
                (0, model.clone()),
                (100, model.clone()),
            ],
        );
        assert_eq!(roomy.steps(), [0, 40, 100]);
        assert_eq!(roomy.interval(), 20);
    }
}
