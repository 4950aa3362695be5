//! The attention explorer, the app's main screen: text in, every stage of self-attention out,
//! per layer and head. Thin views over three signals: the explorer edits `probe`, the app
//! answers with `inspection`, and everything drawn comes from that `Inspection`.

pub mod figure_list;
pub mod figures;
pub mod gelu_chart;
pub mod generate;
pub mod heads;
pub mod input;
pub mod model_view;
pub mod predictions;
pub mod rotation;
pub mod stage_figures;
pub mod stepper;
pub mod tiles;
pub mod tokens;

use crate::components::heatmap_figure::HeatmapFigure;
use crate::format;
use crate::keys;
use crate::live::{Generation, Shown};
use engine::config::AttentionType;
use engine::inspect::Inspection;
use figures::{is_encoder_decoder, part_shape, rollout_figure, weights_figure, Part, Selection};
use generate::GeneratePanel;
use heads::HeadsView;
use input::ProbeForm;
use leptos::prelude::*;
use model_view::{HeadPicker, ModelView};
use predictions::Predictions;
use protocol::figure::FigureName;
use protocol::stage::{Stage, Stages};
use protocol::view::Showing;
use protocol::{GenerationSettings, LabError, ModelInfo, ProbeInput};
use std::sync::Arc;
use stepper::StagePanel;
use tokens::{pad_note, TokenChips};

/// Side of the always-visible softmax figure beside the model view.
const SUMMARY_GRID: u32 = 240;

/// The truncation notice, when the text did not fit the model's positions.
pub fn truncation_notice(ins: &Inspection, max_positions: Option<usize>) -> Option<String> {
    ins.truncated.then(|| {
        let p = max_positions.unwrap_or(ins.tokens.len());
        format!(
            "Truncated: the model reads at most {p} positions, so the text was cut to {} tokens; the rest is not shown.",
            ins.tokens.len()
        )
    })
}

/// What the explorer looks at beside the probe: the stage, the layer, head and part, and
/// which of Compare's models. The app holds it, so a link and the tour can set it too.
#[derive(Clone, Copy)]
pub struct ExplorerView {
    pub stage: RwSignal<Stage>,
    pub selection: RwSignal<Selection>,
    pub showing: RwSignal<Showing>,
}

impl ExplorerView {
    pub fn new() -> ExplorerView {
        ExplorerView {
            stage: RwSignal::new(Stage::FIRST_SHOWN),
            selection: RwSignal::new(Selection::default()),
            showing: RwSignal::new(Showing::A),
        }
    }
}

impl Default for ExplorerView {
    fn default() -> Self {
        ExplorerView::new()
    }
}

/// The inspection in `shown`, when there is one.
fn inspection_of(shown: Signal<Shown>) -> Memo<Option<Arc<Inspection>>> {
    Memo::new(move |_| shown.with(|s| s.as_ref().and_then(|r| r.as_ref().ok().cloned())))
}

/// The stages an inspection has: "Tiles" when tiled, φ instead of scores when linear.
fn stages_of(ins: Memo<Option<Arc<Inspection>>>) -> Memo<Stages> {
    stages_for(ins, Memo::new(|_| Selection::default()))
}

/// `stages_of` for the selected attention: cross-attention's own walk.
fn stages_for(ins: Memo<Option<Arc<Inspection>>>, selection: Memo<Selection>) -> Memo<Stages> {
    Memo::new(move |_| Stages {
        tiled: ins.with(|i| i.as_ref().is_some_and(|i| tiles::data::is_tiled(i))),
        attention: ins.with(|i| i.as_ref().map(|i| i.attention).unwrap_or_default()),
        cross: selection.get().part == Part::Cross,
    })
}

