//! Claims take turns: one is measured at a time, so each is measured alone, and those asked for
//! meanwhile wait in the order they were asked (`ClaimQueued` tells the page so). The training
//! worker keeps these rules for the claims it runs itself and for those its claim worker runs;
//! each brings its own way of starting and stopping one.

use crate::{Claim, ProbeInput};
use std::collections::VecDeque;

/// The claim under way (with what its runner keeps of it, `R`) and those waiting.
pub struct ClaimTurns<R> {
    running: Option<(Claim, R)>,
    waiting: VecDeque<(Claim, ProbeInput)>,
}

impl<R> Default for ClaimTurns<R> {
    fn default() -> Self {
        ClaimTurns {
            running: None,
            waiting: VecDeque::new(),
        }
    }
}

/// What becomes of a claim asked for.
#[derive(Debug, PartialEq)]
pub enum Asked {
    /// It waits its turn. One asked for again while it waits keeps its place, with the new probe.
    Waits,
    /// It is the claim under way: it starts over now, with this probe, and keeps its turn.
    StartsOver(ProbeInput),
    /// None is under way: it starts now (the runner then says `started`, unless it ended at once).
    Starts(ProbeInput),
}

/// What a Cancel found.
#[derive(Debug, PartialEq)]
pub enum Cancelled {
    /// It was waiting, and no longer is.
    Waiting,
    /// It is under way: the runner stops it, and says `end` once it has.
    Running,
    /// It is neither under way nor waiting.
    NotAsked,
}

impl<R> ClaimTurns<R> {
    /// The page asked for `claim` with `probe`.
    pub fn ask(&mut self, claim: Claim, probe: ProbeInput) -> Asked {
        if let Some(waiting) = self.waiting.iter_mut().find(|(c, _)| *c == claim) {
            waiting.1 = probe;
            return Asked::Waits;
        }
        match &self.running {
            Some((running, _)) if *running == claim => Asked::StartsOver(probe),
            Some(_) => {
                self.waiting.push_back((claim, probe));
                Asked::Waits
            }
            None => Asked::Starts(probe),
        }
    }

    /// The page cancelled `claim`: a waiting one is dropped here.
    pub fn cancel(&mut self, claim: Claim) -> Cancelled {
        let waiting = self.waiting.len();
        self.waiting.retain(|(c, _)| *c != claim);
        if self.waiting.len() < waiting {
            Cancelled::Waiting
        } else if self.running.as_ref().is_some_and(|(c, _)| *c == claim) {
            Cancelled::Running
        } else {
            Cancelled::NotAsked
        }
    }

    /// `claim` started (from `Starts` or `next_to_start`) and runs until `end`.
    pub fn started(&mut self, claim: Claim, run: R) {
        self.running = Some((claim, run));
    }

    /// The claim under way, if any.
    pub fn running(&self) -> Option<Claim> {
        self.running.as_ref().map(|(claim, _)| *claim)
    }

    /// `claim` is under way or waiting.
    pub fn asked(&self, claim: Claim) -> bool {
        self.running() == Some(claim) || self.waiting.iter().any(|(c, _)| *c == claim)
    }

    /// What its runner keeps of the claim under way.
    pub fn run_mut(&mut self) -> Option<&mut R> {
        self.running.as_mut().map(|(_, run)| run)
    }

    /// The claim under way ended (done, cancelled, or its runner died): the next may start.
    pub fn end(&mut self) -> Option<(Claim, R)> {
        self.running.take()
    }

    /// The next waiting claim, to start now, when none is under way.
    pub fn next_to_start(&mut self) -> Option<(Claim, ProbeInput)> {
        if self.running.is_some() {
            return None;
        }
        self.waiting.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(text: &str) -> ProbeInput {
        ProbeInput {
            text: text.into(),
            ..ProbeInput::default()
        }
    }

    #[test]
    fn one_claim_runs_and_the_others_wait_in_the_order_asked() {
        let mut turns = ClaimTurns::<()>::default();
        assert_eq!(
            turns.ask(Claim::Time, probe("a")),
            Asked::Starts(probe("a"))
        );
        // Until it says it started, none is under way.
        assert_eq!(turns.next_to_start(), None);
        turns.started(Claim::Time, ());
        assert_eq!(turns.ask(Claim::KvCache, probe("b")), Asked::Waits);
        assert_eq!(turns.ask(Claim::Memory, probe("c")), Asked::Waits);
        assert_eq!(turns.next_to_start(), None, "none starts while one runs");
        assert!(turns.asked(Claim::Time) && turns.asked(Claim::Memory));
        assert!(!turns.asked(Claim::Heads));
        assert_eq!(turns.running(), Some(Claim::Time));
        assert_eq!(turns.end(), Some((Claim::Time, ())));
        assert_eq!(turns.next_to_start(), Some((Claim::KvCache, probe("b"))));
        turns.started(Claim::KvCache, ());
        turns.end();
        assert_eq!(turns.next_to_start(), Some((Claim::Memory, probe("c"))));
        assert_eq!(turns.next_to_start(), None);
    }

    #[test]
    fn asked_again_a_waiting_claim_keeps_its_place_and_the_claim_under_way_starts_over() {
        let mut turns = ClaimTurns::<u8>::default();
        turns.started(Claim::Time, 7);
        turns.ask(Claim::KvCache, probe("b"));
        turns.ask(Claim::Memory, probe("c"));
        assert_eq!(turns.ask(Claim::KvCache, probe("b2")), Asked::Waits);
        assert_eq!(
            turns.ask(Claim::Time, probe("a2")),
            Asked::StartsOver(probe("a2"))
        );
        assert_eq!(
            turns.run_mut(),
            Some(&mut 7),
            "starting over keeps its turn"
        );
        turns.end();
        assert_eq!(turns.next_to_start(), Some((Claim::KvCache, probe("b2"))));
        assert_eq!(turns.next_to_start(), Some((Claim::Memory, probe("c"))));
    }

    #[test]
    fn cancel_drops_a_waiting_claim_and_leaves_the_one_under_way_to_its_runner() {
        let mut turns = ClaimTurns::<()>::default();
        assert_eq!(turns.cancel(Claim::Time), Cancelled::NotAsked);
        turns.started(Claim::Time, ());
        turns.ask(Claim::KvCache, probe("b"));
        assert_eq!(turns.cancel(Claim::KvCache), Cancelled::Waiting);
        assert_eq!(turns.cancel(Claim::KvCache), Cancelled::NotAsked);
        assert_eq!(turns.cancel(Claim::Time), Cancelled::Running);
        assert_eq!(
            turns.running(),
            Some(Claim::Time),
            "until its runner ends it"
        );
        turns.end();
        assert_eq!(
            turns.next_to_start(),
            None,
            "the cancelled one does not start"
        );
    }
}
