//! Claims take turns: one is measured at a time, so each is measured alone, and those asked for
//! meanwhile wait in the order they were asked (`ClaimReport::Queued` tells the page so). A
//! claim that takes minutes (`About::steps_aside`: Length extrapolation trains nine models of
//! its own) steps aside for one asked while it runs: that one runs to its end first, then the
//! long one goes on where it was, so a learner never waits minutes for a claim of seconds.
//!
//! The training worker (the lead) keeps these turns, in one place, whoever measures: it orders
//! the runner (`ClaimOrder`: its claim worker, or itself where the browser cannot nest workers),
//! and the runner's reports (`ClaimReport`) go on to the page as they are.

use crate::{Claim, ClaimResult, LabError, ProbeInput};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// What the lead tells the runner that measures claims. The runner holds the claim it measures
/// and one set aside for it, and decides nothing of their turns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ClaimOrder {
    /// Measure `claim` from its start on `probe` (a run of it held already is dropped). One
    /// under way is set aside, until `Resume`.
    Start { claim: Claim, probe: ProbeInput },
    /// Go on measuring `claim`, set aside while another went first.
    Resume { claim: Claim },
    /// Stop `claim`, under way or set aside: answered `Cancelled`.
    Cancel { claim: Claim },
    /// The models were replaced (Reset, Load): each claim held goes on or stops, as it says
    /// (one that measures the old models stops), and those that stop are answered `Cancelled`.
    ModelsReplaced,
}

/// What became of a claim, as the page hears it: the runner's reports (progress, a result, a
/// stop) go from the runner through the lead to the page unchanged, beside the lead's own
/// (a claim waits its turn, one waiting is cancelled).
// A report lives only from its making to its handling: the size gap (Done carries the
// result) costs nothing worth a Box.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum ClaimReport {
    /// It waits for the one under way (and those asked for before it).
    Queued { claim: Claim },
    /// `done` of its `total` units are measured.
    Progress {
        claim: Claim,
        done: usize,
        total: usize,
    },
    /// It finished (or could not run: why).
    Done {
        claim: Claim,
        result: Result<ClaimResult, LabError>,
    },
    /// It stopped: at the page's request, or as the models it measured were replaced.
    Cancelled { claim: Claim },
}

impl ClaimReport {
    pub fn claim(&self) -> Claim {
        match self {
            ClaimReport::Queued { claim }
            | ClaimReport::Progress { claim, .. }
            | ClaimReport::Done { claim, .. }
            | ClaimReport::Cancelled { claim } => *claim,
        }
    }

    /// Its claim's run is over: done or stopped.
    pub fn ends(&self) -> bool {
        matches!(
            self,
            ClaimReport::Done { .. } | ClaimReport::Cancelled { .. }
        )
    }
}

/// The claim under way, one set aside for it, and those waiting.
#[derive(Default)]
pub struct ClaimTurns {
    running: Option<Claim>,
    /// A claim that stepped aside for the one running: it goes on when that one ends.
    aside: Option<Claim>,
    waiting: VecDeque<(Claim, ProbeInput)>,
}

/// What becomes of a claim asked for.
#[derive(Debug, PartialEq)]
pub enum Asked {
    /// It waits its turn. One asked for again while it waits keeps its place, with the new probe.
    Waits,
    /// It is the claim under way: it starts over now, with this probe, and keeps its turn.
    StartsOver(ProbeInput),
    /// None was under way: it starts now.
    Starts(ProbeInput),
    /// The claim under way steps aside for it, and waits: it starts now, and the one aside
    /// goes on when it ends.
    GoesFirst { probe: ProbeInput, aside: Claim },
}

/// What a Cancel found.
#[derive(Debug, PartialEq)]
pub enum Cancelled {
    /// It was waiting, and no longer is.
    Waiting,
    /// It is under way: the runner stops it, and its report ends it (`ended`).
    Running,
    /// It stood aside, and no longer does: the runner drops it.
    Aside,
    /// It is neither under way nor waiting.
    NotAsked,
}

/// What the runner does next, once a claim ended.
#[derive(Debug, PartialEq)]
pub enum Next {
    /// The claim that stood aside goes on where it was.
    Resume(Claim),
    /// The next waiting claim starts.
    Start(Claim, ProbeInput),
}

impl ClaimTurns {
    /// The page asked for `claim` with `probe`.
    pub fn ask(&mut self, claim: Claim, probe: ProbeInput) -> Asked {
        if let Some(waiting) = self.waiting.iter_mut().find(|(c, _)| *c == claim) {
            waiting.1 = probe;
            return Asked::Waits;
        }
        // The one aside goes on where it was, after the one under way.
        if self.aside == Some(claim) {
            return Asked::Waits;
        }
        match self.running {
            Some(running) if running == claim => Asked::StartsOver(probe),
            Some(running) if running.steps_aside() && self.aside.is_none() => {
                self.aside = Some(running);
                self.running = Some(claim);
                Asked::GoesFirst {
                    probe,
                    aside: running,
                }
            }
            Some(_) => {
                self.waiting.push_back((claim, probe));
                Asked::Waits
            }
            None => {
                self.running = Some(claim);
                Asked::Starts(probe)
            }
        }
    }

    /// The page cancelled `claim`: a waiting one, or one aside, is dropped here.
    pub fn cancel(&mut self, claim: Claim) -> Cancelled {
        let waiting = self.waiting.len();
        self.waiting.retain(|(c, _)| *c != claim);
        if self.waiting.len() < waiting {
            Cancelled::Waiting
        } else if self.running == Some(claim) {
            Cancelled::Running
        } else if self.aside == Some(claim) {
            self.aside = None;
            Cancelled::Aside
        } else {
            Cancelled::NotAsked
        }
    }

    /// The claim under way, if any.
    pub fn running(&self) -> Option<Claim> {
        self.running
    }

    /// `claim` is under way, aside, or waiting.
    pub fn asked(&self, claim: Claim) -> bool {
        self.running == Some(claim)
            || self.aside == Some(claim)
            || self.waiting.iter().any(|(c, _)| *c == claim)
    }

    /// The runner says `claim` ended (done, or stopped). Under way, it hands its turn on: to
    /// the one aside, or else to the next waiting. One aside no longer is.
    pub fn ended(&mut self, claim: Claim) -> Option<Next> {
        if self.aside == Some(claim) {
            self.aside = None;
        }
        if self.running != Some(claim) {
            return None;
        }
        self.running = None;
        self.next()
    }

    /// The runner died: the claim under way and the one aside end with it (returned), and the
    /// next waiting one starts.
    pub fn abandon(&mut self) -> (Vec<Claim>, Option<Next>) {
        let ended = self.running.take().into_iter().chain(self.aside.take());
        (ended.collect(), self.next())
    }

    /// With none under way: the one aside goes on, or else the next waiting one starts.
    fn next(&mut self) -> Option<Next> {
        if let Some(aside) = self.aside.take() {
            self.running = Some(aside);
            return Some(Next::Resume(aside));
        }
        let (claim, probe) = self.waiting.pop_front()?;
        self.running = Some(claim);
        Some(Next::Start(claim, probe))
    }
}
