//! The browser's store, as the lead uses it: a Keep writes the models, then the History
//! entries not written yet; a reload reads the History back in front of the slider.

use super::{Host, Lead};
use crate::session::HistoryToKeep;
use protocol::record::HistoryIndex;
use protocol::{FromWorker, LabResult, ModelBundle};
use std::collections::BTreeSet;

/// The browser's store.
impl Lead {
    /// A Keep's first write: the current model (and Compare's model B) with their training
    /// state.
    pub fn models_to_keep(&self) -> LabResult<(ModelBundle, Option<ModelBundle>)> {
        self.session.kept_models()
    }

    /// A Keep's second write, once the models are written: the History's index and the
    /// entries not written yet (None: no model).
    pub fn history_to_keep(&self) -> Option<HistoryToKeep> {
        let (generation, steps) = &self.stored;
        let fresh = BTreeSet::new();
        let stored = match *generation == self.session.generation() {
            true => steps,
            false => &fresh,
        };
        self.session.history_to_keep(stored)
    }

    /// The Keep was written (the History's index as written, if any), or why not.
    pub fn kept(
        &mut self,
        host: &mut impl Host,
        written: LabResult<(u64, Option<(u64, HistoryIndex)>)>,
    ) {
        let reply = match written {
            Ok((step, history)) => {
                if let Some((generation, index)) = history {
                    self.stored = (generation, index.steps.into_iter().collect());
                }
                FromWorker::Kept { step }
            }
            Err(e) => FromWorker::Failed(e),
        };
        self.post_all(host, vec![reply.into()]);
    }

    /// The History kept with the model of `generation`, read back from the store: it goes
    /// back in front of the slider.
    pub fn history_read(
        &mut self,
        host: &mut impl Host,
        generation: u64,
        index: &HistoryIndex,
        entries: Vec<(u64, Vec<u8>)>,
    ) {
        let steps: BTreeSet<u64> = entries.iter().map(|(s, _)| *s).collect();
        let replies = self.session.restore_history(generation, index, entries);
        if !replies.is_empty() {
            self.stored = (generation, steps);
        }
        self.post_all(host, replies);
    }
}
