//! The tour panel: a chapter's text and formula, the model it needs, its question with the
//! choices read from the live model once its answer is decided (until then, how far the model
//! is, while the chapter trains it), and Back / Next. Beside the page on a wide screen, over
//! its lower part on a phone.

use super::chapters::{Chapter, Focus, ModelNeed, CHAPTERS};
use super::question::{Live as Shown, Margin, Posed, Question, DECIDED_LEAD};
use super::Tour;
use engine::seq2seq::Task;
use engine::train::Objective;
use leptos::prelude::*;
use protocol::view::Showing;
use protocol::ToWorker;
use wasm_bindgen::JsCast;

/// How an answer went.
#[derive(Clone, Debug, PartialEq)]
enum Outcome {
    Right(String),
    Wrong(String),
}

/// What the question shows in place of its prompt's answers.
#[derive(Clone, Debug, PartialEq)]
enum Asked {
    /// The choices: the numbers on screen decide the answer.
    Choices(Vec<String>),
    /// The numbers do not decide it yet (`posed`'s margin says how far they are).
    Undecided,
    /// What the page needs first.
    Needs(String),
}

/// "Tour" in the header: opens the tour where it was left (chapter 1 the first time).
#[component]
pub fn TourButton(tour: Tour) -> impl IntoView {
    view! {
        <button type="button" class="tour-button"
            aria-pressed=move || tour.chapter.with(Option::is_some).to_string()
            on:click=move |_| {
                if tour.chapter.get_untracked().is_some() {
                    tour.chapter.set(None);
                } else {
                    tour.open(tour.last_chapter.get_untracked().unwrap_or(1));
                }
            }>"Tour"</button>
    }
}

/// The open chapter's question as the numbers on screen answer it now, and how the learner's
/// answer went.
#[derive(Clone, Copy)]
struct Asking {
    /// Whether the model here is the one the chapter speaks of.
    need_met: Memo<bool>,
    /// The question posed now, or what the page needs first (None: no chapter open).
    posed: Memo<Option<Result<Posed, String>>>,
    /// The buttons are rebuilt only when the choices change, not at every snapshot that moves
    /// the numbers behind the answer: a click or the keyboard's focus must not be lost.
    asked: Memo<Option<Asked>>,
    /// The question's words: as the numbers word it, when they choose what it asks.
    prompt: Memo<Option<String>>,
    margin: Memo<Option<Margin>>,
    decided: Memo<Option<bool>>,
    outcome: RwSignal<Option<Outcome>>,
}

impl Asking {
    fn new(tour: Tour, chapter: Memo<Option<usize>>) -> Asking {
        let need_met = Memo::new(move |_| {
            chapter
                .get()
                .is_none_or(|n| model_meets(tour, CHAPTERS[n - 1].scene.model))
        });
        let posed = posed(tour, chapter, need_met);
        let asked = Memo::new(move |_| {
            posed.get().map(|r| match r {
                Ok(p) if p.margin.decided() => Asked::Choices(p.choices),
                Ok(_) => Asked::Undecided,
                Err(why) => Asked::Needs(why),
            })
        });
        let prompt = Memo::new(move |_| {
            let n = chapter.get()?;
            let worded = posed.with(|p| p.as_ref()?.as_ref().ok()?.prompt.clone());
            Some(worded.unwrap_or_else(|| CHAPTERS[n - 1].question.prompt()))
        });
        let margin =
            Memo::new(move |_| posed.with(|p| p.as_ref()?.as_ref().ok().map(|p| p.margin)));
        let decided = Memo::new(move |_| margin.get().map(Margin::decided));
        Asking {
            need_met,
            posed,
            asked,
            prompt,
            margin,
            decided,
            outcome: RwSignal::new(None),
        }
    }

