//! The "Tiles" panel: step controls, the masked scores with the current block framed, each
//! row's running max and sum, the output rows as they become final, and at the end the check
//! against the full kernel.

use super::data::{
    check, frame, step_count, tile_figures, tiled_head, RowPhase, RowState, TileFrame,
};
use crate::explorer::figure_list::FigureList;
use crate::explorer::figures::Selection;
use engine::inspect::Inspection;
use leptos::prelude::*;
use std::sync::Arc;
use std::time::Duration;

/// Time per step while playing: long enough to read the row table.
const STEP_MS: u64 = 900;

fn value_text(v: Option<f32>) -> String {
    match v {
        None => "—".into(),
        Some(f32::NEG_INFINITY) => "−∞".into(),
        Some(v) => format!("{v:.3}"),
    }
}

fn phase_class(phase: RowPhase) -> &'static str {
    match phase {
        RowPhase::Waiting => "waiting",
        RowPhase::Working => "working",
        RowPhase::Done => "done",
    }
}

/// Where the panel is in the schedule: the step shown, whether it plays on, and the number of
/// steps of the selected head's schedule.
#[derive(Clone, Copy)]
struct Schedule {
    step: RwSignal<usize>,
    playing: RwSignal<bool>,
    steps: Memo<usize>,
}

impl Schedule {
    fn last(self) -> usize {
        self.steps.get().saturating_sub(1)
    }

    /// The step shown, within the schedule.
    fn at(self) -> usize {
        self.step.get().min(self.last())
    }

    /// To step `to` (within the schedule), pausing.
    fn go(self, to: usize) {
        self.playing.set(false);
        self.step.set(to.min(self.last()));
    }

    /// Play from the start when at the end; pause when playing.
    fn toggle(self) {
        if self.playing.get_untracked() {
            self.playing.set(false);
        } else {
            if self.step.get_untracked() >= self.last() {
                self.step.set(0);
            }
            self.playing.set(true);
        }
    }

    /// While playing: the next step after STEP_MS, until the last. The timer is the outside
    /// world.
    fn play_on(self) {
        let Schedule {
            step,
            playing,
            steps,
        } = self;
        let timer = StoredValue::new(None::<TimeoutHandle>);
        let stop_timer = move || {
            if let Some(Some(h)) = timer.try_update_value(Option::take) {
                h.clear();
            }
        };
        Effect::new(move |_| {
            let (s, n, on) = (step.get(), steps.get(), playing.get());
            stop_timer();
            if !on || n == 0 {
                return;
            }
            if s + 1 >= n {
                playing.set(false);
                return;
            }
            let next = move || {
                step.try_update(|s| *s += 1);
            };
            timer.set_value(set_timeout_with_handle(next, Duration::from_millis(STEP_MS)).ok());
        });
        on_cleanup(stop_timer);
    }
}

