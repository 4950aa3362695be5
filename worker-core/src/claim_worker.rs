//! The claim worker: claims measured on a copy of the lead's models, so that training goes on
//! while they measure. It holds the copy and a `ClaimRunner`, which does what the lead's turns
//! order (`ToClaimWorker::Order`), and nothing of a training session: no playing, no History
//! slider, no snapshots.

use crate::claims::{ClaimRunner, Models};
use crate::lab::Lab;
use crate::session::{load_b, restore_history_into};
use protocol::record::HistoryIndex;
use protocol::turns::ClaimReport;
use protocol::{LabSettings, ModelBundle, ToClaimWorker};

#[derive(Default)]
pub struct ClaimWorker {
    copy: Copied,
    runner: ClaimRunner,
}

/// The lead's models as it last sent them.
#[derive(Default)]
struct Copied {
    lab: Option<Lab>,
    lab_b: Option<Lab>,
    /// The seed the model was made with.
    seed: u64,
}

impl Copied {
    fn models(&self) -> Models<'_> {
        Models {
            lab: self.lab.as_ref(),
            lab_b: self.lab_b.as_ref(),
            seed: self.seed,
        }
    }
}

impl ClaimWorker {
    /// A message from the lead, and what the runner reports at once.
    pub fn handle(
        &mut self,
        message: ToClaimWorker,
        attachments: Vec<Vec<u8>>,
    ) -> Vec<ClaimReport> {
        match message {
            ToClaimWorker::Copy {
                bundle,
                compare,
                corpus,
                settings,
                history,
                history_steps,
            } => {
                let history = history.map(|index| (index, history_steps));
                self.copy =
                    Copied::taken((bundle, compare), &corpus, settings, history, attachments);
                Vec::new()
            }
            ToClaimWorker::Order(order) => self.runner.obey(order, &self.copy.models()),
            // The glue dies as asked before the message comes here.
            ToClaimWorker::Crash => Vec::new(),
        }
    }

    /// A claim is measured: the worker calls `unit` until it ends.
    pub fn measuring(&self) -> bool {
        self.runner.measuring()
    }

    /// The claim's next unit: its progress, or its result after the last.
    pub fn unit(&mut self, now_ms: &dyn Fn() -> f64) -> Option<ClaimReport> {
        self.runner.unit(&self.copy.models(), now_ms)
    }
}

impl Copied {
    /// `Session::copy_for_claims` taken in: the models loaded as a kept model is, then their
    /// History. A copy that does not load leaves no model, so the next claim says so, rather
    /// than measure the last copy again.
    fn taken(
        (bundle, mut compare): (Option<ModelBundle>, Option<ModelBundle>),
        corpus: &str,
        settings: LabSettings,
        history: Option<(HistoryIndex, Vec<u64>)>,
        mut attachments: Vec<Vec<u8>>,
    ) -> Copied {
        let steps = history.as_ref().map_or(0, |(_, steps)| steps.len());
        let entries: Vec<Vec<u8>> = attachments.drain(..steps.min(attachments.len())).collect();
        let loaded = bundle.and_then(|mut bundle| {
            ModelBundle::attach_both(&mut bundle, compare.as_mut(), attachments);
            Lab::load(bundle, corpus, &settings).ok()
        });
        let Some((mut lab, _)) = loaded else {
            return Copied {
                seed: settings.seed,
                ..Copied::default()
            };
        };
        let (mut lab_b, _) = load_b(&lab, compare, corpus, &settings);
        if let Some((index, steps)) = history {
            let entries = steps.into_iter().zip(entries).collect();
            restore_history_into(&mut lab, lab_b.as_mut(), &index, entries);
        }
        Copied {
            lab: Some(lab),
            lab_b,
            seed: settings.seed,
        }
    }
}