    /// The learner chose `label` in chapter `n`: checked against the numbers on screen at the
    /// moment of the answer, and only while they decide it.
    fn answer(self, n: usize, label: &str) {
        let result = match self.posed.get_untracked() {
            Some(Ok(Posed {
                choices,
                answer,
                why,
                margin,
                ..
            })) if margin.decided() => {
                if choices[answer] == label {
                    Outcome::Right(why)
                } else {
                    Outcome::Wrong(CHAPTERS[n - 1].hint.to_string())
                }
            }
            _ => return,
        };
        self.outcome.set(Some(result));
    }
}

/// Whether the model here is the one a chapter needing `need` speaks of (true before there is
/// a model); its question waits until it is.
fn model_meets(tour: Tour, need: ModelNeed) -> bool {
    tour.live.info.with(|i| match (need, i) {
        (_, None) => true,
        // A Repeat decoder's words are its symbols: it cannot read the chapters' sentence.
        (ModelNeed::OneModel, Some(i)) => !i.kind.encoder_decoder() && i.kind.repeat().is_none(),
        (ModelNeed::PreTraining, Some(i)) => i.kind.objective() == Some(Objective::MlmNsp),
        (ModelNeed::Repeat, Some(i)) => i.kind.repeat().is_some(),
        (ModelNeed::Reverse, Some(i)) => i.kind.task() == Some(Task::Reverse),
    })
}

/// The open chapter's question posed against what the explorer shows (model A, or B while B is
/// shown), or what the page needs first.
fn posed(
    tour: Tour,
    chapter: Memo<Option<usize>>,
    need_met: Memo<bool>,
) -> Memo<Option<Result<Posed, String>>> {
    Memo::new(move |_| {
        let n = chapter.get()?;
        let c = &CHAPTERS[n - 1];
        if !need_met.get() {
            return Some(Err("Build the model this chapter needs first.".to_string()));
        }
        // Model B only while there is one: the explorer shows A otherwise.
        let b = tour.live.info_b.with(Option::is_some);
        let shown = if b && tour.explorer.showing.get() == Showing::B {
            tour.live.inspection_b
        } else {
            tour.live.inspection
        };
        let ins = shown.with(|s| s.as_ref().and_then(|r| r.as_ref().ok().cloned()));
        let Some(ins) = ins else {
            return Some(Err("Waiting for the model to read the text…".to_string()));
        };
        let selection = tour.explorer.selection.get();
        let empty = protocol::Curves::new();
        let pose = |curves: &protocol::Curves| {
            c.question.pose(&Shown {
                ins: &ins,
                selection,
                curves,
            })
        };
        // Only the loss question reads the curve: the others need not follow every point.
        Some(if c.question == Question::LossFell {
            tour.live.curves.with(pose)
        } else {
            pose(&empty)
        })
    })
}

/// The chapter plays the model while its question is undecided: the answer is a pattern the
/// model has yet to learn, so a pause then (the learner's, or one that lands on a snapshot
/// below the line) is followed by Play; to stop training there, leave the tour. When the
/// question becomes decided, training pauses (chapter 1's included), so the numbers hold
/// still at a decided answer while the learner reads them: a playing head's lead wobbles
/// from one snapshot to the next, and the choices would come and go. A chapter that opens
/// decided keeps its scene, the loss chapter plays on, and once decided the learner's own
/// Play or Pause stands.
fn play_until_decided(tour: Tour, chapter: Memo<Option<usize>>, decided: Memo<Option<bool>>) {
    Effect::watch(
        move || (chapter.get(), decided.get(), tour.live.playing.get()),
        move |&(n, now, playing), before, _| {
            let Some(n) = n else { return };
            let before = before.filter(|b| b.0 == Some(n));
            // A model that cannot train, has stopped (NaN loss) or is shown at a History step
            // cannot decide by playing.
            let can_train = tour.live.trainable.with_untracked(Result::is_ok)
                && tour.live.stopped.with_untracked(Option::is_none)
                && tour.live.history_at.with_untracked(Option::is_none);
            // The loss question reads the smoothed curve, which does not wobble, and its
            // chapter is about watching the curve play.
            let turned_decided = before.is_some_and(|b| b.1 == Some(false))
                && now == Some(true)
                && CHAPTERS[n - 1].question != Question::LossFell;
            match now {
                Some(false) if !playing && can_train => tour.live.send(ToWorker::Play),
                Some(true) if turned_decided && playing => tour.live.send(ToWorker::Pause),
                _ => {}
            }
        },
        false,
    );
}

