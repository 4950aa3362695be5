//! The training side panel: controls, curves, history, corpus and settings. Thin views over
//! `Live` and two local signals (the corpus draft and the settings).

use crate::live::Live;
use crate::training::batch::BatchPanel;
use crate::training::checkpoint::view::{DownloadCheckpoint, LoadCheckpoint};
use crate::training::curves::LossCurves;
use crate::training::mask_note::TrainingMaskNote;
use engine::batch::MaskMode;
use engine::config::{AttentionScaling, AttentionType, PositionEmbeddingType};
use engine::optim::OptimizerKind;
use engine::repeat::RepeatTask;
use engine::seq2seq::Task;
use leptos::prelude::*;
use protocol::fields::{self, Field};
use protocol::messages::FilesFor;
use protocol::settings::{DEFAULT_PAIR, DEFAULT_SENTENCE, REPEAT_SENTENCE};
use protocol::{
    rules, Architecture, Curves, LabResult, LabSettings, ModelBundle, ModelKind, Preset,
    ProbeInput, ToWorker, WorkerCount,
};

#[component]
pub fn TrainingPanel(
    live: Live,
    corpus: RwSignal<String>,
    settings: RwSignal<LabSettings>,
    probe: RwSignal<ProbeInput>,
) -> impl IntoView {
    // The corpus the current model was built from; editing the text area asks for a Reset.
    let applied_corpus = RwSignal::new(corpus.get_untracked());
    let reset = move || {
        applied_corpus.set(corpus.get_untracked());
        live.reset(corpus.get_untracked(), settings.get_untracked());
    };
    // Memos: the Batch section is rebuilt only when the kind of model changes.
    let kind = Memo::new(move |_| live.info.with(|i| i.as_ref().map(|i| i.kind)));
    let next_token = Memo::new(move |_| kind.get().is_some_and(ModelKind::next_token));
    let encoder_decoder = Memo::new(move |_| kind.get().is_some_and(ModelKind::encoder_decoder));
    let decoder = Memo::new(move |_| kind.get().is_some_and(ModelKind::decoder));
    view! {
        <aside class="training">
            <Controls live=live on_reset=reset/>
            <StopBanner live=live on_reset=reset/>
            <Readout live=live/>
            <LossCurves curves=live.curves curves_b=live.curves_b next_token=Signal::from(next_token)/>
            <HistorySlider live=live probe=probe/>
            // After the History slider, not right under the curves: the batch grows at the first
            // step, and the slider must not move when training starts.
            {move || if encoder_decoder.get() {
                view! {
                    <section class="batch-view" aria-label="Batch">
                        <p class="hint">"Batch: this view shows the batches of one model, MLM + NSP or next token. A sequence-to-sequence batch pairs a source with a target; the Generate card shows what the model writes."</p>
                    </section>
                }
                .into_any()
            } else {
                view! { <BatchPanel batch=live.batch counts=live.counts mask_prob=Signal::derive(move || settings.with(|s| s.mask_prob)) next_token=decoder/> }.into_any()
            }}
            <Checkpoints live=live corpus=corpus settings=settings/>
            <CorpusEditor corpus=corpus applied=applied_corpus/>
            <Settings live=live settings=settings probe=probe on_reset=reset/>
        </aside>
    }
}

/// Play, Pause and Step: the training page's and an embedded view's (`crate::embed`).
#[component]
pub fn PlayControls(live: Live) -> impl IntoView {
    let untrainable = move || {
        live.trainable.with(|t| t.is_err())
            || live.info.with(|i| i.is_none())
            || live.crashed.with(|c| c.is_some())
    };
    view! {
        <button class="play" id="play" disabled=move || untrainable() || live.playing.get()
            on:click=move |_| live.send(ToWorker::Play)>"Play"</button>
        <button disabled=move || !live.playing.get() on:click=move |_| live.send(ToWorker::Pause)>"Pause"</button>
        <button disabled=untrainable on:click=move |_| live.send(ToWorker::Step)>"Step"</button>
    }
}

