//! The guided tour: fourteen chapters in the tutorial's order over the live model. Each sets
//! the page up for what it says (`chapters::Scene`), outlines the figure it speaks of, and
//! asks a question the page checks against the model's numbers at the moment of the answer
//! (`question`). `view` is the panel.

pub mod chapters;
pub mod question;
pub mod view;

use crate::explorer::ExplorerView;
use crate::live::Live;
use crate::storage;
use chapters::{ModelNeed, CHAPTERS};
use engine::seq2seq::Task;
use engine::train::Objective;
use leptos::prelude::*;
use protocol::view::Selection;
use protocol::{LabSettings, ProbeInput, ToWorker};
use serde::{Deserialize, Serialize};

const TOUR_KEY: &str = "tour";

/// The tour's state and what it sets up.
#[derive(Clone, Copy)]
pub struct Tour {
    /// The open chapter, 1-based; None when the tour is closed.
    pub chapter: RwSignal<Option<usize>>,
    /// The chapter the tour was last at, open or not: "Tour" resumes there.
    pub last_chapter: RwSignal<Option<usize>>,
    pub live: Live,
    pub probe: RwSignal<ProbeInput>,
    pub settings: RwSignal<LabSettings>,
    pub corpus: RwSignal<String>,
    pub explorer: ExplorerView,
}

/// What the browser keeps of the tour between visits.
#[derive(Serialize, Deserialize)]
struct Progress {
    chapter: usize,
    open: bool,
}

impl Tour {
    /// The tour as the last visit left it (closed at chapter 1 the first time).
    pub fn new(
        live: Live,
        probe: RwSignal<ProbeInput>,
        settings: RwSignal<LabSettings>,
        corpus: RwSignal<String>,
        explorer: ExplorerView,
    ) -> Tour {
        let kept = storage::load_text(TOUR_KEY)
            .and_then(|t| serde_json::from_str::<Progress>(&t).ok())
            .filter(|p| (1..=CHAPTERS.len()).contains(&p.chapter));
        let tour = Tour {
            chapter: RwSignal::new(kept.as_ref().filter(|p| p.open).map(|p| p.chapter)),
            last_chapter: RwSignal::new(kept.map(|p| p.chapter)),
            live,
            probe,
            settings,
            corpus,
            explorer,
        };
        // Local storage and the outlined figure are the outside world.
        Effect::new(move |_| {
            if let Some(n) = tour.chapter.get() {
                tour.last_chapter.set(Some(n));
            }
            let progress = Progress {
                chapter: tour.last_chapter.get().unwrap_or(1),
                open: tour.chapter.get().is_some(),
            };
            if let Err(e) = storage::save(TOUR_KEY, &progress) {
                live.notice.set(Some(e.to_string()));
            }
        });
        tour.follow_focus();
        tour.escape_leaves();
        tour
    }

    /// Opens chapter `n` and sets the page up for it.
    pub fn open(self, n: usize) {
        let Some(c) = CHAPTERS.get(n.wrapping_sub(1)) else {
            return;
        };
        let s = c.scene;
        self.probe.update(|p| {
            p.text = s.text.into();
            p.pair = s.pair.into();
            p.target = s.target.into();
            p.pad_to = s.pad_to;
            p.mask = s.mask;
            p.window = s.window;
            p.attention = protocol::ProbeKernel::Full;
        });
        self.explorer.stage.set(s.stage);
        self.explorer.selection.set(Selection {
            layer: 0,
            head: 0,
            part: s.part,
        });
        let playing = self.live.playing.get_untracked();
        if s.playing != playing {
            self.live.send(if s.playing {
                ToWorker::Play
            } else {
                ToWorker::Pause
            });
        }
        self.chapter.set(Some(n));
    }

    /// Builds the model a chapter needs, in place of the one here (the user asked: "Build it").
    pub fn build(self, need: ModelNeed) {
        let mut next = self.settings.get_untracked();
        match need {
            ModelNeed::OneModel | ModelNeed::PreTraining => {
                next.task = None;
                next.objective = Objective::MlmNsp;
            }
            ModelNeed::Reverse => next.task = Some(Task::Reverse),
            ModelNeed::Repeat => next.choose_repeat(),
        }
        // Compare trains two BERTs; an encoder–decoder trains alone.
        if need == ModelNeed::Reverse {
            next.compare = None;
        }
        self.settings.set(next.clone());
        self.live.reset(self.corpus.get_untracked(), next);
        // The chapter's scene again, as opening it sets it: a chapter reached by a link, or
        // after the learner changed the Sentence, is asked about its own sentence (Repeat's
        // question reads a Repeat sentence).
        if let Some(n) = self.chapter.get_untracked() {
            self.open(n);
            // The worker's playing state may still be the old model's when `open` reads it.
            if CHAPTERS[n - 1].scene.playing {
                self.live.send(ToWorker::Play);
            }
        }
    }

    /// The chapter's figure stays outlined: when the chapter changes, and when a new snapshot
    /// redraws the page (the figure may be a new element). It is scrolled to only when the
    /// chapter changes, so a snapshot does not pull the page away from the reader.
    fn follow_focus(self) {
        let scrolled_for = StoredValue::new(None::<usize>);
        Effect::new(move |_| {
            let chapter = self.chapter.get();
            // Read so that each snapshot outlines again.
            self.live.inspection.track();
            self.explorer.stage.track();
            let Some(n) = chapter else {
                scrolled_for.set_value(None);
                view::clear_outline();
                return;
            };
            let focus = CHAPTERS[n - 1].focus;
            // After this task: the views for the new state are in the DOM by then.
            let scroll = scrolled_for.get_value() != Some(n);
            crate::tasks::next_task(move || {
                // The tour may have moved on, or closed, since.
                if self.chapter.get_untracked() != Some(n) {
                    return;
                }
                if view::outline(focus, scroll) {
                    scrolled_for.set_value(Some(n));
                }
            });
        });
    }

    /// Esc anywhere leaves the tour; the page stays as the tour left it.
    fn escape_leaves(self) {
        let handle = window_event_listener(leptos::ev::keydown, move |ev| {
            if ev.key() == "Escape" && self.chapter.get_untracked().is_some() {
                self.chapter.set(None);
            }
        });
        on_cleanup(move || handle.remove());
    }
}
