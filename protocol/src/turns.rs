//! Claims take turns: one is measured at a time, so each is measured alone, and those asked for
//! meanwhile wait in the order they were asked (`ClaimQueued` tells the page so). A claim that
//! takes minutes (`About::steps_aside`: Length extrapolation trains nine models of its own)
//! steps aside for one asked while it runs: that one runs to its end first, then the long one
//! goes on where it was, so a learner never waits minutes for a claim of seconds. The training
//! worker keeps these rules for the claims it runs itself and for those its claim worker runs;
//! each brings its own way of starting and stopping one.

use crate::{Claim, ProbeInput};
use std::collections::VecDeque;

/// The claim under way (with what its runner keeps of it, `R`) and those waiting.
pub struct ClaimTurns<R> {
    running: Option<(Claim, R)>,
    /// A claim that stepped aside for the one running: it goes on when that one ends.
    aside: Option<(Claim, R)>,
    waiting: VecDeque<(Claim, ProbeInput)>,
}

impl<R> Default for ClaimTurns<R> {
    fn default() -> Self {
        ClaimTurns {
            running: None,
            aside: None,
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
    /// The claim under way steps aside for it: the runner says `step_aside`, then starts it;
    /// the one aside goes on when it ends.
    GoesFirst(ProbeInput),
}

/// What a Cancel found.
#[derive(Debug, PartialEq)]
pub enum Cancelled {
    /// It was waiting, and no longer is.
    Waiting,
    /// It is under way: the runner stops it, and says `end` once it has.
    Running,
    /// It stood aside, and no longer does: the runner drops what it kept of it.
    Aside,
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
        // The one aside goes on where it was, after the one under way.
        if self.aside.as_ref().is_some_and(|(c, _)| *c == claim) {
            return Asked::Waits;
        }
        match &self.running {
            Some((running, _)) if *running == claim => Asked::StartsOver(probe),
            Some((running, _)) if running.steps_aside() && self.aside.is_none() => {
                Asked::GoesFirst(probe)
            }
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
        } else if self.aside.as_ref().is_some_and(|(c, _)| *c == claim) {
            self.aside = None;
            Cancelled::Aside
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

    /// The claim under way steps aside (after `Asked::GoesFirst`): the runner starts the one
    /// asked for next. Returns the claim that stepped aside.
    pub fn step_aside(&mut self) -> Option<Claim> {
        let running = self.running.take()?;
        let claim = running.0;
        self.aside = Some(running);
        Some(claim)
    }

    /// The claim that stepped aside, if any.
    pub fn aside(&self) -> Option<Claim> {
        self.aside.as_ref().map(|(claim, _)| *claim)
    }

    /// What its runner keeps of the claim that stepped aside.
    pub fn aside_mut(&mut self) -> Option<&mut R> {
        self.aside.as_mut().map(|(_, run)| run)
    }

    /// `claim` is under way, aside, or waiting.
    pub fn asked(&self, claim: Claim) -> bool {
        self.running() == Some(claim)
            || self.aside() == Some(claim)
            || self.waiting.iter().any(|(c, _)| *c == claim)
    }

    /// What its runner keeps of the claim under way.
    pub fn run_mut(&mut self) -> Option<&mut R> {
        self.running.as_mut().map(|(_, run)| run)
    }

    /// The claim under way ended (done, cancelled, or its runner died): the one aside goes on
    /// (it is under way again), or else the next may start.
    pub fn end(&mut self) -> Option<(Claim, R)> {
        let ended = self.running.take();
        self.resume();
        ended
    }

    /// The claim under way, taken to start it over (`Asked::StartsOver`): the one aside stays
    /// aside.
    pub fn take_running(&mut self) -> Option<(Claim, R)> {
        self.running.take()
    }

    /// With none under way, the one aside is again.
    fn resume(&mut self) {
        if self.running.is_none() {
            self.running = self.aside.take();
        }
    }

    /// The next waiting claim, to start now, when none is under way (and none aside, which
    /// goes on instead).
    pub fn next_to_start(&mut self) -> Option<(Claim, ProbeInput)> {
        self.resume();
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

    #[test]
    fn a_long_claim_steps_aside_for_one_asked_while_it_runs_and_goes_on_after_it() {
        let mut turns = ClaimTurns::<u8>::default();
        assert!(Claim::Extrapolation.steps_aside() && !Claim::Time.steps_aside());
        turns.started(Claim::Extrapolation, 1);
        assert_eq!(
            turns.ask(Claim::KvCache, probe("b")),
            Asked::GoesFirst(probe("b"))
        );
        assert_eq!(turns.step_aside(), Some(Claim::Extrapolation));
        turns.started(Claim::KvCache, 2);
        // One at a time: a third waits, and the one aside keeps its place.
        assert_eq!(turns.ask(Claim::Time, probe("c")), Asked::Waits);
        assert_eq!(turns.ask(Claim::Extrapolation, probe("x")), Asked::Waits);
        assert!(turns.asked(Claim::Extrapolation));
        assert_eq!(turns.aside_mut(), Some(&mut 1));
        // The one that went first ends: the one aside is under way again, where it was.
        assert_eq!(turns.end(), Some((Claim::KvCache, 2)));
        assert_eq!(turns.running(), Some(Claim::Extrapolation));
        assert_eq!(turns.run_mut(), Some(&mut 1));
        assert_eq!(turns.next_to_start(), None);
        // Under way again it steps aside again, for the next asked.
        assert_eq!(
            turns.ask(Claim::Memory, probe("d")),
            Asked::GoesFirst(probe("d"))
        );
        turns.end();
        assert_eq!(turns.next_to_start(), Some((Claim::Time, probe("c"))));
        // Started over, the one that went first keeps the other aside; ended at once (one that
        // measures in one go), the other goes on at the next start.
        turns.started(Claim::Extrapolation, 1);
        turns.ask(Claim::KvCache, probe("e"));
        turns.step_aside();
        turns.started(Claim::KvCache, 3);
        assert_eq!(
            turns.ask(Claim::KvCache, probe("f")),
            Asked::StartsOver(probe("f"))
        );
        assert_eq!(turns.take_running(), Some((Claim::KvCache, 3)));
        assert_eq!(turns.aside(), Some(Claim::Extrapolation));
        assert_eq!(turns.next_to_start(), None);
        assert_eq!(turns.running(), Some(Claim::Extrapolation));
    }

    #[test]
    fn a_claim_aside_can_be_cancelled_and_then_does_not_go_on() {
        let mut turns = ClaimTurns::<()>::default();
        turns.started(Claim::Extrapolation, ());
        turns.ask(Claim::KvCache, probe("b"));
        turns.step_aside();
        turns.started(Claim::KvCache, ());
        assert_eq!(turns.cancel(Claim::Extrapolation), Cancelled::Aside);
        assert!(!turns.asked(Claim::Extrapolation));
        turns.end();
        assert_eq!(turns.running(), None);
    }
}