/// "Step N · 12.3 steps/s · busy", and why the model cannot train or what went wrong.
#[component]
pub fn StepStatus(live: Live) -> impl IntoView {
    view! {
        <p class="status">
            "Step " <strong data-step=move || live.step.get().to_string()>{move || live.step.get()}</strong>
            <span class="rate">{move || if live.playing.get() { format!(" · {:.1} steps/s", live.steps_per_second.get()) } else { String::new() }}</span>
            {move || live.busy.get().map(|b| view! { <span class="busy">" · " {b}</span> })}
        </p>
        {move || live.trainable.get().err().map(|why| view! { <p class="notice">{why.to_string()}</p> })}
        {move || live.error.get().map(|e| view! { <p class="error" role="alert">{e.to_string()}</p> })}
    }
}

#[component]
fn Controls(live: Live, on_reset: impl Fn() + Copy + Send + Sync + 'static) -> impl IntoView {
    // Without a worker, Play, Step and Speed cannot work: disabled, while the banner says why.
    let no_worker = move || live.crashed.with(|c| c.is_some());
    view! {
        <div class="controls" role="group" aria-label="Training controls">
            <PlayControls live=live/>
            // Reset works without a worker: it starts a new one.
            <button on:click=move |_| on_reset()>"Reset"</button>
            <label class="speed">"Speed"
                <select disabled=no_worker on:change=move |ev| live.send(ToWorker::Speed(parse_speed(&event_target_value(&ev))))>
                    <option value="max" selected>"max"</option>
                    <option value="20">"20 steps/s"</option>
                    <option value="5">"5 steps/s"</option>
                    <option value="1">"1 step/s"</option>
                </select>
            </label>
            <label class="workers" title="How many workers compute each step's gradients, each on a share of the batch. Auto uses all but one of this device's cores (at most 4), and fewer when a step is too small to gain.">{fields::WORKERS.label}
                <select disabled=no_worker on:change=move |ev| {
                    let mut count = live.worker_count.get_untracked();
                    if fields::WORKERS.apply(&mut count, &event_target_value(&ev), ()).is_ok() {
                        live.send(ToWorker::Workers(count));
                    }
                }>
                    {WorkerCount::CHOICES.map(|count| view! {
                        <option value=count.key() selected=move || live.worker_count.get() == count>{count.key()}</option>
                    })}
                </select>
            </label>
        </div>
        <StepStatus live=live/>
    }
}

fn parse_speed(value: &str) -> Option<f64> {
    value.parse::<f64>().ok().filter(|v| *v > 0.0)
}

#[component]
fn StopBanner(live: Live, on_reset: impl Fn() + Copy + Send + Sync + 'static) -> impl IntoView {
    // The rewind point: the last kept weights before the loss left its recent range (those kept
    // while it climbed towards the NaN are already wrecked). A point's loss is that of the
    // weights before its step, so a climb from step d condemns the weights of step d − 1 on;
    // without a climb, the weights of the stopped step gave the NaN.
    let target = move || {
        // With Compare, the earlier of A's and B's: a step must be good for both.
        let left = match (
            live.curves.with(Curves::left_range_at),
            live.curves_b.with(Curves::left_range_at),
        ) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let last_good = match left {
            Some(d) => d.saturating_sub(2),
            None => live.step.get().saturating_sub(1),
        };
        live.history.with(|steps| {
            let at = steps.iter().rposition(|&s| s <= last_good).unwrap_or(0);
            Some((at, *steps.get(at)?, left))
        })
    };
    let rewind = move |_| {
        if let Some((at, step, _)) = target() {
            live.send(ToWorker::Rewind { at });
            // The worker goes on from there; the next loss point replaces the later ones.
            live.step.set(step);
        }
        live.stopped.set(None);
    };
    move || {
        live.stopped.get().map(|reason| {
            let (step, left) = target().map_or((0, None), |(_, s, left)| (s, left));
            let why = match left {
                Some(d) => format!("The loss left its recent range at step {d}; step {step} is the last kept point before that."),
                None => format!("Step {step} is the last kept point before the loss became NaN or infinite."),
            };
            view! {
                <div class="stopped" role="alert">
                    <p><strong>"Training stopped. "</strong>{reason.to_string()}</p>
                    <p class="rewind-why">{why}</p>
                    <button on:click=rewind data-rewind-step=step.to_string()>{format!("Rewind to step {step}")}</button>
                    <button on:click=move |_| on_reset()>"Reset"</button>
                </div>
            }
        })
    }
}