#[component]
pub fn TilesPanel(ins: Memo<Option<Arc<Inspection>>>, selection: Memo<Selection>) -> impl IntoView {
    let schedule = Schedule {
        step: RwSignal::new(0usize),
        playing: RwSignal::new(true),
        steps: Memo::new(move |_| {
            let sel = selection.get();
            ins.with(|i| i.as_ref().map_or(0, |i| step_count(i, sel)))
        }),
    };
    let step = schedule.step;
    let current = Memo::new(move |_| {
        let (sel, s) = (selection.get(), step.get());
        ins.with(|i| {
            i.as_ref()
                .and_then(|i| tiled_head(i, sel))
                .and_then(|h| frame(h, s))
        })
    });
    let tiles_check = Memo::new(move |_| {
        let sel = selection.get();
        ins.with(|i| i.as_ref().and_then(|i| tiled_head(i, sel)).and_then(check))
    });
    let figures = Memo::new(move |_| {
        let sel = selection.get();
        current.with(|f| {
            let Some(f) = f else { return Vec::new() };
            tiles_check.with(|c| {
                ins.with(|i| {
                    i.as_ref()
                        .map(|i| tile_figures(i, sel, f, c.as_ref()))
                        .unwrap_or_default()
                })
            })
        })
    });
    schedule.play_on();
    let verdict = move || {
        let done = current.with(|f| f.as_ref().is_some_and(|f| f.is_last()));
        tiles_check.with(|c| match (done, c) {
            (true, Some(c)) => view! {
                <p class="tiles-check" data-max-difference=c.max_difference.to_string()>{c.verdict()}</p>
            }
            .into_any(),
            _ => view! {
                <p class="tiles-check pending">"When the last block is done, the weights the tiles give are set beside the Full ones."</p>
            }
            .into_any(),
        })
    };

    // One group: the figures redraw in place step after step.
    let group = Memo::new(|_| ());
    view! {
        <div class="tiles-panel" data-tile-step=move || (schedule.at() + 1).to_string()
            data-tile-steps=move || schedule.steps.get().to_string()>
            <TileControls schedule=schedule current=current/>
            {verdict}
            <div class="tiles-body">
                // Scrolls by itself past a screenful of rows (long texts).
                <div class="tiles-table">
                    <table class="tiles-running">
                        <caption>"Each row's running max m and sum l"</caption>
                        <thead><tr><th>"row"</th><th>"token"</th><th>"m"</th><th>"l"</th></tr></thead>
                        <tbody>{move || running_rows(ins, current)}</tbody>
                    </table>
                </div>
                <div class="figures"><FigureList figures=figures group=group/></div>
            </div>
            <p class="legend tiles-legend">
                <span class="item"><span class="swatch working"></span>" rows of the framed block, still running"</span>
                <span class="item"><span class="swatch done"></span>" rows whose blocks are done: m, l and the output row are final"</span>
            </p>
        </div>
    }
}

/// First, Previous, Play or Pause, Next, Last, a slider over the steps, and where the schedule is.
#[component]
fn TileControls(schedule: Schedule, current: Memo<Option<TileFrame>>) -> impl IntoView {
    let at = move || schedule.at();
    let at_end = move || at() >= schedule.last();
    let go = move |to: usize| schedule.go(to);
    view! {
        <div class="tiles-controls" role="group" aria-label="Tile schedule">
            <button type="button" class="small" on:click=move |_| go(0)>"First block"</button>
            <button type="button" class="small" on:click=move |_| go(at().saturating_sub(1))
                prop:disabled=move || at() == 0>"Previous block"</button>
            <button type="button" class="small play" on:click=move |_| schedule.toggle()>
                {move || if schedule.playing.get() { "Pause blocks" } else { "Play blocks" }}
            </button>
            <button type="button" class="small" on:click=move |_| go(at() + 1)
                prop:disabled=at_end>"Next block"</button>
            <button type="button" class="small" on:click=move |_| go(schedule.last())>"Last block"</button>
            <input type="range" min="0" step="1" aria-label="Tile step"
                prop:max=move || schedule.last().to_string() prop:value=move || at().to_string()
                on:input=move |ev| go(event_target_value(&ev).parse().unwrap_or(0))/>
            <span class="tiles-status" role="status">
                {move || current.with(|f| f.as_ref().map(|f| f.describe()).unwrap_or_default())}
            </span>
        </div>
    }
}

/// One table row per query row: its token, running max m and sum l, coloured by its phase.
fn running_rows(
    ins: Memo<Option<Arc<Inspection>>>,
    current: Memo<Option<TileFrame>>,
) -> impl IntoView {
    let tokens = ins.with(|i| i.as_ref().map(|i| i.tokens.clone()).unwrap_or_default());
    current.with(|f| {
        f.as_ref()
            .map(|f| {
                f.running
                    .iter()
                    .zip(tokens)
                    .enumerate()
                    .map(|(i, (state, token)): (usize, (&RowState, String))| {
                        view! {
                            <tr class=phase_class(state.phase)>
                                <td class="num">{i}</td>
                                <td class="token">{token}</td>
                                <td class="num">{value_text(state.max)}</td>
                                <td class="num">{value_text(state.sum)}</td>
                            </tr>
                        }
                    })
                    .collect_view()
            })
            .unwrap_or_default()
    })
}
