//! The claim worker: claims measured on a copy of the lead's models, so that training goes on
//! while they measure. It holds the copy and the claim under way, and nothing of a training
//! session: no playing, no History slider, no snapshots.

use crate::claims::ClaimQueue;
use crate::lab::Lab;
use crate::session::{load_b, restore_history_into};
use protocol::record::HistoryIndex;
use protocol::{FromClaimWorker, FromWorker, LabSettings, ModelBundle, ToClaimWorker};

#[derive(Default)]
pub struct ClaimWorker {
    lab: Option<Lab>,
    lab_b: Option<Lab>,
    claims: ClaimQueue,
}

impl ClaimWorker {
    pub fn handle(
        &mut self,
        message: ToClaimWorker,
        attachments: Vec<Vec<u8>>,
    ) -> Vec<FromClaimWorker> {
        let said = match message {
            ToClaimWorker::Copy {
                bundle,
                compare,
                corpus,
                settings,
                history,
                history_steps,
            } => {
                let history = history.map(|index| (index, history_steps));
                self.take_copy((bundle, compare), &corpus, settings, history, attachments)
            }
            ToClaimWorker::Run { claim, probe } => {
                self.claims
                    .run(claim, probe, self.lab.as_ref(), self.lab_b.as_ref())
            }
            ToClaimWorker::Cancel { claim } => {
                self.claims
                    .cancel(claim, self.lab.as_ref(), self.lab_b.as_ref())
            }
            // The glue dies as asked before the message comes here.
            ToClaimWorker::Crash => Vec::new(),
        };
        said.into_iter()
            .filter_map(FromClaimWorker::of_page)
            .collect()
    }

    /// A claim is under way: the worker calls `claim_step` until it ends.
    pub fn claim_running(&self) -> bool {
        self.claims.running()
    }

    /// Measures the claim's next unit: its progress, or its result after the last.
    pub fn claim_step(&mut self, now_ms: &dyn Fn() -> f64) -> Vec<FromClaimWorker> {
        self.claims
            .step(now_ms, self.lab.as_ref(), self.lab_b.as_ref())
            .into_iter()
            .filter_map(FromClaimWorker::of_page)
            .collect()
    }

    /// `Session::copy_for_claims` taken in: the models loaded as a kept model is, then their
    /// History. A claim under way stops what measured the old models. A copy that does not
    /// load leaves no model, so the next claim says so, rather than measure the last copy again.
    fn take_copy(
        &mut self,
        (mut bundle, mut compare): (ModelBundle, Option<ModelBundle>),
        corpus: &str,
        settings: LabSettings,
        history: Option<(HistoryIndex, Vec<u64>)>,
        mut attachments: Vec<Vec<u8>>,
    ) -> Vec<FromWorker> {
        let steps = history.as_ref().map_or(0, |(_, steps)| steps.len());
        let entries: Vec<Vec<u8>> = attachments.drain(..steps.min(attachments.len())).collect();
        ModelBundle::attach_both(&mut bundle, compare.as_mut(), attachments);
        (self.lab, self.lab_b) = match Lab::load(bundle, corpus, &settings) {
            Ok((lab, _)) => {
                let (lab_b, _) = load_b(&lab, compare, corpus, &settings);
                (Some(lab), lab_b)
            }
            Err(_) => (None, None),
        };
        self.claims.seed = settings.seed;
        if let (Some(lab), Some((index, steps))) = (self.lab.as_mut(), history) {
            let entries = steps.into_iter().zip(entries).collect();
            restore_history_into(lab, self.lab_b.as_mut(), &index, entries);
        }
        self.claims
            .models_replaced(self.lab.as_ref(), self.lab_b.as_ref())
    }
}