/// The latest losses as numbers (the curves draw their history). Before the first step the
/// same line holds dashes, so starting to train moves nothing on the page. With Compare, a
/// line each for model A and model B.
#[component]
fn Readout(live: Live) -> impl IntoView {
    let line = move |curves: RwSignal<Curves>, model: &'static str| {
        let smoothed = curves.with(|c| c.smoothed().last().map(|s| s.loss));
        let who = if model.is_empty() {
            String::new()
        } else {
            format!("{model}: ")
        };
        let decoder = live
            .info
            .with(|i| i.as_ref().is_some_and(|i| i.kind.next_token()));
        match curves.with(|c| c.last().copied()) {
            Some(p) if decoder => view! {
                <p class="readout" data-model=model data-loss=p.loss.to_string() data-smoothed-loss=smoothed.unwrap_or(p.loss).to_string()>
                    {format!("{who}next-token loss {:.3} · next-token acc {:.0}%", p.loss, p.mlm_accuracy * 100.0)}
                </p>
            }
            .into_any(),
            Some(p) => view! {
                <p class="readout" data-model=model data-loss=p.loss.to_string() data-smoothed-loss=smoothed.unwrap_or(p.loss).to_string()>
                    {format!("{who}loss {:.3} · MLM {:.3} · NSP {:.3} · MLM acc {:.0}% · NSP acc {:.0}%",
                        p.loss, p.mlm_loss, p.nsp_loss, p.mlm_accuracy * 100.0, p.nsp_accuracy * 100.0)}
                </p>
            }
            .into_any(),
            None => view! {
                <p class="readout" data-model=model>{format!("{who}loss — · MLM — · NSP — · MLM acc — · NSP acc —")}</p>
            }
            .into_any(),
        }
    };
    move || {
        if live.info_b.with(Option::is_some) {
            view! { {line(live.curves, "A")} {line(live.curves_b, "B")} }.into_any()
        } else {
            line(live.curves, "").into_any()
        }
    }
}

#[component]
fn HistorySlider(live: Live, probe: RwSignal<ProbeInput>) -> impl IntoView {
    let count = move || live.history.with(|h| h.len());
    let position = move || live.history_at.get().unwrap_or(count().saturating_sub(1));
    let on_input = move |ev| {
        let Ok(i) = event_target_value(&ev).parse::<usize>() else {
            return;
        };
        let live_end = i + 1 >= count() && !live.playing.get_untracked();
        live.history_at.set(if live_end && i + 1 == count() {
            None
        } else {
            Some(i)
        });
        live.inspect(probe.get_untracked());
    };
    let label = move || match live.history_at.get() {
        Some(i) => format!(
            "step {} (of {})",
            live.history.with(|h| h.get(i).copied().unwrap_or(0)),
            live.step.get()
        ),
        None => "live".to_string(),
    };
    view! {
        <label class="history">"History"
            <input type="range" min="0" max=move || count().saturating_sub(1).to_string()
                prop:value=move || position().to_string() disabled=move || count() < 2 on:input=on_input/>
            <span class="history-at">{label}</span>
        </label>
        {move || live.history_at.get().map(|_| view! {
            <button class="back-to-live" on:click=move |_| { live.history_at.set(None); live.inspect(probe.get_untracked()); }>"Back to live"</button>
        })}
    }
}

#[component]
fn CorpusEditor(corpus: RwSignal<String>, applied: RwSignal<String>) -> impl IntoView {
    let changed = move || corpus.with(|c| applied.with(|a| c != a));
    view! {
        <label class="corpus">"Corpus"
            <textarea rows="8" spellcheck="false" prop:value=move || corpus.get()
                on:input=move |ev| corpus.set(event_target_value(&ev))></textarea>
        </label>
        {move || changed().then(|| view! {
            <p class="notice">"The corpus changed. Press Reset to rebuild the vocabulary and the model from it (the model's word list comes from the corpus)."</p>
        })}
    }
}

/// An edit of the settings, as the panel's inputs make it: the change, or why not.
type Edit<'a> = &'a dyn Fn(&mut LabSettings) -> LabResult<()>;

