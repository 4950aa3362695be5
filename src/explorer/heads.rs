//! The Heads view, after the last layer: the pooler to the NSP logits and softmax, and the MLM
//! transform to the tied decoder to the top 5 at each [MASK]. Numbers straight from the
//! inspection's trace.

use super::figures::{mlm_transform_figure, pooled_figure, Figure};
use super::predictions::percent;
use super::tokens::is_pair;
use crate::components::heatmap_figure::{HeatmapData, HeatmapFigure, HeatmapOptions};
use engine::inspect::{Inspection, MaskPrediction};
use leptos::prelude::*;
use protocol::figure::FigureName;
use std::sync::Arc;

/// A figure that may be absent (no heads), as the heatmap component's two signals; `name` is
/// the figure's own (`pooled_figure`'s, `mlm_transform_figure`'s).
fn figure_view(figure: Memo<Option<Figure>>, name: FigureName) -> impl IntoView {
    let data = Memo::new(move |_| {
        figure.with(|f| {
            f.as_ref()
                .map(|f| f.data.clone())
                .unwrap_or_else(HeatmapData::default)
        })
    });
    let options = Memo::new(move |_| {
        figure.with(|f| {
            f.as_ref()
                .map(|f| f.options)
                .unwrap_or_else(HeatmapOptions::default)
        })
    });
    let max_grid = figure.with_untracked(|f| f.as_ref().map_or(300, |f| f.max_grid));
    view! { <HeatmapFigure data=data figure=name options=options max_grid=max_grid/> }
}

/// "IsNext" and "NotNext" with their logits and probabilities, as the NSP head gives them.
fn nsp_table(logits: [f32; 2], probabilities: [f32; 2]) -> impl IntoView {
    let row = |name: &'static str, k: usize| {
        view! {
            <tr>
                <th scope="row">{name}</th>
                <td class="num">{format!("{:.3}", logits[k])}</td>
                <td class="num">{percent(probabilities[k])}</td>
                <td class="bar-cell"><span class="bar"><span style:width=format!("{:.1}%", probabilities[k] * 100.0)></span></span></td>
            </tr>
        }
    };
    view! {
        <table class="nsp-table" data-nsp=format!("[{},{}]", probabilities[0], probabilities[1])>
            <thead><tr><th></th><th>"logit"</th><th>"softmax"</th><th></th></tr></thead>
            <tbody>{row("IsNext", 0)}{row("NotNext", 1)}</tbody>
        </table>
    }
}

/// "#5 → dog 23.1% · cat 9.0% …", with the known answer marked right or wrong.
fn top5_line(m: &MaskPrediction) -> impl IntoView {
    let candidates = m
        .top
        .iter()
        .map(|c| format!("{} {}", c.token, percent(c.probability)))
        .collect::<Vec<_>>()
        .join(" · ");
    let verdict = m.answer.as_ref().map(|answer| {
        let right = m.correct == Some(true);
        view! {
            <span class="verdict" class:right=right class:wrong=!right>
                {if right { format!(" ✓ {answer}") } else { format!(" ✗ answer {answer}") }}
            </span>
        }
    });
    view! {
        <li>
            <span class="where">"[MASK] #"{m.position}" → "</span>
            <span class="cands">{candidates}</span>
            {verdict}
        </li>
    }
}

#[component]
pub fn HeadsView(ins: Memo<Option<Arc<Inspection>>>) -> impl IntoView {
    let pooled = Memo::new(move |_| ins.with(|i| i.as_ref().and_then(|i| pooled_figure(i))));
    let transform =
        Memo::new(move |_| ins.with(|i| i.as_ref().and_then(|i| mlm_transform_figure(i))));
    let has_heads = move || pooled.with(Option::is_some) || transform.with(Option::is_some);
    // A decoder (BertLMHeadModel): the LM head alone, no pooler or NSP.
    let decoder = move || pooled.with(Option::is_none) && transform.with(Option::is_some);
    let nsp = move || {
        ins.with(|i| {
            let i = i.as_ref()?;
            let heads = &i.trace.heads;
            let table = nsp_table(heads.nsp_logits?, heads.nsp_probabilities?);
            let single = (!is_pair(i)).then(|| {
                view! { <p class="hint">"One sentence only: NSP still reads [CLS], but the question \"does B follow A?\" needs a second sentence (type one in \"Sentence B\")."</p> }
            });
            Some(view! { {table} {single} })
        })
    };
    let top5 = move || {
        ins.with(|i| {
            let i = i.as_ref()?;
            if decoder() {
                return Some(
                    view! { <p class="hint">"A decoder predicts the next token at every position: Generate, above, shows its top 5 at each step."</p> }
                        .into_any(),
                );
            }
            if i.mask_predictions.is_empty() {
                return Some(
                    view! { <p class="hint">"No [MASK] in the text: type one to see the decoder's top 5."</p> }
                        .into_any(),
                );
            }
            let lines = i.mask_predictions.iter().map(top5_line).collect_view();
            Some(view! { <ol class="heads-top5" aria-label="Top 5 at each [MASK]">{lines}</ol> }.into_any())
        })
    };
    view! {
        <section class="heads-view" aria-label="Heads">
            <h2 class="panel-title">"Heads " <span class="sub">"what the last layer's output feeds"</span></h2>
            <Show when=has_heads fallback=|| view! {
                <p class="hint">"This model has no pre-training heads (pooler, NSP, MLM): it only gives hidden states."</p>
            }>
                <div class="heads-grid">
                    <Show when=move || !decoder()>
                    <div class="head-card">
                        <h3>"Next-sentence prediction"</h3>
                        <p class="formula">"pooled = tanh(W·h"<sub>"[CLS]"</sub>" + b) → logits = pooled W"<sub>"NSP"</sub>"ᵀ + b"<sub>"NSP"</sub>" → softmax"</p>
                        <p class="why">"Only [CLS]'s final vector reaches the NSP classifier: the pooler squashes it with tanh, and two logits decide IsNext against NotNext."</p>
                        {figure_view(pooled, FigureName::PoolerOutput)}
                        {nsp}
                    </div>
                    </Show>
                    <div class="head-card">
                        <h3>{move || if decoder() { "Language-model head (next token)" } else { "Masked-language model" }}</h3>
                        <p class="formula">"t = LayerNorm(GELU(h W"<sub>"t"</sub>" + b"<sub>"t"</sub>")) → logits = t E"<sub>"token"</sub>"ᵀ + b → softmax"</p>
                        <p class="why tied-note">"The decoder's weights are the token embeddings: E_token of the Embeddings stage, shared (tied), not a matrix of its own. Each position's t is scored against every word's embedding, so the words whose embeddings it points along win."</p>
                        {figure_view(transform, FigureName::MlmTransform)}
                        {top5}
                    </div>
                </div>
            </Show>
        </section>
    }
}
