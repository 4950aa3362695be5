//! The training session: the page's messages in, replies out, no clock and nothing of the
//! browser. The lead (`lead::Lead`) decides when it trains and how many steps fit in a tick,
//! shares steps with the gradient workers and holds replies to the page's cadence.

mod keep;
mod shared;
pub use keep::{restore_history_into, HistoryToKeep};
pub use shared::{SharedStep, Which};

use crate::claims::Models;
use crate::generation::GenerationRun;
use crate::lab::Lab;
use protocol::messages::FilesFor;
use protocol::{
    CurvePoint, FromWorker, GenerationSettings, LabError, LabResult, LabSettings, ModelBundle,
    ProbeInput, ToWorker,
};

/// A message for the page, with the files' bytes that travel beside it
/// (`ModelBundle::detach_both`).
pub struct Reply {
    pub message: FromWorker,
    pub attachments: Vec<Vec<u8>>,
}

impl From<FromWorker> for Reply {
    fn from(message: FromWorker) -> Self {
        Reply {
            message,
            attachments: Vec::new(),
        }
    }
}

#[derive(Default)]
pub struct Session {
    lab: Option<Lab>,
    /// Compare's model B: trains in lockstep on `lab`'s batches, shares its History steps.
    lab_b: Option<Lab>,
    settings: LabSettings,
    corpus: String,
    probe: ProbeInput,
    playing: bool,
    /// Steps per second while playing; None = as fast as possible.
    pub speed: Option<f64>,
    /// Which model this is: one more for each Reset or Load. What the worker stored of an
    /// earlier model's History is not this one's.
    generation: u64,
    /// The explorer's generation under way, if any.
    generating: Option<GenerationRun>,
}

impl Session {
    pub fn playing(&self) -> bool {
        self.playing
    }

    /// A generation is under way: the worker calls `generation_step` until it ends.
    pub fn generating(&self) -> bool {
        self.generating.is_some()
    }

    /// The next generated token (and the end of the run after the last).
    pub fn generation_step(&mut self) -> Vec<Reply> {
        let Some(run) = self.generating.as_mut() else {
            return Vec::new();
        };
        match run.step() {
            Ok((message, done)) => {
                if done {
                    self.generating = None;
                }
                vec![message.into()]
            }
            Err(e) => {
                self.generating = None;
                vec![FromWorker::Failed(e).into()]
            }
        }
    }