#[component]
fn Settings(
    live: Live,
    settings: RwSignal<LabSettings>,
    probe: RwSignal<ProbeInput>,
    on_reset: impl Fn() + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let problem = RwSignal::new(None::<String>);
    // The sentence (and pair) used before Repeat, given back when the task is left.
    let corpus_sentence = StoredValue::new(None::<(String, String)>);
    // Apply a change: architecture → a new model now; seed → at the next Reset; the rest live.
    let change = move |edit: Edit| {
        let before = settings.get_untracked();
        let mut after = before.clone();
        if let Err(e) = edit(&mut after) {
            problem.set(Some(e.to_string()));
            return;
        }
        problem.set(None);
        settings.set(after.clone());
        // The corpus's words are not the task's symbols: a sentence each model can read.
        match (before.repeat_task(), after.repeat_task()) {
            (None, Some(_)) => probe.update(|p| {
                corpus_sentence.set_value(Some((p.text.clone(), p.pair.clone())));
                p.text = REPEAT_SENTENCE.into();
                p.pair.clear();
            }),
            (Some(_), None) => probe.update(|p| {
                let (text, pair) = corpus_sentence
                    .get_value()
                    .unwrap_or_else(|| (DEFAULT_SENTENCE.to_string(), DEFAULT_PAIR.to_string()));
                p.text = text;
                p.pair = pair;
            }),
            _ => {}
        }
        take_effect(live, settings, problem, on_reset, &before, after);
    };
    view! {
        <fieldset class="settings">
            <legend>"Model and settings"</legend>
            <label>{fields::PRESET.label}
                <select on:change=apply(change, &fields::PRESET)>
                    <option value="tiny" selected=move || settings.with(|s| s.preset == Preset::Tiny)>{format!("tiny ({})", Preset::Tiny.describe())}</option>
                    <option value="small" selected=move || settings.with(|s| s.preset == Preset::Small)>{format!("small ({})", Preset::Small.describe())}</option>
                </select>
            </label>
            <KindChoice settings=settings change=change/>
            <RunSettings settings=settings change=change/>
            <ArchitectureGroup settings=settings change=change model=Model::A/>
            <label class="check" title="Train a second model, B, with its own architecture, beside this one: the same corpus, seed and batches, step for step">
                <input type="checkbox" prop:checked=move || settings.with(|s| s.compare.is_some())
                    on:change=move |ev| { let on = event_target_checked(&ev); change(&|s| fields::COMPARE.toggle(s, on)) }/>
                {fields::COMPARE.label}
            </label>
            <Show when=move || settings.with(|s| s.compare.is_some())>
                <ArchitectureGroup settings=settings change=change model=Model::B/>
            </Show>
            {move || problem.get().map(|p| view! { <p class="error">{p}</p> })}
            {move || live.notice.get().map(|n| view! { <p class="notice">{n}</p> })}
        </fieldset>
    }
}

/// What a change of the settings from `before` to `after` does: another kind of model or
/// preset is a new model now; another architecture or seed waits for the next Reset; the rest
/// the worker takes live.
fn take_effect(
    live: Live,
    settings: RwSignal<LabSettings>,
    problem: RwSignal<Option<String>>,
    on_reset: impl Fn(),
    before: &LabSettings,
    mut after: LabSettings,
) {
    if after.kind() != before.kind() {
        // Another objective is another model (a decoder has no NSP head): reset now.
        on_reset();
        live.notice
            .set(Some("A new objective means a new model: reset.".into()));
    } else if after.preset != before.preset {
        // The other preset may have other heads: a KV-heads choice that no longer divides
        // them goes back to one per head.
        let heads = after.preset.config().num_attention_heads;
        let mut architectures = vec![&mut after.architecture];
        architectures.extend(after.compare.as_mut());
        for architecture in architectures {
            if let Some(g) = architecture
                .kv_heads
                .filter(|&g| rules::kv_heads(g as f64, heads).is_err())
            {
                architecture.kv_heads = None;
                problem.set(Some(format!("KV heads {g} does not divide the {heads} heads of this preset: back to {heads}.")));
            }
        }
        settings.set(after);
        on_reset();
        live.notice
            .set(Some("A new architecture means a new model: reset.".into()));
    } else if after.architecture != before.architecture || after.compare != before.compare {
        live.notice.set(Some(
            "The new architecture takes effect at the next Reset (a new model is built with it)."
                .into(),
        ));
    } else if after.seed != before.seed {
        live.notice
            .set(Some("The new seed takes effect at the next Reset.".into()));
    } else {
        live.send(ToWorker::Tune(after));
    }
}