/// What the explorer shows, derived once from the app's signals: which model (A or B, while
/// comparing), its inspection, the layer and head clamped to it, and the attention the stepper
/// walks. The Explorer lays all of it out; an embedded page (`crate::embed`) one part.
#[derive(Clone, Copy)]
pub struct Focus {
    pub comparing: Memo<bool>,
    pub showing: Memo<Showing>,
    /// A's or B's, as `showing` says (A's when both are shown).
    pub inspection: Signal<Shown>,
    pub info: Signal<Option<ModelInfo>>,
    pub ins: Memo<Option<Arc<Inspection>>>,
    pub error: Memo<Option<LabError>>,
    pub encoder_decoder: Memo<bool>,
    /// Layers × heads of the selected attention.
    pub shape: Memo<(usize, usize)>,
    /// The chosen layer and head, inside the model.
    pub selection: Memo<Selection>,
    /// What the stepper reads: the encoder's inspection when the encoder is chosen.
    pub stage_ins: Memo<Option<Arc<Inspection>>>,
    pub stage_selection: Memo<Selection>,
    pub stages: Memo<Stages>,
    pub view: ExplorerView,
}

impl Focus {
    /// `inspection_b` and `info_b` are Compare's model B (None when there is none).
    pub fn new(
        inspection_a: Signal<Shown>,
        info_a: Signal<Option<ModelInfo>>,
        inspection_b: Signal<Shown>,
        info_b: Signal<Option<ModelInfo>>,
        view: ExplorerView,
    ) -> Focus {
        let chosen_model = view.showing;
        let comparing = Memo::new(move |_| info_b.with(Option::is_some));
        let showing = Memo::new(move |_| {
            if comparing.get() {
                chosen_model.get()
            } else {
                Showing::A
            }
        });
        let inspection = Signal::derive(move || {
            if showing.get() == Showing::B {
                inspection_b.get()
            } else {
                inspection_a.get()
            }
        });
        let info = Signal::derive(move || {
            if showing.get() == Showing::B {
                info_b.get()
            } else {
                info_a.get()
            }
        });
        let ins = inspection_of(inspection);
        let error = Memo::new(move |_| {
            inspection.with(|s| s.as_ref().and_then(|r| r.as_ref().err().cloned()))
        });
        let encoder_decoder =
            Memo::new(move |_| ins.with(|i| i.as_ref().is_some_and(|i| is_encoder_decoder(i))));
        let chosen = view.selection;
        // One BERT has only its self-attention: a part chosen for an encoder–decoder falls back.
        let part = Memo::new(move |_| {
            if encoder_decoder.get() {
                chosen.get().part
            } else {
                Part::SelfAttention
            }
        });
        let shape = Memo::new(move |_| {
            let part = part.get();
            ins.with(|i| i.as_ref().map(|i| part_shape(i, part)).unwrap_or((0, 0)))
        });
        let selection = Memo::new(move |_| {
            let (layers, heads) = shape.get();
            Selection {
                part: part.get(),
                ..chosen.get()
            }
            .clamped(layers, heads)
        });
        // The stepper reads the encoder's inspection as it reads one BERT's.
        let encoder_ins = Memo::new(move |_| {
            ins.with(|i| {
                i.as_ref()
                    .and_then(|i| i.source.as_deref())
                    .map(|s| Arc::new(s.clone()))
            })
        });
        let stage_ins = Memo::new(move |_| {
            if part.get() == Part::Encoder {
                encoder_ins.get()
            } else {
                ins.get()
            }
        });
        let stage_selection = Memo::new(move |_| {
            let sel = selection.get();
            match sel.part {
                Part::Encoder => Selection {
                    part: Part::SelfAttention,
                    ..sel
                },
                _ => sel,
            }
        });
        Focus {
            comparing,
            showing,
            inspection,
            info,
            ins,
            error,
            encoder_decoder,
            shape,
            selection,
            stage_ins,
            stage_selection,
            stages: stages_for(stage_ins, stage_selection),
            view,
        }
    }

    /// An inspection is on screen: no error, and not waiting for the first.
    pub fn ok(self) -> bool {
        self.error.with(Option::is_none) && self.inspection.with(Option::is_some)
    }

    /// ← and → walk the stages, unless the user is typing in a field.
    pub fn listen_to_arrows(self) {
        let (stage, stages) = (self.view.stage, self.stages);
        let keys = window_event_listener(leptos::ev::keydown, move |ev| {
            if keys::is_editing(&ev) {
                return;
            }
            match ev.key().as_str() {
                "ArrowRight" => stage.update(|s| *s = stages.get_untracked().next(*s)),
                "ArrowLeft" => stage.update(|s| *s = stages.get_untracked().previous(*s)),
                _ => return,
            }
            ev.prevent_default();
        });
        on_cleanup(move || keys.remove());
    }
}