    /// The models as the claims measure them: what the lead's claim runner reads when claims
    /// run here, and what a claim measured again as the model trains reads.
    pub fn claim_models(&self) -> Models<'_> {
        Models {
            lab: self.lab.as_ref(),
            lab_b: self.lab_b.as_ref(),
            seed: self.settings.seed,
        }
    }

    pub fn handle(&mut self, message: ToWorker, attachments: Vec<Vec<u8>>) -> Vec<Reply> {
        // A generation runs on a copy of the weights: whatever changes them ends it.
        if matches!(
            message,
            ToWorker::Play
                | ToWorker::Step
                | ToWorker::Rewind { .. }
                | ToWorker::Reset { .. }
                | ToWorker::Load { .. }
        ) {
            self.generating = None;
        }
        match message {
            ToWorker::Reset { corpus, settings } => self.reset(corpus, settings),
            ToWorker::Load {
                mut bundle,
                mut compare,
                corpus,
                settings,
            } => {
                ModelBundle::attach_both(&mut bundle, compare.as_mut(), attachments);
                self.load(bundle, compare, corpus, settings)
            }
            ToWorker::Play => match self.trainable() {
                Ok(()) => {
                    self.playing = true;
                    vec![self.progress(Vec::new(), Vec::new(), 0.0)]
                }
                Err(e) => vec![self.refusal(e)],
            },
            ToWorker::Pause => {
                self.playing = false;
                // The figures at the step training stopped on (a snapshot while playing may be
                // a few steps behind it); the lead adds the claim that follows training.
                vec![self.progress(Vec::new(), Vec::new(), 0.0), self.snapshot()]
            }
            ToWorker::Step => {
                self.playing = false;
                let mut replies = self.train(1);
                replies.push(self.snapshot());
                replies
            }
            ToWorker::Speed(speed) => {
                self.speed = speed;
                Vec::new()
            }
            ToWorker::Tune(settings) => self.tune(settings),
            ToWorker::Inspect { probe, at } => self.inspect_probe(probe, at),
            ToWorker::Rewind { at } => self.rewind(at),
            ToWorker::Generate { prompt, settings } => self.generate(&prompt, &settings),
            ToWorker::StopGenerating => match self.generating.take().map(|run| run.message(true)) {
                Some(Ok(message)) => vec![message.into()],
                Some(Err(e)) => vec![FromWorker::Failed(e).into()],
                None => Vec::new(),
            },
            ToWorker::Download(files_for) => self.download(files_for),
            // Done by the lead, which owns the store (`Lead::models_to_keep`, `Lead::history_read`).
            ToWorker::Keep | ToWorker::RestoreHistory => Vec::new(),
            // Claims take their turns in the lead (`lead::claims`).
            ToWorker::RunClaim { .. } | ToWorker::CancelClaim { .. } => Vec::new(),
            // Timed by the lead, which owns the clock (`Lead::bench`).
            ToWorker::Bench { .. } => Vec::new(),
            // The worker's own death (`Host::die`), never the session's.
            ToWorker::Crash(_) => Vec::new(),
            // How many workers train is the lead's (`Lead::choose_workers`).
            ToWorker::Workers(_) => Vec::new(),
        }
    }

    /// A fresh model (and Compare's model B) on the corpus and settings.
    fn reset(&mut self, corpus: String, settings: LabSettings) -> Vec<Reply> {
        self.playing = false;
        let labs =
            Lab::fresh(&corpus, &settings).and_then(|a| Ok((a, Lab::fresh_b(&corpus, &settings)?)));
        match labs {
            Ok((lab, lab_b)) => self.adopt(lab, lab_b, corpus, settings, None),
            Err(e) => vec![FromWorker::Failed(e).into()],
        }
    }

    /// A model from its files (picked by the user, or kept by the browser), with Compare's
    /// model B kept beside it.
    fn load(
        &mut self,
        bundle: ModelBundle,
        compare: Option<ModelBundle>,
        corpus: String,
        settings: LabSettings,
    ) -> Vec<Reply> {
        self.playing = false;
        match Lab::load(bundle, &corpus, &settings) {
            Ok((lab, notice)) => {
                let (lab_b, notice_b) = load_b(&lab, compare, &corpus, &settings);
                let notice = match (notice, notice_b) {
                    (Some(a), Some(b)) => Some(format!("{a} {b}")),
                    (a, b) => a.or(b),
                };
                self.adopt(lab, lab_b, corpus, settings, notice)
            }
            Err(e) => vec![FromWorker::Failed(e).into()],
        }
    }

    /// The probe the snapshots show from now on, or (`at`) one inspection at a History entry.
    fn inspect_probe(&mut self, probe: ProbeInput, at: Option<usize>) -> Vec<Reply> {
        if at.is_some() {
            return vec![self.inspect(&probe, at)];
        }
        self.probe = probe;
        // Before any model the probe waits for `adopt`, which sends its snapshot.
        match self.lab {
            Some(_) => vec![self.snapshot()],
            None => Vec::new(),
        }
    }

    /// Back to History entry `at`, for both models.
    fn rewind(&mut self, at: usize) -> Vec<Reply> {
        self.playing = false;
        let Some(lab) = self.lab.as_mut() else {
            return vec![no_model()];
        };
        // B first: a step it has no weights for leaves both as they were.
        let step = lab.history.get(at).map(|(s, _)| *s);
        let rewound_b = match (self.lab_b.as_mut(), step) {
            (Some(b), Some(step)) => b.rewind_to_step(step).map(|_| ()),
            _ => Ok(()),
        };
        match rewound_b.and_then(|()| lab.rewind(at)) {
            Ok(_) => vec![
                self.history(),
                self.progress(Vec::new(), Vec::new(), 0.0),
                self.snapshot(),
            ],
            Err(e) => vec![FromWorker::Failed(e).into()],
        }
    }

    /// Starts a decoder's generation: its first token now, the next ones from
    /// `generation_step`.
    fn generate(&mut self, prompt: &str, settings: &GenerationSettings) -> Vec<Reply> {
        self.playing = false;
        self.generating = None;
        let Some(lab) = self.lab.as_ref() else {
            return vec![no_model()];
        };
        let started = GenerationRun::start(lab, prompt, settings).and_then(|mut run| {
            let (message, done) = run.step()?;
            Ok((run, message, done))
        });
        match started {
            Ok((run, message, done)) => {
                if !done {
                    self.generating = Some(run);
                }
                vec![self.progress(Vec::new(), Vec::new(), 0.0), message.into()]
            }
            Err(e) => vec![FromWorker::Failed(e).into()],
        }
    }

    fn adopt(
        &mut self,
        lab: Lab,
        lab_b: Option<Lab>,
        corpus: String,
        settings: LabSettings,
        notice: Option<String>,
    ) -> Vec<Reply> {
        let ready = FromWorker::Ready {
            info: lab.info(),
            compare: lab_b.as_ref().map(Lab::info),
            step: lab.step_count(),
            trainable: lab.trainable(),
            notice,
        };
        self.lab = Some(lab);
        self.lab_b = lab_b;
        self.corpus = corpus;
        self.settings = settings;
        self.generation += 1;
        vec![ready.into(), self.history(), self.snapshot()]
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    fn tune(&mut self, settings: LabSettings) -> Vec<Reply> {
        let Some(lab) = self.lab.as_mut() else {
            return vec![no_model()];
        };
        let tuned = lab
            .tune(&settings)
            .and_then(|()| match self.lab_b.as_mut() {
                Some(b) => b.tune(&settings),
                None => Ok(()),
            });
        match tuned {
            Ok(()) => {
                self.settings = settings;
                Vec::new()
            }
            Err(e) => vec![FromWorker::Failed(e).into()],
        }
    }

    /// Ok when Play can go on: the model trains and, with Compare, model B is at its step.
    pub fn trainable(&self) -> LabResult<()> {
        let lab = self.lab.as_ref().ok_or_else(LabError::no_model)?;
        lab.trainable()?;
        match &self.lab_b {
            Some(b) if b.step_count() != lab.step_count() => Err(LabError::unavailable(format!(
                "model B stopped at step {} and model A is at step {}: go back to a step of the \
                 History to train both again",
                b.step_count(),
                lab.step_count()
            ))),
            _ => Ok(()),
        }
    }

    /// Why training cannot go on, as the page should show it: a model B left behind by a NaN
    /// is a stop (the page offers to rewind both), anything else a failure.
    fn refusal(&self, reason: LabError) -> Reply {
        let lab = self.lab.as_ref();
        let behind = self
            .lab_b
            .as_ref()
            .zip(lab)
            .is_some_and(|(b, a)| b.step_count() != a.step_count());
        match lab {
            Some(a) if behind => FromWorker::Stopped {
                step: a.step_count(),
                reason,
            }
            .into(),
            _ => FromWorker::Failed(reason).into(),
        }
    }

    /// Up to `steps` training steps, of both models with Compare (B on A's batch). A NaN/∞
    /// loss in either stops play and says why.
    pub fn train(&mut self, steps: usize) -> Vec<Reply> {
        if let Err(e) = self.trainable() {
            self.playing = false;
            return vec![self.refusal(e)];
        }
        let Some(lab) = self.lab.as_mut() else {
            return vec![no_model()];
        };
        let kept_before = lab.history.steps().len();
        let mut points = Vec::with_capacity(steps);
        let mut points_b = Vec::new();
        let mut stopped = None;
        for _ in 0..steps {
            let stepped = lab.step().and_then(|point| {
                points.push(point);
                match self.lab_b.as_mut() {
                    Some(b) => b
                        .step_following(lab)
                        .map(|p| points_b.push(p))
                        .map_err(|e| LabError::unavailable(format!("Model B: {e}"))),
                    None => Ok(()),
                }
            });
            if let Err(reason) = stepped {
                stopped = Some(reason);
                break;
            }
        }
        self.after_steps(points, points_b, stopped, kept_before)
    }

    /// What steps taken (on one worker or several) reply: their loss points, why training
    /// stopped (a NaN/∞ loss), and the History when it kept or dropped weights.
    fn after_steps(
        &mut self,
        points: Vec<CurvePoint>,
        points_b: Vec<CurvePoint>,
        stopped: Option<LabError>,
        kept_before: usize,
    ) -> Vec<Reply> {
        // Play stops before the Progress says whether it plays: a Progress that says it still
        // plays may be held back (`Lead::hold_progress`), and its points would then reach
        // the page after whatever comes next (a Rewind's History among them).
        if stopped.is_some() {
            self.playing = false;
        }
        let mut replies = vec![self.progress(points, points_b, 0.0)];
        if let Some(reason) = stopped {
            let step = self.lab.as_ref().map_or(0, Lab::step_count);
            replies.push(FromWorker::Stopped { step, reason }.into());
        }
        let kept_now = self.lab.as_ref().map_or(0, |l| l.history.steps().len());
        if kept_now != kept_before {
            replies.push(self.history());
        }
        replies
    }

    /// What a Step does before its step, when the worker takes it over several workers (as
    /// `handle` does for one): play stops, and a generation under way ends.
    pub fn before_single_step(&mut self) {
        self.playing = false;
        self.generating = None;
    }

    /// The batch size training uses now.
    pub fn batch_size(&self) -> usize {
        self.settings.batch_size
    }

    /// Loss points with the run's masking counts, without a batch: `batch_view` costs a
    /// forward pass, so whoever sends the reply adds it when it is due.
    pub fn progress(
        &self,
        points: Vec<CurvePoint>,
        points_b: Vec<CurvePoint>,
        steps_per_second: f64,
    ) -> Reply {
        let counts = self
            .lab
            .as_ref()
            .map(|lab| lab.masking_counts())
            .unwrap_or_default();
        FromWorker::Progress {
            points,
            points_b,
            steps_per_second,
            playing: self.playing,
            batch: None,
            counts,
        }
        .into()
    }

    /// The latest step's batch with the model's predictions on it now (one forward pass).
    pub fn batch_view(&self) -> Option<engine::batch_view::BatchView> {
        self.lab.as_ref()?.batch_view()
    }

    /// The current probe through the current weights.
    pub fn snapshot(&self) -> Reply {
        self.inspect(&self.probe, None)
    }

    /// The probe through both models, now or at History entry `at`.
    fn inspect(&self, probe: &ProbeInput, at: Option<usize>) -> Reply {
        let Some(lab) = self.lab.as_ref() else {
            return no_model();
        };
        let step = match at {
            None => Ok(None),
            Some(i) => lab
                .history
                .get(i)
                .map(|(step, _)| Some(*step))
                .ok_or_else(|| LabError::unavailable(format!("no history entry {i}"))),
        };
        let inspect = |l: &Lab| step.clone().and_then(|step| l.inspect(probe, step));
        FromWorker::Inspected {
            step: lab.step_count(),
            at,
            result: inspect(lab),
            compare: self.lab_b.as_ref().map(inspect),
        }
        .into()
    }

    fn history(&self) -> Reply {
        let steps = self
            .lab
            .as_ref()
            .map(|l| l.history.steps())
            .unwrap_or_default();
        FromWorker::History { steps }.into()
    }

    fn download(&self, files_for: FilesFor) -> Vec<Reply> {
        match self.kept_models() {
            Ok((mut bundle, mut compare)) => {
                // The user gets the checkpoint files; the training state stays here.
                bundle.training_state = None;
                if let Some(b) = compare.as_mut() {
                    b.training_state = None;
                }
                let attachments = ModelBundle::detach_both(&mut bundle, compare.as_mut());
                vec![Reply {
                    message: FromWorker::Checkpoint {
                        bundle,
                        compare,
                        files_for,
                    },
                    attachments,
                }]
            }
            Err(e) => vec![FromWorker::Failed(e).into()],
        }
    }
}