/// An input's change handler: its text applied by its row's rule (`protocol::fields`).
fn apply(
    change: impl Fn(Edit) + Copy + 'static,
    field: &'static Field<LabSettings>,
) -> impl Fn(leptos::ev::Event) + Copy {
    move |ev| {
        let text = event_target_value(&ev);
        change(&|s: &mut LabSettings| field.apply(s, &text, ()))
    }
}

/// The kind of model a Reset builds: the Objective, and the task that goes with it (an
/// encoder–decoder's, or Next token's corpus or Repeat). Every choice is a name and label of
/// `protocol::fields`.
#[component]
fn KindChoice(
    settings: RwSignal<LabSettings>,
    change: impl Fn(Edit) + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let kind = Memo::new(move |_| settings.with(LabSettings::kind));
    let objective = move |ev| {
        let v = event_target_value(&ev);
        change(&|s| {
            if v == fields::SEQ2SEQ.name {
                s.task = Some(s.task.unwrap_or(Task::Reverse));
            } else {
                fields::OBJECTIVE.apply(s, &v, ())?;
                s.task = None;
            }
            Ok(())
        })
    };
    let next_token_task = move |ev| {
        let repeat = event_target_value(&ev) == fields::REPEAT_TASK.name;
        change(&|s| {
            if repeat {
                s.choose_repeat();
            } else {
                s.repeat = false;
            }
            Ok(())
        });
    };
    view! {
        <label title="MLM + NSP: BERT's pre-training. Next token: a decoder (BertLMHeadModel) that predicts each next token and can generate. Sequence to sequence: an encoder–decoder (EncoderDecoderModel) that turns a sentence into another.">{fields::OBJECTIVE.label}
            <select on:change=objective>
                {fields::OBJECTIVES.map(|c| view! {
                    <option value=c.name selected=move || fields::objective_of(kind.get()) == Some(c)>{c.label}</option>
                })}
            </select>
        </label>
        <Show when=move || kind.get().encoder_decoder()>
            <label title="Copy: a sentence to itself. Reverse: a sentence to its words in reverse order. Reply: each line to the line that follows it.">{fields::TASK.label}
                <select on:change=apply(change, &fields::TASK)>
                    {fields::TASKS.map(|(task, c)| view! {
                        <option value=c.name selected=move || kind.get().task() == Some(task)>{c.label}</option>
                    })}
                </select>
            </label>
            <p class="why">"Cross-attention's matrix is not square: its rows are the target's tokens (queries from the decoder) and its columns the source's (keys and values from the encoder), and the two sentences need not be the same length."</p>
        </Show>
        <Show when=move || kind.get().decoder()>
            <label title="Corpus: the corpus's sentences. Repeat: a segment of random symbols, then the same segment again; the second copy can be predicted by copying, and induction heads form to do it (the claim Induction heads).">{fields::REPEAT.label}
                <select data-next-token-task on:change=next_token_task>
                    {[(fields::CORPUS, false), (fields::REPEAT_TASK, true)].map(|(c, repeat)| view! {
                        <option value=c.name selected=move || kind.get().repeat().is_some() == repeat>{c.label}</option>
                    })}
                </select>
            </label>
            <p class="why">"The mask is causal: position t must not see token t + 1, the very token it learns to predict (and, when generating, the tokens after it do not exist yet)."</p>
            <Show when=move || kind.get().repeat().is_some()>
                <p class="why">{repeat_setting()}</p>
            </Show>
        </Show>
    }
}

/// Repeat's setting, as measured (`engine::repeat`), and what may be changed.
fn repeat_setting() -> String {
    let task = RepeatTask::default();
    let unseen = RepeatTask::UNSEEN;
    let thousands = protocol::claims::thousands;
    format!(
        "Repeat trains a model of {} heads on segments of {}–{} symbols at batch {}, learning rate {} after {} warm-up steps, {} positions, no dropout and seed {}: the setting where induction heads formed on tiny within {} steps in {} of {} seeds it was not chosen on (by step {} in the median, {} at worst); seed {} changes soonest. Another seed may take longer, or copy another way. The batch size, learning rate, positions and seed can be changed.",
        RepeatTask::HEADS, task.min_len, task.max_len, RepeatTask::BATCH_SIZE, RepeatTask::LEARNING_RATE, RepeatTask::WARMUP_STEPS, RepeatTask::POSITIONS.label().to_lowercase(), RepeatTask::SEED,
        thousands(unseen.steps), unseen.changed, unseen.count(), thousands(unseen.median_step), thousands(unseen.worst_step), RepeatTask::SEED
    )
}