/// Focus moves into the panel when a chapter opens, so the arrows and Esc reach it; a new
/// chapter is read from its start. When the tour closes with the focus inside it (Esc, ×), the
/// focus goes back to "Tour", as a dialog gives it back to what opened it, instead of falling
/// to the page's start.
fn focus_when_opened(chapter: Memo<Option<usize>>, heading: NodeRef<leptos::html::H2>) {
    Effect::watch(
        move || chapter.get(),
        move |c, _, _| {
            if c.is_some() {
                if let Some(h) = heading.get_untracked() {
                    let _ = h.focus();
                    if let Some(panel) = h.closest("aside.tour").ok().flatten() {
                        panel.set_scroll_top(0);
                    }
                }
                return;
            }
            let doc = document();
            let lost = doc.active_element().is_none_or(|e| e.tag_name() == "BODY");
            if lost {
                if let Some(button) = doc
                    .query_selector("button.tour-button")
                    .ok()
                    .flatten()
                    .and_then(|b| b.dyn_into::<web_sys::HtmlElement>().ok())
                {
                    let _ = button.focus();
                }
            }
        },
        false,
    );
}

/// A decided question's choices come into the sheet's view (on a phone the sheet is short,
/// and they sit below its fold): the panel scrolls, not the page, once they are drawn.
fn choices_into_view_when_decided(
    chapter: Memo<Option<usize>>,
    decided: Memo<Option<bool>>,
    heading: NodeRef<leptos::html::H2>,
) {
    Effect::watch(
        move || (chapter.get(), decided.get()),
        move |&(n, now), _, _| {
            if n.is_some() && now == Some(true) {
                request_animation_frame(move || {
                    let Some(heading) = heading.get_untracked() else {
                        return;
                    };
                    if let Some(panel) = heading.closest("aside.tour").ok().flatten() {
                        show_choices(&panel);
                    }
                });
            }
        },
        true,
    );
}

/// Turns the tour's page `by` chapters (within the first and the last).
fn turn(tour: Tour, by: isize) {
    if let Some(n) = tour.chapter.get_untracked() {
        let next = (n as isize + by).clamp(1, CHAPTERS.len() as isize) as usize;
        if next != n {
            tour.open(next);
        }
    }
}

#[component]
pub fn TourPanel(tour: Tour) -> impl IntoView {
    let chapter = Memo::new(move |_| tour.chapter.get());
    let asking = Asking::new(tour, chapter);
    // A new chapter asks a new question.
    Effect::watch(
        move || chapter.get(),
        move |_, _, _| asking.outcome.set(None),
        false,
    );
    let heading = NodeRef::<leptos::html::H2>::new();
    focus_when_opened(chapter, heading);
    play_until_decided(tour, chapter, asking.decided);
    choices_into_view_when_decided(chapter, asking.decided, heading);
    let keydown = move |ev: web_sys::KeyboardEvent| {
        if crate::keys::is_editing(&ev) {
            return;
        }
        match ev.key().as_str() {
            "ArrowRight" => turn(tour, 1),
            "ArrowLeft" => turn(tour, -1),
            "Escape" => tour.chapter.set(None),
            _ => return,
        }
        // The explorer's arrows step the formula; inside the tour they turn the page.
        ev.stop_propagation();
        ev.prevent_default();
    };
    let body = move || {
        chapter
            .get()
            .map(|n| view! { <ChapterBody tour=tour n=n asking=asking/> })
    };
    view! {
        <Show when=move || chapter.get().is_some()>
            <aside class="tour" role="dialog" aria-modal="false" aria-labelledby="tour-title"
                data-tour-chapter=move || chapter.get().unwrap_or(0).to_string()
                data-tour-chapters=CHAPTERS.len().to_string()
                data-tour-answered=move || matches!(asking.outcome.get(), Some(Outcome::Right(_))).to_string()
                on:keydown=keydown>
                <div class="tour-head">
                    <h2 id="tour-title" tabindex="-1" node_ref=heading>
                        <span class="tour-count">{move || format!("Tour · {} of {}", chapter.get().unwrap_or(0), CHAPTERS.len())}</span>
                        <span class="tour-title">{move || chapter.get().map(|n| CHAPTERS[n - 1].title)}</span>
                    </h2>
                    <button type="button" class="tour-close" aria-label="Leave the tour (Esc)" title="Leave the tour (Esc): the page stays as it is"
                        on:click=move |_| tour.chapter.set(None)>"×"</button>
                </div>
                {body}
                <TourNav tour=tour chapter=chapter/>
            </aside>
        </Show>
    }
}

