//! What the page knows of each claim's experiment, as the worker reports it.

use protocol::turns::ClaimReport;
use protocol::{Claim, ClaimResult, LabError};
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Clone, Debug, Default, PartialEq)]
pub enum ClaimState {
    #[default]
    Idle,
    /// Waiting for the claim under way (and those asked for before it) to end.
    Queued,
    /// `done` of `total` units measured (total 0: one go, no steps to count).
    Running {
        done: usize,
        total: usize,
    },
    Done(Arc<ClaimResult>),
    Failed(LabError),
    Cancelled,
}

impl ClaimState {
    /// Under way or waiting its turn: it will end (done, failed or cancelled).
    pub fn running(&self) -> bool {
        matches!(self, ClaimState::Running { .. } | ClaimState::Queued)
    }

    /// Progress as a fraction in [0, 1], for the bar.
    pub fn fraction(&self) -> Option<f64> {
        match self {
            ClaimState::Running { done, total } if *total > 0 => Some(*done as f64 / *total as f64),
            ClaimState::Running { .. } => Some(0.0),
            _ => None,
        }
    }
}

/// Every claim's state; a claim never run is `Idle`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Claims(HashMap<Claim, ClaimState>);

impl Claims {
    pub fn get(&self, claim: Claim) -> ClaimState {
        self.0.get(&claim).cloned().unwrap_or_default()
    }

    pub fn set(&mut self, claim: Claim, state: ClaimState) {
        self.0.insert(claim, state);
    }

    /// What the worker reported of a claim.
    pub fn report(&mut self, report: ClaimReport) {
        let (claim, state) = match report {
            ClaimReport::Queued { claim } => (claim, ClaimState::Queued),
            ClaimReport::Progress { claim, done, total } => {
                (claim, ClaimState::Running { done, total })
            }
            ClaimReport::Done {
                claim,
                result: Ok(r),
            } => (claim, ClaimState::Done(Arc::new(r))),
            ClaimReport::Done {
                claim,
                result: Err(e),
            } => (claim, ClaimState::Failed(e)),
            ClaimReport::Cancelled { claim } => (claim, ClaimState::Cancelled),
        };
        self.set(claim, state);
    }

    /// A claim is under way or waiting: a new one waits its turn (as the worker queues it).
    pub fn busy(&self) -> bool {
        self.0.values().any(ClaimState::running)
    }

    /// The worker is gone: what it was running will not finish.
    pub fn abandon(&mut self, why: &str) {
        for state in self.0.values_mut() {
            if state.running() {
                *state = ClaimState::Failed(LabError::unavailable(why));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    fn running_claims_report_a_fraction_and_are_abandoned_with_the_worker() {
        let mut c = Claims::default();
        assert_eq!(c.get(Claim::Memory), ClaimState::Idle);
        c.set(Claim::Memory, ClaimState::Running { done: 7, total: 14 });
        c.set(Claim::Time, ClaimState::Cancelled);
        c.set(Claim::KvCache, ClaimState::Queued);
        assert!(c.busy());
        assert_eq!(c.get(Claim::Memory).fraction(), Some(0.5));
        assert_eq!(c.get(Claim::Time).fraction(), None);
        c.abandon("the worker stopped");
        assert!(matches!(c.get(Claim::Memory), ClaimState::Failed(_)));
        assert!(matches!(c.get(Claim::KvCache), ClaimState::Failed(_)));
        assert!(!c.busy());
        assert_eq!(c.get(Claim::Time), ClaimState::Cancelled);
    }
}