/// How the model trains: learning rate, batch, length, masking, seed, optimiser, training
/// mask, fixed batch.
#[component]
fn RunSettings(
    settings: RwSignal<LabSettings>,
    change: impl Fn(Edit) + Copy + Send + Sync + 'static,
) -> impl IntoView {
    view! {
        <label>{fields::LEARNING_RATE.label}
            <input type="number" step="any" min="0" prop:value=move || settings.with(|s| s.learning_rate.to_string())
                on:change=apply(change, &fields::LEARNING_RATE)/>
        </label>
        <label>{fields::BATCH_SIZE.label}
            <input type="number" min="1" max="64" step="1" prop:value=move || settings.with(|s| s.batch_size.to_string())
                on:change=apply(change, &fields::BATCH_SIZE)/>
        </label>
        <label title="T: tokens per training example, padded or cut to it (BERT's max_seq_length)">{fields::MAX_LEN.label}
            <input type="number" min=rules::MAX_LEN.start().to_string() max=rules::MAX_LEN.end().to_string() step="1" prop:value=move || settings.with(|s| s.max_len.to_string())
                on:change=apply(change, &fields::MAX_LEN)/>
        </label>
        <label>{fields::MASK_PROB.label}
            <input type="number" min="0.01" max="1" step="0.01" prop:value=move || settings.with(|s| s.mask_prob.to_string())
                on:change=apply(change, &fields::MASK_PROB)/>
        </label>
        <label>{fields::SEED.label}
            <input type="number" min="0" step="1" prop:value=move || settings.with(|s| s.seed.to_string())
                on:change=apply(change, &fields::SEED)/>
        </label>
        <label>{fields::OPTIMIZER.label}
            <select on:change=apply(change, &fields::OPTIMIZER)>
                <option value="adam" selected=move || settings.with(|s| s.optimizer == OptimizerKind::Adam)>"Adam"</option>
                <option value="sgd" selected=move || settings.with(|s| s.optimizer == OptimizerKind::Sgd)>"SGD"</option>
            </select>
        </label>
        <label>{fields::TRAIN_MASK.label}
            <select on:change=apply(change, &fields::TRAIN_MASK)>
                <option value="none" selected=move || settings.with(|s| s.train_mask == MaskMode::None)>"None"</option>
                <option value="padding" selected=move || settings.with(|s| s.train_mask == MaskMode::Padding)>"Padding"</option>
                <option value="causal" selected=move || settings.with(|s| s.train_mask == MaskMode::Causal)>"Causal"</option>
            </select>
        </label>
        <TrainingMaskNote mask=Signal::derive(move || settings.with(|s| s.train_mask))/>
        <label class="check" title="Train on one batch again and again, as the tutorial's loop does: the model memorises it">
            <input type="checkbox" prop:checked=move || settings.with(|s| s.fixed_batch)
                on:change=move |ev| { let on = event_target_checked(&ev); change(&|s| fields::FIXED_BATCH.toggle(s, on)) }/>
            {fields::FIXED_BATCH.label}
        </label>
    }
}

/// Which model an "Architecture" group sets: the model, or Compare's model B.
#[derive(Clone, Copy, PartialEq)]
enum Model {
    A,
    B,
}

impl Model {
    fn legend(self) -> &'static str {
        match self {
            Model::A => "Architecture",
            Model::B => "Model B",
        }
    }

    fn get(self, s: &LabSettings) -> Architecture {
        match self {
            Model::A => s.architecture,
            Model::B => s.compare.unwrap_or_default(),
        }
    }

    fn edit(self, s: &mut LabSettings) -> &mut Architecture {
        match self {
            Model::A => &mut s.architecture,
            Model::B => s.compare.get_or_insert_default(),
        }
    }
}