/// Compare's model B, loaded from the bundle kept beside model A: only when A trains and the
/// settings still compare; a B that does not load is dropped, and the notice says why.
pub(crate) fn load_b(
    lab: &Lab,
    compare: Option<ModelBundle>,
    corpus: &str,
    settings: &LabSettings,
) -> (Option<Lab>, Option<String>) {
    let (Some(bundle), Some(b_settings)) = (compare, settings.for_model_b()) else {
        return (None, None);
    };
    if lab.trainable().is_err() {
        return (None, None);
    }
    match Lab::load(bundle, corpus, &b_settings) {
        // B may be a step behind (it stopped on a NaN after A's step): Play then asks to rewind.
        Ok((mut b, _)) if b.trainable().is_ok() && b.step_count() <= lab.step_count() => {
            b.follow_history();
            (Some(b), None)
        }
        Ok(_) => (
            None,
            Some(
                "Model B kept beside this model could not train on with it, so it was left out."
                    .into(),
            ),
        ),
        Err(e) => (
            None,
            Some(format!(
                "Model B kept beside this model could not be loaded ({e}), so it was left out."
            )),
        ),
    }
}

fn no_model() -> Reply {
    FromWorker::Failed(LabError::no_model()).into()
}

#[cfg(test)]
pub(crate) mod tests;
