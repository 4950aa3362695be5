//! The training worker's claim worker: claims run there, on a copy of the models, so training
//! goes on while they measure. It is the same program, started as the gradient workers are
//! (`worker_client`). It measures one claim at a time: each starts with the models as they are
//! then (`ToWorker::ClaimCopy`), and its `Session` runs it exactly as the training worker's
//! once did; its claim messages go on to the page. Claims asked for meanwhile wait here, by the
//! rules of `ClaimTurns`, as they do in `ClaimQueue` where claims run in the training worker.

use super::child::Child;
use protocol::turns::{Asked, Cancelled, ClaimTurns};
use protocol::{Claim, Crash, FromWorker, LabError, LabResult, ProbeInput, ToWorker};
use std::rc::Rc;

/// Where the claim worker's words go: its claim messages, and its death in words.
#[derive(Clone)]
pub struct Listeners {
    pub claim: Rc<dyn Fn(FromWorker)>,
    pub death: Rc<dyn Fn(String)>,
}

/// `ToWorker::ClaimCopy` and its attachments.
pub type Copy = (ToWorker, Vec<Vec<u8>>);

/// Where claims start: the models as they are now (their `Session::generation`, and a copy of
/// them for the claim worker, with the History's weights when asked: only the Scaling claim
/// reads them, up to 64 MB per model), and who hears the claim worker.
pub struct Start {
    pub generation: u64,
    pub copy: fn(bool) -> LabResult<Copy>,
    pub listeners: Listeners,
}

#[derive(Default)]
pub struct Claimer {
    worker: Option<Child>,
    /// The claim it measures, and those asked for meanwhile.
    turns: ClaimTurns<()>,
    /// The model generation its copy is of.
    copy_of: u64,
}

impl Claimer {
    /// The page's `RunClaim`, in turn (`ClaimTurns`).
    pub fn run(
        &mut self,
        claim: Claim,
        probe: ProbeInput,
        start: &Start,
    ) -> LabResult<Vec<FromWorker>> {
        match self.turns.ask(claim, probe) {
            Asked::Waits => Ok(vec![FromWorker::ClaimQueued { claim }]),
            // Its session starts it over, on the copy it has.
            Asked::StartsOver(probe) => self
                .worker()?
                .send(&ToWorker::RunClaim { claim, probe }, &[])
                .map(|()| Vec::new()),
            Asked::Starts(probe) => self.start(claim, probe, start).map(|()| Vec::new()),
        }
    }

    /// The page's `CancelClaim`. Err: the claim is not this one's (it may run in the training
    /// worker, where the claim worker could not start).
    pub fn cancel(&mut self, claim: Claim) -> LabResult<Vec<FromWorker>> {
        match self.turns.cancel(claim) {
            Cancelled::Waiting => Ok(vec![FromWorker::ClaimCancelled { claim }]),
            // It ends when its session says it was cancelled (`heard`).
            Cancelled::Running => self
                .worker()?
                .send(&ToWorker::CancelClaim { claim }, &[])
                .map(|()| Vec::new()),
            Cancelled::NotAsked => Err(LabError::unavailable("no claim worker runs this claim")),
        }
    }

    /// The next waiting claim, now that none runs: Err names it, with why it could not start.
    pub fn start_next(&mut self, start: &Start) -> Result<(), (Claim, LabError)> {
        match self.turns.next_to_start() {
            Some((claim, probe)) => self.start(claim, probe, start).map_err(|e| (claim, e)),
            None => Ok(()),
        }
    }

    fn start(&mut self, claim: Claim, probe: ProbeInput, start: &Start) -> LabResult<()> {
        let models = (start.copy)(claim.reads_history())?;
        let worker = self.spawn(&start.listeners)?;
        send_copy(worker, models)?;
        worker.send(&ToWorker::RunClaim { claim, probe }, &[])?;
        self.turns.started(claim, ());
        self.copy_of = start.generation;
        Ok(())
    }

    /// The models were replaced (Reset, Load): the claim under way gets the new ones, and the
    /// claim worker's session stops what measured the old ones, as the training worker's did.
    pub fn models_replaced(&mut self, start: &Start) -> LabResult<()> {
        // A Load that failed left the models as they were.
        let (Some(worker), Some(claim)) = (self.worker.as_ref(), self.turns.running()) else {
            return Ok(());
        };
        if start.generation == self.copy_of {
            return Ok(());
        }
        send_copy(worker, (start.copy)(claim.reads_history())?)?;
        self.copy_of = start.generation;
        Ok(())
    }

    /// A claim message from the claim worker, which the page is to have: true when it ends the
    /// claim under way (the next waiting one may start).
    pub fn heard(&mut self, message: &FromWorker) -> bool {
        match message {
            FromWorker::ClaimDone { claim, .. } | FromWorker::ClaimCancelled { claim }
                if self.turns.running() == Some(*claim) =>
            {
                self.turns.end();
                true
            }
            _ => false,
        }
    }

    /// The generation its copy is of.
    pub fn copy_of(&self) -> u64 {
        self.copy_of
    }

    /// The claim worker died: it is ended, and the claim it ran is returned, to be answered
    /// with why. The waiting ones start in a new one.
    pub fn died(&mut self) -> Option<Claim> {
        if let Some(worker) = self.worker.take() {
            worker.end();
        }
        self.turns.end().map(|(claim, ())| claim)
    }

    /// Test only: make the claim worker panic.
    pub fn crash(&self) -> LabResult<()> {
        self.worker()?.send(&ToWorker::Crash(Crash::Panic), &[])
    }

    fn worker(&self) -> LabResult<&Child> {
        self.worker
            .as_ref()
            .ok_or_else(|| LabError::unavailable("no claim worker runs: Run a claim first"))
    }

    fn spawn(&mut self, listeners: &Listeners) -> LabResult<&Child> {
        if self.worker.is_none() {
            let claim = listeners.claim.clone();
            let child = Child::spawn(
                move |message, _| match message {
                    FromWorker::ClaimProgress { .. }
                    | FromWorker::ClaimQueued { .. }
                    | FromWorker::ClaimCancelled { .. }
                    | FromWorker::ClaimDone { .. } => claim(message),
                    // What its session says of the copy it loaded (Ready, its snapshot, its
                    // History) is the training worker's to say, not its.
                    _ => {}
                },
                listeners.death.clone(),
            )?;
            self.worker = Some(child);
        }
        self.worker
            .as_ref()
            .ok_or_else(|| LabError::unavailable("the claim worker did not start"))
    }
}

fn send_copy(child: &Child, (copy, attachments): Copy) -> LabResult<()> {
    let attachments: Vec<&[u8]> = attachments.iter().map(Vec::as_slice).collect();
    child.send(&copy, &attachments)
}