/// "Architecture": KV heads, Positions, Attention, for the next fresh model (they take effect
/// at Reset); the same group, "Model B", for Compare's second model. `change` applies an edit
/// as the other settings do.
#[component]
fn ArchitectureGroup(
    settings: RwSignal<LabSettings>,
    change: impl Fn(Edit) + Copy + Send + Sync + 'static,
    model: Model,
) -> impl IntoView {
    let heads = move || settings.with(|s| s.preset.config().num_attention_heads);
    let kv_options = move || {
        let h = heads();
        rules::kv_head_options(h)
            .into_iter()
            .map(|g| {
                let label = match g {
                    1 => "1 (multi-query)".to_string(),
                    g if g == h => format!("{g} (multi-head)"),
                    g => format!("{g} (grouped-query)"),
                };
                let chosen = move || settings.with(|s| model.get(s).kv_heads.unwrap_or(h) == g);
                view! { <option value=g.to_string() prop:selected=chosen>{label}</option> }
            })
            .collect_view()
    };
    // Each select applies its value by its row's rule (`protocol::fields`), then the rule
    // for the pair of Positions and Attention.
    let apply = move |field: &'static Field<Architecture, usize>| {
        move |ev| {
            let v = event_target_value(&ev);
            change(&|s| {
                let heads = s.preset.config().num_attention_heads;
                field.apply(model.edit(s), &v, heads)?;
                rules::architecture(model.get(s))?;
                Ok(())
            })
        }
    };
    view! {
        <fieldset class="architecture" data-model=if model == Model::A { "A" } else { "B" }>
            <legend>{model.legend()}</legend>
            <label title="K/V groups: query heads share keys and values in groups (grouped-query attention); 1 is multi-query">{fields::KV_HEADS.label}
                <select on:change=apply(&fields::KV_HEADS)>{kv_options}</select>
            </label>
            <label title="Absolute: learned position embeddings added to the input. Rotary: q and k rotated by their position in every layer. ALiBi: each head adds −m·|i − j| to its scores (softmax attention only).">{fields::POSITIONS.label}
                <select on:change=apply(&fields::POSITIONS)>
                    {PositionEmbeddingType::ALL.map(|p| {
                        let refused = move || settings.with(|s| p.refuses(model.get(s).attention));
                        view! {
                            <option value=p.to_string() prop:selected=move || settings.with(|s| model.get(s).positions == p)
                                prop:disabled=move || refused().is_some() title=move || refused().unwrap_or_default()>{p.label()}</option>
                        }
                    })}
                </select>
            </label>
            <label title="Softmax: softmax(QKᵀ/√d_k + M)V. Linear: φ(Q)(φ(K)ᵀV) normalised, φ = elu + 1; no T×T matrix.">{fields::ATTENTION.label}
                <select on:change=apply(&fields::ATTENTION)>
                    {AttentionType::ALL.map(|a| {
                        let refused = move || settings.with(|s| model.get(s).positions.refuses(a));
                        view! {
                            <option value=a.to_string() prop:selected=move || settings.with(|s| model.get(s).attention == a)
                                prop:disabled=move || refused().is_some() title=move || refused().unwrap_or_default()>{a.label()}</option>
                        }
                    })}
                </select>
            </label>
            <label title="÷√d_k: the scores QKᵀ divided by √d_k before the mask and softmax, as in BERT. None: the raw scores, to see what the scaling is for. Linear attention has no scores to scale.">{fields::SCALING.label}
                <select prop:disabled=move || settings.with(|s| match model.get(s).attention {
                    AttentionType::Softmax => false,
                    AttentionType::Linear => true,
                })
                    on:change=apply(&fields::SCALING)>
                    {AttentionScaling::ALL.map(|a| view! {
                        <option value=a.to_string() prop:selected=move || settings.with(|s| model.get(s).attention.applicable_scaling(model.get(s).scaling) == a)>{a.label()}</option>
                    })}
                </select>
            </label>
            <p class="hint">"For a new model: these take effect at Reset."</p>
        </fieldset>
    }
}

/// Save the current model as files, or load one (picked or dropped).
#[component]
fn Checkpoints(
    live: Live,
    corpus: RwSignal<String>,
    settings: RwSignal<LabSettings>,
) -> impl IntoView {
    let busy = Signal::derive(move || live.busy.with(|b| b.is_some()));
    let download = Callback::new(move |()| live.send(ToWorker::Download(FilesFor::Checkpoint)));
    let loaded = Callback::new(move |picked: ModelBundle| {
        live.load(picked, corpus.get_untracked(), settings.get_untracked());
    });
    view! {
        <div class="checkpoints">
            <DownloadCheckpoint on_click=download disabled=Signal::derive(move || busy.get() || live.info.with(|i| i.is_none()))/>
            <LoadCheckpoint on_loaded=loaded disabled=busy/>
        </div>
    }
}
