//! "Open in PyTorch": what the page puts in the notebook besides the model's files: the
//! input on screen, the view, the run's training, the link. `protocol::notebook` writes it.

use super::files::Fetched;
use engine::inspect::Inspection;
use protocol::notebook::{self, NotebookData, NotebookInput, NotebookTraining, NotebookView};
use protocol::view::Selection;
use protocol::{fields, LabError, LabResult, LabSettings, ModelBundle, ModelInfo, ProbeInput};

/// Everything the notebook needs that the page holds when the button is pressed.
#[derive(Clone, Debug)]
pub struct Shown<'a> {
    pub info: &'a ModelInfo,
    /// The inspection on screen: the decoder's, with the encoder's as its source, for an
    /// encoder–decoder.
    pub ins: &'a Inspection,
    pub selection: Selection,
    /// The stage's link name and the figure the code view names.
    pub stage: &'a str,
    pub figure: &'a str,
    pub probe: &'a ProbeInput,
    pub settings: &'a LabSettings,
    pub corpus: &'a str,
    pub link: &'a str,
}

/// The notebook's data for what is shown, before the model's files arrive.
pub fn data(shown: &Shown) -> NotebookData {
    let Shown {
        info,
        ins,
        selection,
        probe,
        settings,
        ..
    } = shown;
    let (input, source) = match &ins.source {
        // The decoder reads the Target after [CLS]; the encoder the Sentence.
        Some(encoder) => (
            input_of(ins, &probe.target, None),
            Some(input_of(encoder, &probe.text, None)),
        ),
        None => {
            let pair = (!probe.pair.trim().is_empty()).then_some(probe.pair.as_str());
            (input_of(ins, &probe.text, pair), None)
        }
    };
    // The links' names for the model's kind (`protocol::fields`), which the template reads too.
    NotebookData {
        link: shown.link.to_string(),
        objective: notebook::objective(info.kind),
        input,
        source,
        mask: fields::mask_name(ins.mask),
        window: probe.window,
        view: NotebookView {
            part: selection.part.slug(),
            layer: selection.layer,
            head: selection.head,
            stage: shown.stage.to_string(),
            figure: shown.figure.to_string(),
        },
        // The run's optimiser and warm-up, as the worker trains a model of this kind.
        training: NotebookTraining::of(info.kind, settings, shown.corpus),
        ..NotebookData::default()
    }
}

fn input_of(ins: &Inspection, text: &str, pair: Option<&str>) -> NotebookInput {
    NotebookInput {
        text: text.to_string(),
        pair: pair.map(str::to_string),
        tokens: ins.tokens.clone(),
        input_ids: ins.input_ids.clone(),
        token_type_ids: ins.token_type_ids.clone(),
        attention_mask: ins.attention_mask.clone(),
    }
}

/// The notebook for `data` with `bundle`'s model: its file name and its JSON. `what` names
/// the file (the stage, or the model).
pub fn build(
    fetched: &Fetched,
    mut data: NotebookData,
    bundle: &ModelBundle,
    what: &str,
) -> LabResult<(String, String)> {
    let json = |text: &str, file: &str| {
        serde_json::from_str(text)
            .map_err(|e| LabError::file(format!("The model's {file} does not read: {e}")))
    };
    data.title = bundle.name.clone();
    data.step = bundle.step;
    data.config = json(&bundle.config_json, "config.json")?;
    data.vocab = bundle.vocab_txt.lines().map(str::to_string).collect();
    data.word_level = bundle.word_level;
    data.tokenizer_config = bundle
        .tokenizer_config_json
        .as_deref()
        .filter(|t| !t.trim().is_empty())
        .map(|t| json(t, "tokenizer_config.json"))
        .transpose()?;
    let text = notebook::build(
        &fetched.template,
        &fetched.source,
        &data,
        &bundle.safetensors,
    )?;
    Ok((notebook::file_name(what, bundle.step), text))
}
