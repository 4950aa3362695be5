//! The stepper's "PyTorch" view: the module's code of this stage, its lines lit inside the
//! class they belong to, each figure's tensor with its shape for the live model and the slice
//! drawn, "Copy code" and "Open in PyTorch". A thin view over `protocol::pytorch::CodeView`.

use super::files::PytorchFiles;
use super::OpenInPytorch;
use crate::components::export::copy_text;
use leptos::html::Pre;
use leptos::prelude::*;
use protocol::figure::FigureName;
use protocol::pytorch::{CodeView, FigureTensor, ModelShape};
use protocol::view::Selection;

/// `[1, 4, 17, 17]`.
fn shape_text(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    format!("[{}]", dims.join(", "))
}

/// `{"scores": [1, 4, 17, 17], …}`: each tensor once.
fn shapes_json(tensors: &[FigureTensor]) -> String {
    let mut map = serde_json::Map::new();
    for t in tensors {
        map.entry(t.tensor.clone())
            .or_insert_with(|| serde_json::json!(t.shape));
    }
    serde_json::Value::Object(map).to_string()
}

/// The quoted blocks as plain text, for the clipboard.
fn code_text(view: &CodeView) -> String {
    view.blocks
        .iter()
        .map(|b| {
            b.lines
                .iter()
                .map(|l| l.text.as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[component]
pub fn PytorchView(
    /// The stage's figures' names, and the one the code is about (`super::main_figure`).
    figures: Memo<Vec<FigureName>>,
    figure: Memo<Option<FigureName>>,
    /// The live model's features and sizes (None without a model).
    model: Memo<Option<ModelShape>>,
    selection: Memo<Selection>,
    /// "Open in PyTorch", where the page offers it (not in an embed).
    open: Option<OpenInPytorch>,
) -> impl IntoView {
    let files = PytorchFiles::in_context();
    let opened = RwSignal::new(false);
    let fetched = Memo::new(move |_| files.fetched.get());
    let code = Memo::new(move |_| {
        let Some(Ok(f)) = fetched.get() else {
            return None;
        };
        let (figures, model, sel) = (figures.get(), model.get()?, selection.get());
        Some(f.module.code_view(&figures, &model, sel.head))
    });
    let status = RwSignal::new(None::<String>);
    let pre = NodeRef::<Pre>::new();
    // The DOM is the outside world: bring the first lit line into the code's own view.
    Effect::new(move |_| {
        code.track();
        let Some(pre) = pre.get() else { return };
        if let Ok(Some(line)) = pre.query_selector(".line.lit") {
            let line: web_sys::HtmlElement = wasm_bindgen::JsCast::unchecked_into(line);
            let top = (line.offset_top() - pre.offset_top() - 24).max(0);
            pre.set_scroll_top(top);
        }
    });
    let on_toggle = move |ev: leptos::ev::Event| {
        let open = event_target::<web_sys::HtmlDetailsElement>(&ev).open();
        opened.set(open);
        if open {
            files.want();
        }
    };
    let body = move || {
        if !opened.get() {
            return None;
        }
        Some(match fetched.get() {
            None => view! { <p class="hint">"Fetching the module…"</p> }.into_any(),
            Some(Err(e)) => view! {
                <p class="error" role="alert">{e.to_string()}" "
                    <button type="button" on:click=move |_| files.want()>"Try again"</button>
                </p>
            }
            .into_any(),
            Some(Ok(_)) => code_body(figure, code, selection, pre, status, open).into_any(),
        })
    };
    view! {
        <details class="pytorch" on:toggle=on_toggle>
            <summary>"PyTorch"<span class="hint">" the code of this stage, with its tensors' shapes"</span></summary>
            {body}
        </details>
    }
}

fn code_body(
    figure: Memo<Option<FigureName>>,
    code: Memo<Option<CodeView>>,
    selection: Memo<Selection>,
    pre: NodeRef<Pre>,
    status: RwSignal<Option<String>>,
    open: Option<OpenInPytorch>,
) -> impl IntoView {
    let view_of = move || code.get().unwrap_or_default();
    // The main figure's tensor, else the last figure the code computes.
    let main = Memo::new(move |_| {
        let v = view_of();
        let named = figure.get();
        v.tensors
            .iter()
            .find(|t| Some(t.figure) == named)
            .or(v.tensors.last())
            .cloned()
    });
    let lines = move || {
        let v = view_of();
        let mut out = Vec::new();
        for (k, block) in v.blocks.iter().enumerate() {
            if k > 0 {
                out.push(view! { <span class="line gap">"\n"</span> }.into_any());
            }
            for line in &block.lines {
                let text = format!("{}\n", line.text);
                out.push(
                    view! { <span class="line" class:lit=line.lit data-line=line.number>{text}</span> }
                        .into_any(),
                );
            }
        }
        out
    };
    let where_text = move || {
        let v = view_of();
        let sel = selection.get();
        let blocks: Vec<String> = v.blocks.iter().map(|b| b.title.clone()).collect();
        format!(
            "{}, layer {} (model.layers[{}]), head {}. Lit: the lines that compute this stage's figures.",
            blocks.join(" · "),
            sel.layer + 1,
            sel.layer,
            sel.head + 1
        )
    };
    let tensors = move || {
        view_of()
            .tensors
            .into_iter()
            .map(|t| {
                let axes = t
                    .axes
                    .iter()
                    .filter(|a| !a.is_empty())
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ");
                view! {
                    <li data-tensor-of=t.figure.name()>
                        <code>{format!("{}: {}", t.tensor, shape_text(&t.shape))}</code>
                        {format!(" = {axes}; the figure “{}” draws ", t.figure.name())}
                        <code>{t.slice.clone()}</code>
                    </li>
                }
            })
            .collect_view()
    };
    let copy = move |_| {
        let text = code_text(&view_of());
        copy_text(&text, move |r| {
            status.set(Some(match r {
                Ok(()) => "Copied the code.".into(),
                Err(e) => format!("Could not copy: {e}"),
            }))
        });
    };
    let empty = move || code.with(|c| c.as_ref().is_none_or(|c| c.blocks.is_empty()));
    view! {
        <Show when=move || !empty() fallback=|| view! {
            <p class="hint">"No line of the module computes this stage's figures for this model."</p>
        }>
            <p class="pytorch-where">{where_text}</p>
            <pre class="pytorch-code" node_ref=pre tabindex="0"
                data-code="pytorch"
                data-figure=move || main.get().map(|t| t.figure.name())
                data-tensor=move || main.get().map(|t| t.tensor)
                data-slice=move || main.get().map(|t| t.slice)
                data-shapes=move || shapes_json(&view_of().tensors)
                data-inspected-step=move || open.and_then(|o| o.inspected_step())
                aria-label="PyTorch code of this stage"><code>{lines}</code></pre>
            <ul class="pytorch-tensors">{tensors}</ul>
        </Show>
        <div class="pytorch-actions">
            <button type="button" on:click=copy prop:disabled=empty>"Copy code"</button>
            {open.map(|open| view! {
                <button type="button" class="open-in-pytorch"
                    prop:disabled=move || open.busy.get()
                    on:click=move |_| open.start(status)>"Open in PyTorch"</button>
            })}
            <span class="hint" role="status">{move || status.get()}</span>
        </div>
        <p class="hint pytorch-source">"From "<code>"pytorch/attention_lab.py"</code>": plain PyTorch in the tutorial's classes. “Open in PyTorch” downloads a notebook with this module, this model's weights at this step and this sentence, which prints the same weights."</p>
    }
}