/// Why nothing is drawn: the input's error, or "Reading the text…" while the first inspection
/// is on its way (not when no trainer runs: the page says why elsewhere).
#[component]
pub fn InspectionStatus(focus: Focus, #[prop(into)] no_trainer: Signal<bool>) -> impl IntoView {
    view! {
        {move || focus.error.get().map(|e| view! {
            <div class="error-box" role="alert">
                <strong>"Nothing to show for this input. "</strong>
                <span class="message">{e.to_string()}</span>
            </div>
        })}
        {move || (focus.inspection.with(Option::is_none) && !no_trainer.get()).then(|| view! { <p class="hint">"Reading the text…"</p> })}
    }
}

/// The model view with its layer and head pickers, and the chosen head's softmax weights.
#[component]
pub fn Overview(focus: Focus, #[prop(optional)] children: Option<Children>) -> impl IntoView {
    let (ins, selection) = (focus.ins, focus.selection);
    let summary = Memo::new(move |_| {
        let sel = selection.get();
        ins.with(|i| {
            i.as_ref()
                .and_then(|i| weights_figure(i, sel, SUMMARY_GRID))
                .map(|f| f.data)
                .unwrap_or_default()
        })
    });
    let chosen = focus.view.selection;
    view! {
        <div class="model-card">
            <HeadPicker shape=focus.shape selection=selection chosen=chosen/>
            <ModelView ins=ins selection=selection chosen=chosen/>
            {children.map(|c| c())}
        </div>
        <div class="summary">
            <HeatmapFigure data=summary figure=FigureName::SummaryWeights max_grid=SUMMARY_GRID/>
        </div>
    }
}

/// `inspection_b` and `info_b` are Compare's model B (None when there is no B): the explorer
/// then shows A, B, or both side by side.
#[component]
pub fn Explorer(
    probe: RwSignal<ProbeInput>,
    inspection: Signal<Shown>,
    info: Signal<Option<ModelInfo>>,
    #[prop(optional, into)] inspection_b: Signal<Shown>,
    #[prop(optional, into)] info_b: Signal<Option<ModelInfo>>,
    /// A decoder's Generate: its state, and the requests to start (the Sentence is the
    /// prompt) and stop it. Without `on_generate` there is no Generate.
    #[prop(optional, into)]
    generation: Signal<Generation>,
    #[prop(optional)] on_generate: Option<Callback<(String, GenerationSettings)>>,
    #[prop(optional)] on_stop_generating: Option<Callback<()>>,
    /// No trainer runs (it stopped or could not start, and the page says why): nothing is
    /// being read, so the explorer does not say it is.
    #[prop(optional, into)]
    no_trainer: Signal<bool>,
    /// Stage, layer, head and model shown; fresh when the caller does not hold them.
    #[prop(optional)]
    view: ExplorerView,
) -> impl IntoView {
    let focus = Focus::new(inspection, info, inspection_b, info_b, view);
    let seq2seq_model = Signal::derive(move || {
        focus
            .info
            .with(|i| i.as_ref().is_some_and(|i| i.kind.encoder_decoder()))
    });
    target_from_generation(generation, seq2seq_model, probe);
    focus.listen_to_arrows();
    let generate = GenerateRequests {
        generation,
        on_generate,
        on_stop: on_stop_generating,
    };
    let ok = move || focus.ok();
    let both = move || focus.showing.get() == Showing::Both;
    let models = move || {
        if both() {
            view! { <SideBySide focus=focus a=(inspection, info) b=(inspection_b, info_b)/> }
                .into_any()
        } else {
            view! { <SingleModel focus=focus/> }.into_any()
        }
    };
    view! {
        <section class="explorer" id="figures" tabindex="-1" aria-label="Figures">
            <ProbeCard focus=focus probe=probe generate=generate/>
            <InspectionStatus focus=focus no_trainer=no_trainer/>
            <Show when=ok>
                <div class="explorer-body">
                    <div class="overview">
                        <Overview focus=focus>
                            {move || both().then(|| view! {
                                <p class="hint">"Model A here and beside; the layer and head chosen apply to both models below."</p>
                            })}
                        </Overview>
                        <Show when=move || !focus.encoder_decoder.get()>
                            <Rollout ins=focus.ins/>
                        </Show>
                    </div>
                    {models}
                </div>
            </Show>
        </section>
    }
}

