//! "Open in PyTorch": a Jupyter notebook (nbformat 4) of the live model, built from the
//! template `pytorch/notebook.py` (jupytext's percent format: a cell starts at `# %%`, a
//! markdown one at `# %% [markdown]`), the module `pytorch/attention_lab.py`, the model's
//! weights and what the page shows. Plain text and bytes in, the notebook's JSON out.

use crate::error::{LabError, LabResult};
use crate::{fields, LabSettings, ModelKind};
use serde::Serialize;
use serde_json::{json, Value};

/// What the template's cells read, as `DATA`: the model, the input on screen and how to
/// train it further. The template documents each field.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct NotebookData {
    pub title: String,
    pub step: u64,
    /// The page's address for this view.
    pub link: String,
    /// The model's objective as the Objective select names it (`objective`): "mlm-nsp",
    /// "next-token" or "seq2seq"; "none" for a model without heads.
    pub objective: &'static str,
    /// The model's config.json.
    pub config: Value,
    pub vocab: Vec<String>,
    pub word_level: bool,
    pub tokenizer_config: Option<Value>,
    /// The input the page inspects: the decoder's for an encoder–decoder.
    pub input: NotebookInput,
    /// An encoder–decoder's source, its encoder's input.
    pub source: Option<NotebookInput>,
    /// "padding", "causal" or "none".
    pub mask: &'static str,
    pub window: Option<usize>,
    pub view: NotebookView,
    pub training: NotebookTraining,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct NotebookInput {
    pub text: String,
    pub pair: Option<String>,
    pub tokens: Vec<String>,
    pub input_ids: Vec<u32>,
    pub token_type_ids: Vec<u32>,
    pub attention_mask: Vec<u8>,
}

/// Which attention the page shows: "self", "encoder" or "cross"; layer and head from 0.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct NotebookView {
    pub part: &'static str,
    pub layer: usize,
    pub head: usize,
    /// The stepper's stage (its link name) and the figure the code view names.
    pub stage: String,
    pub figure: String,
}

/// A few steps more of the run's training in the notebook.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct NotebookTraining {
    /// "corpus", "repeat", or a sequence-to-sequence task: "copy", "reverse", "reply" (`task`).
    pub task: &'static str,
    pub corpus: Vec<String>,
    pub repeat: Option<engine::repeat::RepeatTask>,
    pub batch_size: usize,
    pub max_len: usize,
    /// The run's optimiser, "adam" or "sgd" (torch's, with torch's defaults, as the run's).
    pub optimizer: &'static str,
    pub lr: f64,
    /// The run's linear warm-up: step t (from 1) uses lr·min(1, t/warmup); 0 = none.
    pub warmup: u64,
    pub steps: usize,
}

impl NotebookTraining {
    /// How a model of `kind` trains on under `settings`, for `steps` steps; the corpus comes
    /// with the page's text (none for Repeat, which makes its own sequences).
    pub fn of(kind: ModelKind, settings: &LabSettings, corpus: &str) -> NotebookTraining {
        let optimizer = settings.optimizer_for(kind);
        let task = task(kind);
        NotebookTraining {
            task,
            corpus: match kind.repeat() {
                Some(_) => Vec::new(),
                None => corpus
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(str::to_string)
                    .collect(),
            },
            repeat: kind.repeat(),
            batch_size: settings.batch_size,
            max_len: settings.max_len,
            optimizer: optimizer.kind.name(),
            lr: optimizer.lr,
            warmup: optimizer.warmup_steps,
            steps: NOTEBOOK_STEPS,
        }
    }
}

/// What the template reads as a model of `kind`'s objective (the links' names, `fields`), or
/// "none" for a BERT without heads.
pub fn objective(kind: ModelKind) -> &'static str {
    fields::objective_of(kind).map_or("none", |c| c.name)
}

/// What the template reads as a model of `kind`'s task: an encoder–decoder's, Repeat, or the
/// corpus (the links' names, `fields`).
pub fn task(kind: ModelKind) -> &'static str {
    fields::task_of(kind).unwrap_or(fields::CORPUS).name
}

/// The steps the notebook trains: enough to see the loss move, few enough to run in seconds.
pub const NOTEBOOK_STEPS: usize = 5;

