//! The training worker's state machine: messages in, messages out, no DOM and no clock. The
//! worker (`worker`) only moves messages and decides how many steps fit in a tick.

use super::claims::{self, ClaimRun, Started};
use super::lab::Lab;
use protocol::record::HistoryIndex;
use protocol::{
    CurvePoint, FromWorker, LabError, LabResult, LabSettings, ModelBundle, ProbeInput, ToWorker,
};
use std::collections::BTreeSet;

/// A message for the page, with the files' bytes that travel beside it (`ModelBundle::detach`).
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
    settings: LabSettings,
    corpus: String,
    probe: ProbeInput,
    playing: bool,
    /// Steps per second while playing; None = as fast as possible.
    pub speed: Option<f64>,
    /// Which model this is: one more for each Reset or Load. What the worker stored of an
    /// earlier model's History is not this one's.
    generation: u64,
    /// The Claims panel's experiment under way, if any.
    claim: Option<ClaimRun>,
}

/// The History to keep in the browser: its index, and the weights of the entries not stored yet.
pub struct HistoryToKeep {
    pub generation: u64,
    pub index: HistoryIndex,
    pub new_entries: Vec<(u64, Vec<u8>)>,
}

impl Session {
    pub fn playing(&self) -> bool {
        self.playing
    }

    /// A claim's experiment is under way: the worker calls `claim_step` until it ends.
    pub fn claim_running(&self) -> bool {
        self.claim.is_some()
    }

    /// Measures the claim's next unit: its progress, or its result after the last.
    pub fn claim_step(&mut self, now_ms: &dyn Fn() -> f64) -> Vec<Reply> {
        let Some(run) = self.claim.as_mut() else {
            return Vec::new();
        };
        let claim = run.claim;
        match run.step(now_ms) {
            Some(result) => {
                self.claim = None;
                vec![FromWorker::ClaimDone {
                    claim,
                    result: Ok(result),
                }
                .into()]
            }
            None => {
                let (done, total) = run.progress();
                vec![FromWorker::ClaimProgress { claim, done, total }.into()]
            }
        }
    }