/// An encoder–decoder's generation ends as its Target, so what comes next (a snapshot while
/// training, another head) reads the target it wrote.
fn target_from_generation(
    generation: Signal<Generation>,
    seq2seq_model: Signal<bool>,
    probe: RwSignal<ProbeInput>,
) {
    Effect::watch(
        move || generation.with(|g| (g.running, g.steps.len())),
        move |&(running, _), previous, _| {
            let ended = !running && previous.is_some_and(|&(was, _)| was);
            if ended && seq2seq_model.get_untracked() {
                let target = generation.with_untracked(|g| {
                    g.steps
                        .iter()
                        .map(|s| s.token.as_str())
                        .take_while(|t| *t != "[SEP]")
                        .collect::<Vec<_>>()
                        .join(" ")
                });
                probe.update(|p| p.target = target);
            }
        },
        false,
    );
}

/// Generate's state and the requests to start and stop it, as the Explorer was given them.
#[derive(Clone, Copy)]
struct GenerateRequests {
    generation: Signal<Generation>,
    on_generate: Option<Callback<(String, GenerationSettings)>>,
    on_stop: Option<Callback<()>>,
}

/// The probe's form, Generate for a model that generates, the model switch while comparing,
/// and what the text became: notices, token chips, predictions.
#[component]
fn ProbeCard(
    focus: Focus,
    probe: RwSignal<ProbeInput>,
    generate: GenerateRequests,
) -> impl IntoView {
    let Focus { info, ins, .. } = focus;
    let tokens = Signal::derive(move || ins.with(|i| i.as_ref().map(|i| i.tokens.len())));
    // From the model info, or the trace itself (φ recorded) when there is none.
    let linear = Signal::derive(move || {
        let linear = |a: AttentionType| match a {
            AttentionType::Softmax => false,
            AttentionType::Linear => true,
        };
        info.with(|i| i.as_ref().is_some_and(|i| linear(i.architecture.attention)))
            || ins.with(|i| i.as_ref().is_some_and(|i| linear(i.attention)))
    });
    let has = move |flag: fn(&ModelInfo) -> bool| {
        Signal::derive(move || info.with(|i| i.as_ref().is_some_and(flag)))
    };
    let seq2seq_model = has(|i| i.kind.encoder_decoder());
    let generate_panel = move || {
        let generates = info.with(|i| i.as_ref().is_some_and(|i| i.kind.next_token()));
        let (Some(on_generate), Some(on_stop)) = (generate.on_generate, generate.on_stop) else {
            return None;
        };
        generates.then(|| {
            let on_generate = Callback::new(move |settings| {
                on_generate.run((probe.with_untracked(|p| p.text.clone()), settings));
            });
            view! { <GeneratePanel generation=generate.generation on_generate=on_generate on_stop=on_stop encoder_decoder=seq2seq_model/> }
        })
    };
    view! {
        <div class="probe-card">
            <ProbeForm probe=probe tokens=tokens linear=linear
                kind=Signal::derive(move || info.with(|i| i.as_ref().map(|i| i.kind).unwrap_or_default()))/>
            {generate_panel}
            <Show when=move || focus.comparing.get()>
                <ModelSwitch chosen=focus.view.showing/>
            </Show>
            <Show when=move || focus.ok()>
                {notices(focus, probe)}
                <TokenChips ins=ins/>
                <Predictions ins=ins info=info/>
            </Show>
        </div>
    }
}