/// Chapter `n`'s text and formula, the model it needs, and its question.
#[component]
fn ChapterBody(tour: Tour, n: usize, asking: Asking) -> impl IntoView {
    let c: &Chapter = &CHAPTERS[n - 1];
    view! {
        <p class="tour-text">{c.text}</p>
        <p class="tour-formula">{c.formula}</p>
        {move || (!asking.need_met.get()).then(|| view! { <BuildIt tour=tour need=c.scene.model/> })}
        <div class="tour-question"
            data-decided=move || asking.decided.get().unwrap_or(false).to_string()
            data-margin=move || asking.margin.get().map(|m| match m {
                Margin::Exact => "exact".to_string(),
                // As JavaScript's Number() reads it.
                Margin::Lead { ratio, .. } if ratio.is_infinite() => "Infinity".to_string(),
                Margin::Lead { ratio, .. } => format!("{ratio:.3}"),
            })>
            <p><strong>"Question: "</strong>{move || asking.prompt.get()}</p>
            // Said once the choices appear (they wait for the numbers to decide the question),
            // so a learner who cannot see them appear hears the question and its answers.
            <p class="visually-hidden" aria-live="polite" data-tour-announce="">{move || match asking.asked.get() {
                Some(Asked::Choices(choices)) => format!("Question: {} Answers: {}.", asking.prompt.get().unwrap_or_default(), choices.join(", ")),
                _ => String::new(),
            }}</p>
            <div class="tour-choices" role="group" aria-label="Answers">
                <Choices tour=tour n=n asking=asking/>
            </div>
            <p class="tour-outcome" aria-live="polite">
                {move || asking.outcome.get().map(|o| match o {
                    Outcome::Right(why) => view! { <span class="right">"✓ "{why}</span> }.into_any(),
                    Outcome::Wrong(hint) => view! { <span class="wrong" data-tour-hint="">"Not this one. "{hint}</span> }.into_any(),
                })}
            </p>
        </div>
    }
}

/// What a chapter whose model is not the one here says, with "Build it".
#[component]
fn BuildIt(tour: Tour, need: ModelNeed) -> impl IntoView {
    let what = match need {
        ModelNeed::OneModel => "one BERT or decoder that reads the corpus's words",
        ModelNeed::PreTraining => "BERT with its MLM and NSP heads",
        ModelNeed::Reverse => "an encoder–decoder trained on Reverse",
        ModelNeed::Repeat => "a decoder trained on Repeat (Next token, Task Repeat)",
    };
    view! {
        <div class="tour-need" role="status">
            <p>{format!("This chapter needs {what}. Build it, and the model here is replaced (keep or download it first if you want it).")}</p>
            <button type="button" class="primary" data-tour-build="" on:click=move |_| tour.build(need)>"Build it"</button>
        </div>
    }
}

