//! What the browser keeps of a session (the worker writes it to IndexedDB): the models with
//! their training state, and the History's weights, written entry by entry and read back in
//! front of the slider after a reload.

use super::{Reply, Session};
use crate::lab::Lab;
use protocol::record::HistoryIndex;
use protocol::{LabError, LabResult, ModelBundle, ToClaimWorker};
use std::collections::BTreeSet;

/// The History to keep in the browser: its index, and the weights of the entries not stored yet.
pub struct HistoryToKeep {
    pub generation: u64,
    pub index: HistoryIndex,
    pub new_entries: Vec<(u64, Vec<u8>)>,
}

impl Session {
    /// The History as the browser should keep it, with the weights of the entries that are not
    /// in `stored` (steps already written for this generation). With Compare, an entry's bytes
    /// are model A's weights followed by model B's at the same step; for an encoder–decoder,
    /// its decoder's followed by its encoder's.
    pub fn history_to_keep(&self, stored: &BTreeSet<u64>) -> Option<HistoryToKeep> {
        let lab = self.lab.as_ref()?;
        let entries = lab.history.entries();
        let b_entries = self
            .lab_b
            .as_ref()
            .map(|b| &b.history)
            .or(lab.paired_history())
            .map(|h| h.entries());
        Some(HistoryToKeep {
            generation: self.generation,
            index: HistoryIndex::new(
                lab.history.interval(),
                entries.iter().map(|(s, _)| *s).collect(),
            ),
            new_entries: entries
                .iter()
                .filter(|(s, _)| !stored.contains(s))
                .map(|(s, m)| {
                    let mut bytes = Lab::weights_bytes(m);
                    let b = b_entries.and_then(|b| b.iter().find(|(bs, _)| bs == s));
                    if let Some((_, mb)) = b {
                        bytes.extend(Lab::weights_bytes(mb));
                    }
                    (*s, bytes)
                })
                .collect(),
        })
    }

    /// The History kept with the model just loaded, read back from the browser's store: its
    /// entries before the model's step go in front of the slider (`restore_history_into`).
    /// Returns the steps now kept, for the page.
    pub fn restore_history(
        &mut self,
        generation: u64,
        index: &HistoryIndex,
        entries: Vec<(u64, Vec<u8>)>,
    ) -> Vec<Reply> {
        let Some(lab) = self.lab.as_mut().filter(|_| generation == self.generation) else {
            // Another model came meanwhile: this History is not its.
            return Vec::new();
        };
        restore_history_into(lab, self.lab_b.as_mut(), index, entries);
        vec![self.history()]
    }

    /// The current model (and Compare's model B) as the browser keeps them: their files and,
    /// when they train, what it takes to train on exactly as before. The curves are the page's
    /// to keep.
    pub fn kept_models(&self) -> LabResult<(ModelBundle, Option<ModelBundle>)> {
        let a = self.lab.as_ref().ok_or_else(LabError::no_model)?.bundle()?;
        let b = self.lab_b.as_ref().map(Lab::bundle).transpose()?;
        Ok((a, b))
    }

    /// What the claim worker needs to run claims as this session would (`ToClaimWorker::Copy`),
    /// with its attachments: the models as the browser keeps them (none before the first) and,
    /// `with_history` and with Compare, every History entry (the Scaling claim reads Compare's
    /// two models along their History).
    pub fn copy_for_claims(&self, with_history: bool) -> LabResult<(ToClaimWorker, Vec<Vec<u8>>)> {
        // No claim reads the optimiser's moments: they stay here.
        let mut bundle = self.lab.as_ref().map(Lab::files_bundle).transpose()?;
        let mut compare = self.lab_b.as_ref().map(Lab::files_bundle).transpose()?;
        let history = match self.lab_b {
            Some(_) if with_history => self.history_to_keep(&BTreeSet::new()),
            _ => None,
        };
        let (history, entries) = match history {
            Some(h) => (Some(h.index), h.new_entries),
            None => (None, Vec::new()),
        };
        let history_steps = entries.iter().map(|(s, _)| *s).collect();
        let mut attachments: Vec<Vec<u8>> = entries.into_iter().map(|(_, bytes)| bytes).collect();
        if let Some(bundle) = bundle.as_mut() {
            attachments.extend(ModelBundle::detach_both(bundle, compare.as_mut()));
        }
        let copy = ToClaimWorker::Copy {
            bundle,
            compare,
            corpus: self.corpus.clone(),
            settings: self.settings.clone(),
            history,
            history_steps,
        };
        Ok((copy, attachments))
    }
}

/// History entries read back from the browser's store (as `history_to_keep` wrote them) put in
/// front of the slider, for model A and Compare's model B (or an encoder–decoder's encoder).
/// Entries that do not fit the model are left out.
pub fn restore_history_into(
    lab: &mut Lab,
    lab_b: Option<&mut Lab>,
    index: &HistoryIndex,
    entries: Vec<(u64, Vec<u8>)>,
) {
    let a_len = lab.parts().0.num_params() * 4;
    let paired = lab.paired_history().is_some();
    let (mut older, mut older_b) = (Vec::new(), Vec::new());
    for (step, bytes) in entries {
        let Some((a, b)) = bytes.split_at_checked(a_len) else {
            continue;
        };
        let Ok(model) = lab.model_from_weights(a) else {
            continue;
        };
        if paired {
            // An encoder–decoder's entry is whole only with its encoder.
            let Ok(encoder) = lab.encoder_from_weights(b) else {
                continue;
            };
            older_b.push((step, encoder));
        }
        older.push((step, model));
        if let Some(lab_b) = lab_b.as_ref() {
            older_b.extend(lab_b.model_from_weights(b).ok().map(|m| (step, m)));
        }
    }
    if paired {
        lab.prepend_history(index.interval, older, older_b);
        return;
    }
    lab.history.prepend(index.interval, older);
    if let Some(lab_b) = lab_b {
        lab_b.history.prepend(index.interval, older_b);
        lab_b.history.keep_only(&lab.history);
    }
}