/// What happened to the text on its way in: truncated to the model's positions, or padded.
fn notices(focus: Focus, probe: RwSignal<ProbeInput>) -> impl IntoView {
    let Focus { info, ins, .. } = focus;
    move || {
        let max = info.with(|i| i.as_ref().map(|i| i.max_positions));
        let pad_to = probe.with(|p| p.pad_to);
        ins.with(|i| {
            let i = i.as_ref()?;
            let notes: Vec<String> = truncation_notice(i, max)
                .into_iter()
                .chain(pad_note(pad_to, i))
                .collect();
            (!notes.is_empty()).then(|| {
                notes
                    .into_iter()
                    .map(|n| view! { <p class="notice" role="status">{n}</p> })
                    .collect_view()
            })
        })
    }
}

/// Attention rollout over all layers, with what it is and what it leaves out.
#[component]
fn Rollout(ins: Memo<Option<Arc<Inspection>>>) -> impl IntoView {
    let rollout = Memo::new(move |_| {
        ins.with(|i| {
            i.as_ref()
                .map(|i| rollout_figure(i, SUMMARY_GRID).data)
                .unwrap_or_default()
        })
    });
    view! {
        <div class="rollout">
            <HeatmapFigure data=rollout figure=FigureName::AttentionRollout max_grid=SUMMARY_GRID/>
            <p class="why">"What each token draws on across all layers: the product over layers of 0.5·Ā + 0.5·I, where Ā is the layer's weights averaged over heads and 0.5·I stands for the residual connection (Abnar & Zuidema, 2020)."</p>
            <p class="why">"Only an approximation: it treats attention as plain mixing and ignores the values, W_O, the feed-forward network and LayerNorm."</p>
        </div>
    }
}

/// One model's stepper and heads: A's, or B's while comparing.
#[component]
fn SingleModel(focus: Focus) -> impl IntoView {
    view! {
        <div class="model-column">
            <StagePanel ins=focus.stage_ins selection=focus.stage_selection stage=focus.view.stage
                stages=focus.stages info=focus.info which=focus.showing/>
            <HeadsView ins=focus.ins/>
        </div>
    }
}

/// Compare's models A and B side by side, each its own stepper at the same stage, layer and
/// head. `a` and `b` are each model's inspection and info.
#[component]
fn SideBySide(
    focus: Focus,
    a: (Signal<Shown>, Signal<Option<ModelInfo>>),
    b: (Signal<Shown>, Signal<Option<ModelInfo>>),
) -> impl IntoView {
    view! {
        <div class="side-by-side">
            <ModelColumn focus=focus name="A" shown=a.0 info=a.1/>
            <ModelColumn focus=focus name="B" shown=b.0 info=b.1/>
        </div>
    }
}

/// Model `name` (A or B) in its own column: its heading, error, stepper and heads.
#[component]
fn ModelColumn(
    focus: Focus,
    name: &'static str,
    shown: Signal<Shown>,
    info: Signal<Option<ModelInfo>>,
) -> impl IntoView {
    let ins = inspection_of(shown);
    let stages = stages_of(ins);
    let error = move || shown.with(|s| s.as_ref().and_then(|r| r.as_ref().err().cloned()));
    let heading = move || {
        let arch = info.with(|i| i.as_ref().map(format::architecture_name));
        format!("Model {name} · {}", arch.unwrap_or_default())
    };
    let which = Signal::stored(if name == "B" { Showing::B } else { Showing::A });
    view! {
        <div class="model-column" data-model=name>
            <h2 class="model-heading">{heading}</h2>
            {move || error().map(|e| view! { <p class="error" role="alert">{e.to_string()}</p> })}
            <StagePanel ins=ins selection=focus.selection stage=focus.view.stage stages=stages info=info
                which=which/>
            <HeadsView ins=ins/>
        </div>
    }
}

/// "Model": A, B or Both, while comparing.
#[component]
fn ModelSwitch(chosen: RwSignal<Showing>) -> impl IntoView {
    let buttons = Showing::ALL
        .into_iter()
        .map(|which| {
            view! {
                <button type="button" data-model=which.label()
                    aria-pressed=move || (chosen.get() == which).to_string()
                    on:click=move |_| chosen.set(which)>{which.label()}</button>
            }
        })
        .collect_view();
    view! {
        <div class="model-switch" role="group" aria-label="Model">
            <span class="label">"Model"</span>
            {buttons}
        </div>
    }
}