    pub fn handle(&mut self, message: ToWorker, attachments: Vec<Vec<u8>>) -> Vec<Reply> {
        match message {
            ToWorker::RunClaim { claim, probe } => {
                self.claim = None;
                match claims::start(claim, &probe, self.lab.as_ref()) {
                    Started::Done(result) => vec![FromWorker::ClaimDone { claim, result }.into()],
                    Started::Running(run) => {
                        let (done, total) = run.progress();
                        self.claim = Some(run);
                        vec![FromWorker::ClaimProgress { claim, done, total }.into()]
                    }
                }
            }
            ToWorker::CancelClaim => match self.claim.take() {
                Some(run) => vec![FromWorker::ClaimCancelled { claim: run.claim }.into()],
                None => Vec::new(),
            },
            ToWorker::Reset { corpus, settings } => {
                self.playing = false;
                match Lab::fresh(&corpus, &settings) {
                    Ok(lab) => self.adopt(lab, corpus, settings, None),
                    Err(e) => vec![FromWorker::Failed(e).into()],
                }
            }
            ToWorker::Load {
                mut bundle,
                corpus,
                settings,
            } => {
                self.playing = false;
                bundle.attach(attachments);
                match Lab::load(bundle, &corpus, &settings) {
                    Ok((lab, notice)) => self.adopt(lab, corpus, settings, notice),
                    Err(e) => vec![FromWorker::Failed(e).into()],
                }
            }
            ToWorker::Play => match self.lab.as_ref().map(Lab::trainable) {
                Some(Ok(())) => {
                    self.playing = true;
                    vec![self.progress(Vec::new(), 0.0)]
                }
                Some(Err(e)) => vec![FromWorker::Failed(e).into()],
                None => vec![no_model()],
            },
            ToWorker::Pause => {
                self.playing = false;
                vec![self.progress(Vec::new(), 0.0)]
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
            ToWorker::Inspect { probe, at } => {
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
            ToWorker::Rewind { at } => {
                self.playing = false;
                let Some(lab) = self.lab.as_mut() else {
                    return vec![no_model()];
                };
                match lab.rewind(at) {
                    Ok(_) => vec![
                        self.history(),
                        self.progress(Vec::new(), 0.0),
                        self.snapshot(),
                    ],
                    Err(e) => vec![FromWorker::Failed(e).into()],
                }
            }
            ToWorker::Download => self.download(),
            // Done by the worker, which owns the store (`worker::keep`, `restore_history`).
            ToWorker::Keep | ToWorker::RestoreHistory => Vec::new(),
            // Timed by the worker, which owns the clock (`worker::bench`).
            ToWorker::Bench { .. } => Vec::new(),
            // The worker's own death (`worker::crash`), never the session's.
            ToWorker::Crash(_) => Vec::new(),
        }
    }

    fn adopt(
        &mut self,
        lab: Lab,
        corpus: String,
        settings: LabSettings,
        notice: Option<String>,
    ) -> Vec<Reply> {
        let ready = FromWorker::Ready {
            info: lab.info(),
            step: lab.step_count(),
            trainable: lab.trainable(),
            notice,
        };
        self.lab = Some(lab);
        self.corpus = corpus;
        self.settings = settings;
        self.generation += 1;
        vec![ready.into(), self.history(), self.snapshot()]
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The History as the browser should keep it, with the weights of the entries that are not
    /// in `stored` (steps already written for this generation).
    pub fn history_to_keep(&self, stored: &BTreeSet<u64>) -> Option<HistoryToKeep> {
        let lab = self.lab.as_ref()?;
        let entries = lab.history.entries();
        Some(HistoryToKeep {
            generation: self.generation,
            index: HistoryIndex::new(
                lab.history.interval(),
                entries.iter().map(|(s, _)| *s).collect(),
            ),
            new_entries: entries
                .iter()
                .filter(|(s, _)| !stored.contains(s))
                .map(|(s, m)| (*s, Lab::weights_bytes(m)))
                .collect(),
        })
    }

    /// The History kept with the model just loaded, read back from the browser's store: its
    /// entries before the model's step go in front of the slider. Entries that do not fit this
    /// model are left out. Returns the steps now kept, for the page.
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
        let older = entries
            .into_iter()
            .filter_map(|(step, bytes)| Some((step, lab.model_from_weights(&bytes).ok()?)))
            .collect();
        lab.history.prepend(index.interval, older);
        vec![self.history()]
    }

    fn tune(&mut self, settings: LabSettings) -> Vec<Reply> {
        let Some(lab) = self.lab.as_mut() else {
            return vec![no_model()];
        };
        match lab.tune(&settings) {
            Ok(()) => {
                self.settings = settings;
                Vec::new()
            }
            Err(e) => vec![FromWorker::Failed(e).into()],
        }
    }

    /// Up to `steps` training steps. A NaN/∞ loss stops play and says why.
    pub fn train(&mut self, steps: usize) -> Vec<Reply> {
        let Some(lab) = self.lab.as_mut() else {
            return vec![no_model()];
        };
        let kept_before = lab.history.steps().len();
        let mut points = Vec::with_capacity(steps);
        let mut replies = Vec::new();
        for _ in 0..steps {
            match lab.step() {
                Ok(point) => points.push(point),
                Err(reason) => {
                    self.playing = false;
                    let step = lab.step_count();
                    replies.push(FromWorker::Stopped { step, reason }.into());
                    break;
                }
            }
        }
        let history_changed = self
            .lab
            .as_ref()
            .is_some_and(|l| l.history.steps().len() != kept_before);
        replies.insert(0, self.progress(points, 0.0));
        if history_changed {
            replies.push(self.history());
        }
        replies
    }

    /// Loss points with the run's masking counts, without a batch: `batch_view` costs a
    /// forward pass, so whoever sends the reply adds it when it is due.
    pub fn progress(&self, points: Vec<CurvePoint>, steps_per_second: f64) -> Reply {
        let counts = self
            .lab
            .as_ref()
            .map(|lab| lab.masking_counts())
            .unwrap_or_default();
        FromWorker::Progress {
            points,
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

    fn inspect(&self, probe: &ProbeInput, at: Option<usize>) -> Reply {
        let Some(lab) = self.lab.as_ref() else {
            return no_model();
        };
        FromWorker::Inspected {
            step: lab.step_count(),
            at,
            result: lab.inspect(probe, at),
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

    fn download(&self) -> Vec<Reply> {
        match self.kept_model() {
            Ok(mut bundle) => {
                // The user gets the checkpoint files; the training state stays here.
                bundle.training_state = None;
                let attachments = bundle.detach();
                vec![Reply {
                    message: FromWorker::Checkpoint(bundle),
                    attachments,
                }]
            }
            Err(e) => vec![FromWorker::Failed(e).into()],
        }
    }

    /// The current model as the browser keeps it: its files and, when it trains, what it takes
    /// to train on exactly as before. The curves are the page's to keep.
    pub fn kept_model(&self) -> LabResult<ModelBundle> {
        self.lab.as_ref().ok_or_else(LabError::no_model)?.bundle()
    }
}

fn no_model() -> Reply {
    FromWorker::Failed(LabError::no_model()).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::DEFAULT_CORPUS;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    fn started() -> Session {
        let mut s = Session::default();
        let replies = s.handle(
            ToWorker::Reset {
                corpus: DEFAULT_CORPUS.into(),
                settings: LabSettings::default(),
            },
            Vec::new(),
        );
        assert!(matches!(replies[0].message, FromWorker::Ready { .. }));
        s
    }

    fn losses(replies: &[Reply]) -> Vec<f32> {
        replies
            .iter()
            .flat_map(|r| match &r.message {
                FromWorker::Progress { points, .. } => points.iter().map(|p| p.loss).collect(),
                _ => Vec::new(),
            })
            .collect()
    }

    fn claim_done(replies: &[Reply]) -> Option<&Result<protocol::ClaimResult, LabError>> {
        replies.iter().find_map(|r| match &r.message {
            FromWorker::ClaimDone { result, .. } => Some(result),
            _ => None,
        })
    }

    #[test]
    fn the_leakage_claim_gives_exact_zeros_before_the_change_under_causal() {
        let mut s = started();
        let probe = ProbeInput {
            text: "the dog chases a red ball".into(),
            ..ProbeInput::default()
        };
        let replies = s.handle(
            ToWorker::RunClaim {
                claim: protocol::Claim::Leakage,
                probe,
            },
            Vec::new(),
        );
        let result = claim_done(&replies).unwrap().as_ref().unwrap();
        let (padding, causal) = (&result.series[0], &result.series[1]);
        assert_eq!(
            (padding.name.as_str(), causal.name.as_str()),
            ("Padding", "Causal")
        );
        // [CLS] the dog chases a red ball [SEP]: "ball" at 6 changes.
        assert!(causal.y[..6].iter().all(|&d| d == 0.0), "{:?}", causal.y);
        assert!(causal.y[6] > 0.0 && padding.y.iter().all(|&d| d > 0.0));
        assert!(result.verdict.starts_with("Borne out"));
    }

    #[test]
    fn a_scaling_claim_runs_unit_by_unit_and_cancel_stops_it() {
        let mut s = started();
        let run = |claim| ToWorker::RunClaim {
            claim,
            probe: ProbeInput::default(),
        };
        let replies = s.handle(run(protocol::Claim::Memory), Vec::new());
        assert!(matches!(
            replies[0].message,
            FromWorker::ClaimProgress {
                done: 0,
                total: 14,
                ..
            }
        ));
        assert!(s.claim_running());
        let clock = || js_sys::Date::now();
        let replies = s.claim_step(&clock);
        assert!(matches!(
            replies[0].message,
            FromWorker::ClaimProgress {
                done: 1,
                total: 14,
                ..
            }
        ));
        let replies = s.handle(ToWorker::CancelClaim, Vec::new());
        assert!(matches!(
            replies[0].message,
            FromWorker::ClaimCancelled { .. }
        ));
        assert!(!s.claim_running() && s.claim_step(&clock).is_empty());
        // KV cache answers at once, from this model's shape.
        let replies = s.handle(run(protocol::Claim::KvCache), Vec::new());
        let kv = claim_done(&replies).unwrap().as_ref().unwrap();
        assert_eq!(kv.series[0].x, [4.0, 1.0]);
        // Extrapolation needs Compare: a clear refusal, not a panic.
        let replies = s.handle(run(protocol::Claim::Extrapolation), Vec::new());
        assert!(claim_done(&replies).unwrap().is_err());
    }

    #[test]
    fn play_pause_and_step_move_the_state_and_the_step_count() {
        let mut s = started();
        s.handle(ToWorker::Play, Vec::new());
        assert!(s.playing());
        assert_eq!(losses(&s.train(3)).len(), 3);
        s.handle(ToWorker::Pause, Vec::new());
        assert!(!s.playing());
        let replies = s.handle(ToWorker::Step, Vec::new());
        let steps: Vec<u64> = replies
            .iter()
            .filter_map(|r| match &r.message {
                FromWorker::Inspected { step, .. } => Some(*step),
                _ => None,
            })
            .collect();
        assert_eq!(
            steps,
            vec![4],
            "one Step after three played steps is step 4"
        );
    }

    #[test]
    fn reset_with_the_same_seed_gives_the_same_losses() {
        let mut a = started();
        let first = losses(&a.train(4));
        a.handle(
            ToWorker::Reset {
                corpus: DEFAULT_CORPUS.into(),
                settings: LabSettings::default(),
            },
            Vec::new(),
        );
        assert_eq!(losses(&a.train(4)), first);
        let other = LabSettings {
            seed: 1,
            ..LabSettings::default()
        };
        a.handle(
            ToWorker::Reset {
                corpus: DEFAULT_CORPUS.into(),
                settings: other,
            },
            Vec::new(),
        );
        assert_ne!(losses(&a.train(4)), first);
    }

    #[test]
    fn a_huge_learning_rate_stops_by_itself_and_rewind_recovers() {
        let mut s = started();
        let wild = LabSettings {
            learning_rate: 1000.0,
            ..LabSettings::default()
        };
        s.handle(ToWorker::Tune(wild), Vec::new());
        s.handle(ToWorker::Play, Vec::new());
        let mut stopped = None;
        for _ in 0..50 {
            let replies = s.train(5);
            if let Some(r) = replies
                .iter()
                .find(|r| matches!(r.message, FromWorker::Stopped { .. }))
            {
                stopped = Some(r.message.clone());
                break;
            }
        }
        assert!(
            matches!(stopped, Some(FromWorker::Stopped { .. })),
            "lr 1000 never stopped"
        );
        assert!(!s.playing());
        s.handle(ToWorker::Tune(LabSettings::default()), Vec::new());
        let replies = s.handle(ToWorker::Rewind { at: 0 }, Vec::new());
        assert!(replies.iter().any(|r| matches!(
            &r.message,
            FromWorker::Inspected {
                step: 0,
                result: Ok(_),
                ..
            }
        )));
        assert!(losses(&s.train(2)).iter().all(|l| l.is_finite()));
    }

    #[test]
    fn requests_before_a_model_fail_politely() {
        let mut s = Session::default();
        let replies = s.handle(ToWorker::Play, Vec::new());
        assert!(matches!(replies[0].message, FromWorker::Failed(_)));
        let replies = s.handle(
            ToWorker::Reset {
                corpus: "just one line".into(),
                settings: LabSettings::default(),
            },
            Vec::new(),
        );
        assert!(
            matches!(&replies[0].message, FromWorker::Failed(e) if e.to_string().contains("sentence"))
        );
    }

    #[test]
    fn a_probe_sent_before_the_model_waits_for_it() {
        let mut s = Session::default();
        let probe = ProbeInput {
            text: "the cat sleeps".into(),
            ..ProbeInput::default()
        };
        let replies = s.handle(
            ToWorker::Inspect {
                probe: probe.clone(),
                at: None,
            },
            Vec::new(),
        );
        assert!(replies.is_empty(), "no error before a model exists");
        let replies = s.handle(
            ToWorker::Reset {
                corpus: DEFAULT_CORPUS.into(),
                settings: LabSettings::default(),
            },
            Vec::new(),
        );
        let tokens = replies.iter().find_map(|r| match &r.message {
            FromWorker::Inspected { result: Ok(i), .. } => Some(i.tokens.clone()),
            _ => None,
        });
        assert_eq!(
            tokens.as_deref().map(|t| &t[1..4]),
            Some(&["the".to_string(), "cat".into(), "sleeps".into()][..])
        );
    }

    #[test]
    fn a_model_kept_in_the_browser_trains_on_exactly_as_before() {
        let mut a = started();
        a.train(3);
        let for_user = a.handle(ToWorker::Download, Vec::new());
        assert!(matches!(
            for_user[0].message,
            FromWorker::Checkpoint(ModelBundle { step: 3, .. })
        ));
        assert_eq!(
            for_user[0].attachments.len(),
            1,
            "the user gets the weights"
        );
        let kept = a.kept_model().unwrap();
        assert!(kept.training_state.is_some());
        let restore = |mut bundle: ModelBundle| {
            let mut b = Session::default();
            let attachments = bundle.detach();
            let load = ToWorker::Load {
                bundle,
                corpus: DEFAULT_CORPUS.into(),
                settings: LabSettings::default(),
            };
            let replies = b.handle(load, attachments);
            let FromWorker::Ready {
                step: 3,
                notice: None,
                info,
                ..
            } = &replies[0].message
            else {
                panic!("not ready at step 3");
            };
            (b, info.tokenizer.clone())
        };
        assert!(kept.word_level, "a model made here splits whole words");
        let (mut b, tokenizer) = restore(kept.clone());
        assert_eq!(
            tokenizer, "word-level",
            "the kept model keeps its tokenizer"
        );
        let next = losses(&a.train(2));
        assert_eq!(losses(&b.train(2)), next);

        // The weights alone train on differently: the comparison above can fail.
        let (mut c, _) = restore(ModelBundle {
            training_state: None,
            ..kept.clone()
        });
        assert_ne!(losses(&c.train(2)), next);
        // Without the flag, the same files read as WordPiece (what a reload used to show).
        let (_, tokenizer) = restore(ModelBundle {
            word_level: false,
            ..kept
        });
        assert_eq!(tokenizer, "WordPiece");
    }

    #[test]
    fn a_kept_history_comes_back_in_front_of_the_slider() {
        let mut a = started();
        a.train(20);
        let all = a.history_to_keep(&BTreeSet::new()).unwrap();
        assert_eq!(all.index.steps, [0, 5, 10, 15, 20]);
        assert_eq!(all.new_entries.len(), 5);
        let stored: BTreeSet<u64> = [0, 5, 10].into();
        let rest = a.history_to_keep(&stored).unwrap();
        assert_eq!(
            rest.new_entries.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
            [15, 20],
            "only what is not stored yet"
        );

        let mut bundle = a.kept_model().unwrap();
        let mut b = Session::default();
        let attachments = bundle.detach();
        b.handle(
            ToWorker::Load {
                bundle,
                corpus: DEFAULT_CORPUS.into(),
                settings: LabSettings::default(),
            },
            attachments,
        );
        let stale = b.restore_history(b.generation() - 1, &all.index, all.new_entries.clone());
        assert!(
            stale.is_empty(),
            "an earlier model's History is not this one's"
        );
        let replies = b.restore_history(b.generation(), &all.index, all.new_entries.clone());
        assert!(matches!(
            &replies[0].message,
            FromWorker::History { steps } if steps == &[0, 5, 10, 15, 20]
        ));
        let at = |s: &Session, i: usize| match s.inspect(&ProbeInput::default(), Some(i)).message {
            FromWorker::Inspected { result: Ok(i), .. } => i,
            _ => panic!("no inspection"),
        };
        assert_eq!(at(&b, 0), at(&a, 0), "the weights at step 0 came back");
        assert_eq!(at(&b, 2), at(&a, 2));
        assert_ne!(at(&b, 0), at(&b, 2), "the comparison above can fail");
    }
}
