//! The training worker's claim worker: claims run there, on a copy of the models, so training
//! goes on while they measure. It is the same program, started as the gradient workers are
//! (`worker_client`). Whenever it has no claim open it is sent the models as they are now
//! (`ToWorker::ClaimCopy`), then the page's `RunClaim` and `CancelClaim` as they come; its own
//! `Session` queues and runs them exactly as the training worker's once did, and its claim
//! messages go on to the page.

use super::child::Child;
use protocol::{Claim, Crash, FromWorker, LabError, LabResult, ToWorker};
use std::rc::Rc;

/// Where the claim worker's words go: its claim messages, and its death in words.
#[derive(Clone)]
pub struct Listeners {
    pub claim: Rc<dyn Fn(FromWorker)>,
    pub death: Rc<dyn Fn(String)>,
}

#[derive(Default)]
pub struct Claimer {
    worker: Option<Child>,
    /// The claims it was asked for that have not ended (done or cancelled), in order.
    open: Vec<Claim>,
    /// The model generation (`Session::generation`) its copy is of.
    copy_of: u64,
}

impl Claimer {
    /// Pass the page's `RunClaim` or `CancelClaim` on, first starting the claim worker and, when
    /// no claim is open there, giving it the models as they are now (`copy`, of `generation`).
    /// A claim asked for while others run measures the copy they run on.
    pub fn pass(
        &mut self,
        message: ToWorker,
        generation: u64,
        copy: impl FnOnce() -> LabResult<(ToWorker, Vec<Vec<u8>>)>,
        listeners: &Listeners,
    ) -> LabResult<()> {
        let run = match &message {
            ToWorker::RunClaim { claim, .. } => Some(*claim),
            _ => None,
        };
        if run.is_some() && self.open.is_empty() {
            let copy = copy()?;
            send_copy(self.start(listeners)?, copy)?;
            self.copy_of = generation;
        }
        let Some(worker) = self.worker.as_ref() else {
            // A Cancel before any Run here: the claim, if any, runs in the training worker.
            return Err(LabError::unavailable("no claim worker runs"));
        };
        worker.send(&message, &[])?;
        if let Some(claim) = run.filter(|c| !self.open.contains(c)) {
            self.open.push(claim);
        }
        Ok(())
    }

    /// The models were replaced (Reset, Load): with claims open, the claim worker gets the new
    /// ones, and its session stops what measured the old ones, as the training worker's did.
    pub fn models_replaced(
        &mut self,
        generation: u64,
        copy: impl FnOnce() -> LabResult<(ToWorker, Vec<Vec<u8>>)>,
    ) -> LabResult<()> {
        // A Load that failed left the models as they were.
        let replaced = generation != self.copy_of;
        let Some(worker) = self
            .worker
            .as_ref()
            .filter(|_| replaced && !self.open.is_empty())
        else {
            return Ok(());
        };
        send_copy(worker, copy()?)?;
        self.copy_of = generation;
        Ok(())
    }

    /// A claim message from the claim worker, which the page is to have: whether it ends one
    /// of the claims open there.
    pub fn heard(&mut self, message: &FromWorker) {
        if let FromWorker::ClaimDone { claim, .. } | FromWorker::ClaimCancelled { claim } = message
        {
            self.open.retain(|c| c != claim);
        }
    }

    /// Whether `claim` is asked for or under way in the claim worker.
    pub fn is_open(&self, claim: Claim) -> bool {
        self.open.contains(&claim)
    }

    /// The generation its copy is of.
    pub fn copy_of(&self) -> u64 {
        self.copy_of
    }

    /// The claim worker died: it is ended, and the claims that were open there are returned,
    /// each to be answered with why.
    pub fn died(&mut self) -> Vec<Claim> {
        if let Some(worker) = self.worker.take() {
            worker.end();
        }
        std::mem::take(&mut self.open)
    }

    /// Test only: make the claim worker panic.
    pub fn crash(&self) -> LabResult<()> {
        let worker = self
            .worker
            .as_ref()
            .ok_or_else(|| LabError::unavailable("no claim worker runs: Run a claim first"))?;
        worker.send(&ToWorker::Crash(Crash::Panic), &[])
    }

    fn start(&mut self, listeners: &Listeners) -> LabResult<&Child> {
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
