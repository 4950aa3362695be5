//! The training worker's claim worker: claims run there, on a copy of the models, so training
//! goes on while they measure. It is the same program, started as the gradient workers are
//! (`worker_client`). It measures one claim at a time: each starts with the models as they are
//! then (`ToWorker::ClaimCopy`), and its `Session` runs it exactly as the training worker's
//! once did; its claim messages go on to the page. Claims asked for meanwhile wait here, in
//! turn, as `ClaimQueue` keeps them where claims run in the training worker.

use super::child::Child;
use protocol::{Claim, Crash, FromWorker, LabError, LabResult, ProbeInput, ToWorker};
use std::collections::VecDeque;
use std::rc::Rc;

/// Where the claim worker's words go: its claim messages, and its death in words.
#[derive(Clone)]
pub struct Listeners {
    pub claim: Rc<dyn Fn(FromWorker)>,
    pub death: Rc<dyn Fn(String)>,
}

/// The models as they are now, for the claim worker, with the History's weights when asked
/// (only the Scaling claim reads them: up to 64 MB per model).
pub type Copy<'a> = &'a dyn Fn(bool) -> LabResult<(ToWorker, Vec<Vec<u8>>)>;

#[derive(Default)]
pub struct Claimer {
    worker: Option<Child>,
    /// The claim it measures, and those asked for meanwhile.
    running: Option<Claim>,
    waiting: VecDeque<(Claim, ProbeInput)>,
    /// The model generation (`Session::generation`) its copy is of.
    copy_of: u64,
}

impl Claimer {
    /// The page's `RunClaim`: now if none runs, else in turn (`ClaimQueued`). Asked again for
    /// the claim under way, it starts over; a waiting one keeps its place, with this probe.
    pub fn run(
        &mut self,
        claim: Claim,
        probe: ProbeInput,
        generation: u64,
        copy: Copy,
        listeners: &Listeners,
    ) -> LabResult<Vec<FromWorker>> {
        if let Some(waiting) = self.waiting.iter_mut().find(|(c, _)| *c == claim) {
            waiting.1 = probe;
            return Ok(vec![FromWorker::ClaimQueued { claim }]);
        }
        if let Some(worker) = self.worker.as_ref().filter(|_| self.running == Some(claim)) {
            // Its session starts it over, on the copy it has.
            worker.send(&ToWorker::RunClaim { claim, probe }, &[])?;
            return Ok(Vec::new());
        }
        if self.running.is_some() {
            self.waiting.push_back((claim, probe));
            return Ok(vec![FromWorker::ClaimQueued { claim }]);
        }
        self.start(claim, probe, generation, copy, listeners)?;
        Ok(Vec::new())
    }

    /// The page's `CancelClaim`. Err: the claim is not this one's (it may run in the training
    /// worker, where the claim worker could not start).
    pub fn cancel(&mut self, claim: Claim) -> LabResult<Vec<FromWorker>> {
        let waiting = self.waiting.len();
        self.waiting.retain(|(c, _)| *c != claim);
        if self.waiting.len() < waiting {
            return Ok(vec![FromWorker::ClaimCancelled { claim }]);
        }
        match self.worker.as_ref().filter(|_| self.running == Some(claim)) {
            Some(worker) => worker
                .send(&ToWorker::CancelClaim { claim }, &[])
                .map(|()| Vec::new()),
            None => Err(LabError::unavailable("no claim worker runs this claim")),
        }
    }

    /// The next waiting claim, now that none runs: Err names it, with why it could not start.
    pub fn start_next(
        &mut self,
        generation: u64,
        copy: Copy,
        listeners: &Listeners,
    ) -> Result<(), (Claim, LabError)> {
        if self.running.is_some() {
            return Ok(());
        }
        let Some((claim, probe)) = self.waiting.pop_front() else {
            return Ok(());
        };
        self.start(claim, probe, generation, copy, listeners)
            .map_err(|e| (claim, e))
    }

    fn start(
        &mut self,
        claim: Claim,
        probe: ProbeInput,
        generation: u64,
        copy: Copy,
        listeners: &Listeners,
    ) -> LabResult<()> {
        let models = copy(claim == Claim::Scaling)?;
        let worker = self.spawn(listeners)?;
        send_copy(worker, models)?;
        worker.send(&ToWorker::RunClaim { claim, probe }, &[])?;
        self.running = Some(claim);
        self.copy_of = generation;
        Ok(())
    }

    /// The models were replaced (Reset, Load): the claim under way gets the new ones, and the
    /// claim worker's session stops what measured the old ones, as the training worker's did.
    pub fn models_replaced(&mut self, generation: u64, copy: Copy) -> LabResult<()> {
        // A Load that failed left the models as they were.
        let (Some(worker), Some(claim)) = (self.worker.as_ref(), self.running) else {
            return Ok(());
        };
        if generation == self.copy_of {
            return Ok(());
        }
        send_copy(worker, copy(claim == Claim::Scaling)?)?;
        self.copy_of = generation;
        Ok(())
    }

    /// A claim message from the claim worker, which the page is to have: true when it ends the
    /// claim under way (the next waiting one may start).
    pub fn heard(&mut self, message: &FromWorker) -> bool {
        match message {
            FromWorker::ClaimDone { claim, .. } | FromWorker::ClaimCancelled { claim }
                if self.running == Some(*claim) =>
            {
                self.running = None;
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
        self.running.take()
    }

    /// Test only: make the claim worker panic.
    pub fn crash(&self) -> LabResult<()> {
        let worker = self
            .worker
            .as_ref()
            .ok_or_else(|| LabError::unavailable("no claim worker runs: Run a claim first"))?;
        worker.send(&ToWorker::Crash(Crash::Panic), &[])
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

fn send_copy(child: &Child, (copy, attachments): (ToWorker, Vec<Vec<u8>>)) -> LabResult<()> {
    let attachments: Vec<&[u8]> = attachments.iter().map(Vec::as_slice).collect();
    child.send(&copy, &attachments)
}