/// The template's placeholders. `MODULE` stands on a line of its own, replaced by the module;
/// `DATA` and `WEIGHTS` by JSON string literals (valid Python); `TITLE`, `STEP` and `LINK` by
/// text.
const MODULE: &str = "__ATTENTION_LAB_MODULE__";
const DATA: &str = "__ATTENTION_LAB_DATA__";
const WEIGHTS: &str = "__ATTENTION_LAB_WEIGHTS__";
const TITLE: &str = "__ATTENTION_LAB_TITLE__";
const STEP: &str = "__ATTENTION_LAB_STEP__";
const LINK: &str = "__ATTENTION_LAB_LINK__";

/// The notebook's file name: `attention-lab-<what>-step<N>.ipynb`, `what` a stage's or a
/// model's name made safe for a file.
pub fn file_name(what: &str, step: u64) -> String {
    let mut safe = String::new();
    for c in what.chars() {
        if c.is_ascii_alphanumeric() {
            safe.push(c.to_ascii_lowercase());
        } else if !safe.ends_with('-') {
            safe.push('-');
        }
    }
    let safe = safe.trim_matches('-');
    let safe = if safe.is_empty() { "model" } else { safe };
    format!("attention-lab-{safe}-step{step}.ipynb")
}

/// The notebook's JSON.
pub fn build(
    template: &str,
    module: &str,
    data: &NotebookData,
    safetensors: &[u8],
) -> LabResult<String> {
    let malformed = |why: &str| LabError::Malformed(format!("The notebook's template {why}"));
    for placeholder in [MODULE, DATA, WEIGHTS] {
        if !template.contains(placeholder) {
            return Err(malformed(&format!("has no {placeholder}")));
        }
    }
    let literal = |text: &str| serde_json::to_string(text).expect("a string serialises");
    let data_json = serde_json::to_string(data).map_err(|e| malformed(&e.to_string()))?;
    let weights = literal(&base64(safetensors));
    let module = module.trim_end_matches('\n');
    let mut cells = Vec::new();
    for (kind, lines) in cells_of(template) {
        let text = lines
            .iter()
            .map(|line| match kind {
                Kind::Markdown => line
                    .strip_prefix("# ")
                    .or_else(|| line.strip_prefix('#'))
                    .unwrap_or(line)
                    .replace(TITLE, &data.title)
                    .replace(STEP, &data.step.to_string())
                    .replace(LINK, &data.link),
                Kind::Code if line.trim() == MODULE => module.to_string(),
                Kind::Code => line
                    .replace(DATA, &literal(&data_json))
                    .replace(WEIGHTS, &weights),
            })
            .collect::<Vec<_>>()
            .join("\n");
        let id = format!("cell-{}", cells.len() + 1);
        cells.push(match kind {
            Kind::Markdown => json!({
                "cell_type": "markdown", "id": id, "metadata": {}, "source": source(&text),
            }),
            Kind::Code => json!({
                "cell_type": "code", "id": id, "metadata": {}, "execution_count": null,
                "outputs": [], "source": source(&text),
            }),
        });
    }
    if cells.is_empty() {
        return Err(malformed("has no cells"));
    }
    let notebook = json!({
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    });
    Ok(notebook.to_string())
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Code,
    Markdown,
}

/// The template's cells: each `# %%` line starts one; what comes before the first is the
/// template's own header, left out. Blank lines at a cell's ends are dropped.
fn cells_of(template: &str) -> Vec<(Kind, Vec<&str>)> {
    let mut cells: Vec<(Kind, Vec<&str>)> = Vec::new();
    for line in template.lines() {
        if let Some(rest) = line.strip_prefix("# %%") {
            let kind = match rest.trim() {
                "[markdown]" => Kind::Markdown,
                _ => Kind::Code,
            };
            cells.push((kind, Vec::new()));
        } else if let Some((_, lines)) = cells.last_mut() {
            lines.push(line);
        }
    }
    for (_, lines) in &mut cells {
        while lines.last().is_some_and(|l| l.trim().is_empty()) {
            lines.pop();
        }
        while lines.first().is_some_and(|l| l.trim().is_empty()) {
            lines.remove(0);
        }
    }
    cells
}