/// The question's choices once the numbers decide it; until then how far they are, or what the
/// page needs first.
#[component]
fn Choices(tour: Tour, n: usize, asking: Asking) -> impl IntoView {
    move || {
        match asking.asked.get() {
        Some(Asked::Choices(choices)) => choices
            .into_iter()
            .map(|label| {
                let (attribute, text) = (label.clone(), label.clone());
                view! { <button type="button" class="tour-choice" data-tour-choice=attribute on:click=move |_| asking.answer(n, &label)>{text}</button> }
            })
            .collect_view()
            .into_any(),
        Some(Asked::Undecided) => view! { <p class="tour-undecided" role="status">{move || undecided(tour, asking.margin.get())}</p> }.into_any(),
        Some(Asked::Needs(why)) => view! { <p class="hint">{why}</p> }.into_any(),
        None => ().into_any(),
    }
    }
}

/// How far an undecided question is: "The model has not decided yet: the top weight leads
/// the runner-up by 1.1×; the question opens at 1.5×. Training… step 340".
fn undecided(tour: Tour, margin: Option<Margin>) -> String {
    let Some(Margin::Lead { ratio, of }) = margin else {
        return String::new();
    };
    let how = if let Err(e) = tour.live.trainable.get() {
        format!("this model cannot train here ({e}), so its answer stays undecided.")
    } else if tour.live.playing.get() {
        format!("Training… step {}", tour.live.step.get())
    } else {
        format!(
            "Paused at step {}: press Play to train on.",
            tour.live.step.get()
        )
    };
    format!("The model has not decided yet: {of} {ratio:.1}×; the question opens at {DECIDED_LEAD}×. {how}")
}

/// Back, the training's state with its own Play/Pause, and Next.
#[component]
fn TourNav(tour: Tour, chapter: Memo<Option<usize>>) -> impl IntoView {
    let play_state = move || {
        if tour.live.playing.get() {
            "Training: playing"
        } else {
            "Training: paused"
        }
    };
    view! {
        <div class="tour-nav">
            <button type="button" disabled=move || chapter.get() == Some(1) on:click=move |_| turn(tour, -1)>"Back"</button>
            <span class="tour-playing">{play_state}
                <button type="button" class="tour-play" on:click=move |_| tour.live.send(if tour.live.playing.get_untracked() { ToWorker::Pause } else { ToWorker::Play })>
                    {move || if tour.live.playing.get() { "Pause" } else { "Play" }}
                </button>
            </span>
            <button type="button" class="primary" disabled=move || chapter.get() == Some(CHAPTERS.len()) on:click=move |_| turn(tour, 1)>"Next"</button>
        </div>
    }
}

/// Outlines the element `focus` names (`data-tour-focus`) and scrolls it into view; the
/// outline moves off whatever had it before. Returns whether it was found.
pub fn outline(focus: Focus, scroll: bool) -> bool {
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else {
        return false;
    };
    let Ok(Some(target)) = doc.query_selector(&focus.css()) else {
        return false;
    };
    if target.has_attribute("data-tour-focus") {
        return true;
    }
    clear_outline();
    let _ = target.set_attribute("data-tour-focus", "");
    if scroll {
        let options = web_sys::ScrollIntoViewOptions::new();
        // The top of the figure near the top of the window: on a phone the tour covers the
        // lower half.
        options.set_block(web_sys::ScrollLogicalPosition::Start);
        target.scroll_into_view_with_scroll_into_view_options(&options);
    }
    true
}

/// Scrolls the tour's panel just enough that its question's choices are within it, above the
/// panel's own navigation (sticky at its foot on a phone).
fn show_choices(panel: &web_sys::Element) {
    let (Ok(Some(choices)), Ok(nav)) = (
        panel.query_selector(".tour-choices"),
        panel.query_selector(".tour-nav"),
    ) else {
        return;
    };
    let room = panel.get_bounding_client_rect();
    let nav_height = nav.map_or(0.0, |n| n.get_bounding_client_rect().height());
    let bottom = choices.get_bounding_client_rect().bottom();
    let below = bottom - (room.bottom() - nav_height);
    if below > 0.0 {
        panel.set_scroll_top(panel.scroll_top() + below.ceil() as i32 + 4);
    }
}

pub fn clear_outline() {
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    if let Ok(Some(old)) = doc.query_selector("[data-tour-focus]") {
        let _ = old.remove_attribute("data-tour-focus");
    }
}