/// nbformat's `source`: the text's lines, each but the last keeping its newline.
fn source(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_string).collect();
    if lines.is_empty() {
        lines.push(String::new());
    }
    lines
}

/// Standard base64 with padding (RFC 4648), as Python's `base64.b64decode` reads it.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEMPLATE: &str = "# Attention Lab's notebook template\n\
        # %% [markdown]\n\
        # # __ATTENTION_LAB_TITLE__, step __ATTENTION_LAB_STEP__\n\
        #\n\
        # Reopen: __ATTENTION_LAB_LINK__\n\
        \n\
        # %%\n\
        import json\n\
        __ATTENTION_LAB_MODULE__\n\
        \n\
        # %%\n\
        DATA = json.loads(__ATTENTION_LAB_DATA__)\n\
        WEIGHTS = __ATTENTION_LAB_WEIGHTS__\n";

    fn data() -> NotebookData {
        NotebookData {
            title: "tiny BERT \"fresh\"".into(),
            step: 7,
            link: "http://127.0.0.1:8080/?stage=softmax&layer=1".into(),
            objective: "mlm-nsp",
            config: json!({"hidden_size": 64}),
            vocab: vec!["[PAD]".into(), "naïve".into()],
            mask: "padding",
            ..NotebookData::default()
        }
    }

    #[test]
    fn the_template_becomes_cells_with_the_module_data_and_weights_in_place() {
        let module = "import torch\n\nclass BERT:\n    pass\n";
        let text = build(TEMPLATE, module, &data(), &[0, 1, 2, 255]).unwrap();
        let nb: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            (nb["nbformat"].as_u64(), nb["nbformat_minor"].as_u64()),
            (Some(4), Some(5))
        );
        let cells = nb["cells"].as_array().unwrap();
        let joined = |c: &Value| {
            c["source"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l.as_str().unwrap())
                .collect::<String>()
        };
        assert_eq!(cells.len(), 3);
        assert_eq!(cells[0]["cell_type"], "markdown");
        assert_eq!(
            joined(&cells[0]),
            "# tiny BERT \"fresh\", step 7\n\nReopen: http://127.0.0.1:8080/?stage=softmax&layer=1"
        );
        assert_eq!(
            joined(&cells[1]),
            format!("import json\n{}", module.trim_end())
        );
        assert_eq!(cells[1]["outputs"], json!([]));
        let code = joined(&cells[2]);
        // DATA is a JSON string literal of the data's JSON; WEIGHTS base64 in one.
        let literal = code
            .strip_prefix("DATA = json.loads(")
            .and_then(|c| c.split_once(")\nWEIGHTS = "))
            .unwrap();
        let inner: String = serde_json::from_str(literal.0).unwrap();
        let back: Value = serde_json::from_str(&inner).unwrap();
        assert_eq!(back["vocab"], json!(["[PAD]", "naïve"]));
        assert_eq!(back["step"], 7);
        assert_eq!(literal.1, "\"AAEC/w==\"");
        let ids: Vec<&str> = cells.iter().map(|c| c["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["cell-1", "cell-2", "cell-3"]);
    }

    #[test]
    fn base64_pads_as_the_standard_says() {
        for (bytes, text) in [
            (&b""[..], ""),
            (b"f", "Zg=="),
            (b"fo", "Zm8="),
            (b"foo", "Zm9v"),
            (b"foob", "Zm9vYg=="),
            (b"fooba", "Zm9vYmE="),
            (b"foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(bytes), text);
        }
    }

    #[test]
    fn a_template_without_its_placeholders_is_refused() {
        let e = build("# %%\nprint(1)\n", "", &data(), &[]).unwrap_err();
        assert!(e.to_string().contains("__ATTENTION_LAB_MODULE__"), "{e}");
    }

    #[test]
    fn the_file_is_named_for_the_stage_or_model_and_step() {
        assert_eq!(
            file_name("softmax", 200),
            "attention-lab-softmax-step200.ipynb"
        );
        assert_eq!(
            file_name("tiny BERT (fresh, seed 0)", 0),
            "attention-lab-tiny-bert-fresh-seed-0-step0.ipynb"
        );
        assert_eq!(file_name("÷√", 3), "attention-lab-model-step3.ipynb");
    }
}
