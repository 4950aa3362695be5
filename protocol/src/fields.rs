//! Each setting described once: the field a kept record stores it in, the key a link gives it,
//! the label the panel shows (and every notice names), and the rule (`rules`) its value must
//! pass. `restore` reads a record, `link` reads and writes an address and the panel labels and
//! applies its inputs, each by walking these rows; a new setting is one row here, then its use.
//!
//! The names are contracts: stored records and old links must read as they always did.

use crate::rules;
use crate::{Architecture, LabError, LabResult, LabSettings, ModelKind, ProbeInput, WorkerCount};
use engine::batch::MaskMode;
use engine::seq2seq::Task;
use engine::train::Objective;
use std::fmt::Debug;

/// One setting of `S`. `C` is what its rule reads beside the value: for an architecture, the
/// preset's heads (KV heads must divide them); for the probe, the T of the text last read
/// (None before one is read: a link's, a record's), which a window must not exceed.
pub struct Field<S, C = ()> {
    /// Its name in a kept record: serde's name for its field of `S`.
    pub stored: &'static str,
    /// Its key in a link and the value a link writes; None when links do not carry it.
    pub link: Option<Link<S>>,
    /// The panel's label for it, which notices name.
    pub label: &'static str,
    /// What its value is, and how one is checked and set.
    pub value: Kind<S, C>,
    /// Its value as a notice names it (the default it fell back to): `8`, `Adam`, `none`.
    pub shown: fn(&S) -> String,
}

/// A setting's place in a link.
pub struct Link<S> {
    pub key: &'static str,
    /// The value as a link writes it; None for a value that is absent (Pad to left blank).
    /// A link writes it only where it differs from the default's.
    pub write: fn(&S) -> Option<String>,
}

/// What a setting's value is, as the panel's inputs and a record give it. Each setter checks
/// the value with its rule and sets it, or leaves `S` as it was and says why.
pub enum Kind<S, C> {
    /// A number box; a record keeps a number.
    Number(fn(&mut S, f64) -> LabResult<()>),
    /// A select: one of the names `rules` reads.
    Name(fn(&mut S, &str) -> LabResult<()>),
    /// A name, or none (a record's null).
    OptionalName(fn(&mut S, Option<&str>) -> LabResult<()>),
    /// A number, or none (a record's null): a choice among numbers that depend on `C`.
    OptionalNumber(fn(&mut S, Option<f64>, C) -> LabResult<()>),
    /// A text box where blank is none and anything else a whole number: a record keeps a
    /// number or null, a link the text.
    Blank(fn(&mut S, &str, C) -> LabResult<()>),
    /// Text as typed.
    Text(fn(&mut S, String)),
    /// A checkbox.
    Switch(fn(&mut S, bool)),
}

impl<S, C> Field<S, C> {
    /// Sets it from an input's text (the panel's, a link's), as its kind reads text.
    pub fn apply(&self, s: &mut S, text: &str, c: C) -> LabResult<()> {
        let number = || {
            text.trim()
                .parse::<f64>()
                .map_err(|_| LabError::setting(format!("{text:?} is not a number")))
        };
        match self.value {
            Kind::Number(set) => set(s, number()?),
            Kind::Name(set) => set(s, text),
            Kind::OptionalName(set) => set(s, Some(text)),
            Kind::OptionalNumber(set) => set(s, Some(number()?), c),
            Kind::Blank(set) => set(s, text, c),
            Kind::Text(set) => {
                set(s, text.to_string());
                Ok(())
            }
            Kind::Switch(set) => match text {
                "on" => {
                    set(s, true);
                    Ok(())
                }
                "off" => {
                    set(s, false);
                    Ok(())
                }
                _ => Err(LabError::setting("it must be on or off")),
            },
        }
    }

    /// Sets a checkbox's setting on or off.
    pub fn toggle(&self, s: &mut S, on: bool) -> LabResult<()> {
        match self.value {
            Kind::Switch(set) => {
                set(s, on);
                Ok(())
            }
            _ => Err(LabError::setting(format!(
                "{} is not on or off",
                self.label
            ))),
        }
    }

    /// The link's key with `prefix` (Compare's model B: "b-"); None when links do not carry it.
    pub fn link_key(&self, prefix: &str) -> Option<String> {
        self.link.as_ref().map(|l| format!("{prefix}{}", l.key))
    }
}

/// The value as a notice shows it: `8`, `0.001`, `Adam`, `"the dog …"`, `none`.
pub fn shown<T: Debug>(value: &T) -> String {
    let shown = format!("{value:?}");
    match shown.as_str() {
        "None" => "none".into(),
        s => s
            .strip_prefix("Some(")
            .and_then(|s| s.strip_suffix(')'))
            .unwrap_or(s)
            .to_string(),
    }
}

pub const LEARNING_RATE: Field<LabSettings> = Field {
    stored: "learning_rate",
    link: None,
    label: "Learning rate",
    value: Kind::Number(|s, v| {
        s.learning_rate = rules::learning_rate(v)?;
        Ok(())
    }),
    shown: |s| shown(&s.learning_rate),
};
pub const BATCH_SIZE: Field<LabSettings> = Field {
    stored: "batch_size",
    link: None,
    label: "Batch size",
    value: Kind::Number(|s, v| {
        s.batch_size = rules::batch_size(v)?;
        Ok(())
    }),
    shown: |s| shown(&s.batch_size),
};
pub const MASK_PROB: Field<LabSettings> = Field {
    stored: "mask_prob",
    link: None,
    label: "Mask probability",
    value: Kind::Number(|s, v| {
        s.mask_prob = rules::mask_prob(v)?;
        Ok(())
    }),
    shown: |s| shown(&s.mask_prob),
};
pub const SEED: Field<LabSettings> = Field {
    stored: "seed",
    link: None,
    label: "Seed",
    value: Kind::Number(|s, v| {
        s.seed = rules::seed(v)?;
        Ok(())
    }),
    shown: |s| shown(&s.seed),
};
pub const MAX_LEN: Field<LabSettings> = Field {
    stored: "max_len",
    link: None,
    label: "Training length",
    value: Kind::Number(|s, v| {
        s.max_len = rules::max_len(v)?;
        Ok(())
    }),
    shown: |s| shown(&s.max_len),
};
pub const PRESET: Field<LabSettings> = Field {
    stored: "preset",
    link: Some(Link {
        key: "preset",
        write: |s| Some(s.preset.name().into()),
    }),
    label: "Preset",
    value: Kind::Name(|s, v| {
        s.preset = rules::preset(v)?;
        Ok(())
    }),
    shown: |s| shown(&s.preset),
};
pub const OPTIMIZER: Field<LabSettings> = Field {
    stored: "optimizer",
    link: None,
    label: "Optimizer",
    value: Kind::Name(|s, v| {
        s.optimizer = rules::optimizer(v)?;
        Ok(())
    }),
    shown: |s| shown(&s.optimizer),
};
pub const TRAIN_MASK: Field<LabSettings> = Field {
    stored: "train_mask",
    link: None,
    label: "Training mask",
    value: Kind::Name(|s, v| {
        s.train_mask = rules::mask(v)?;
        Ok(())
    }),
    shown: |s| shown(&s.train_mask),
};
/// A record keeps the objective and the task apart; a link, as the panel's select, names the
/// kind's objective: "seq2seq" for an encoder–decoder (and then gives its task).
pub const OBJECTIVE: Field<LabSettings> = Field {
    stored: "objective",
    link: Some(Link {
        key: "objective",
        write: |s| objective_of(s.kind()).map(|c| c.name.into()),
    }),
    label: "Objective",
    value: Kind::Name(|s, v| {
        s.objective = objective_named(v)?;
        Ok(())
    }),
    shown: |s| shown(&s.objective),
};
pub const TASK: Field<LabSettings> = Field {
    stored: "task",
    link: Some(Link {
        key: "task",
        // One key for both kinds of task: a seq2seq task's name, or Next token's Repeat.
        write: |s| task_of(s.kind()).map(|c| c.name.into()),
    }),
    label: "Task",
    value: Kind::OptionalName(|s, v| {
        s.task = v.map(task_named).transpose()?;
        Ok(())
    }),
    shown: |s| shown(&s.task),
};
/// Next token's Task: the corpus, or Repeat (`LabSettings::repeat`). A link writes it under
/// `task`, as `TASK`'s value.
pub const REPEAT: Field<LabSettings> = Field {
    stored: "repeat",
    link: None,
    label: "Task",
    value: Kind::Switch(|s, on| s.repeat = on),
    shown: |s| shown(&s.repeat),
};
pub const FIXED_BATCH: Field<LabSettings> = Field {
    stored: "fixed_batch",
    link: None,
    label: "Fixed batch",
    value: Kind::Switch(|s, on| s.fixed_batch = on),
    shown: |s| shown(&s.fixed_batch),
};

/// The run's settings outside the architecture, in the order notices list them.
pub const SETTINGS: [&Field<LabSettings>; 12] = [
    &LEARNING_RATE,
    &BATCH_SIZE,
    &MASK_PROB,
    &SEED,
    &MAX_LEN,
    &PRESET,
    &OPTIMIZER,
    &TRAIN_MASK,
    &OBJECTIVE,
    &TASK,
    &REPEAT,
    &FIXED_BATCH,
];

/// Where a record keeps the architecture, and Compare's model B's (null: Compare off).
pub const ARCHITECTURE: &str = "architecture";
pub const COMPARE: Field<LabSettings> = Field {
    stored: "compare",
    link: Some(Link {
        key: "compare",
        write: |s| s.compare.map(|_| "on".into()),
    }),
    label: "Compare",
    value: Kind::Switch(|s, on| s.compare = on.then(|| s.compare.unwrap_or_default())),
    shown: |s| shown(&s.compare.is_some()),
};

/// A link's prefix for Compare's model B's architecture, and a notice's.
pub const MODEL_B_LINK: &str = "b-";
pub const MODEL_B_LABEL: &str = "Model B: ";

pub const KV_HEADS: Field<Architecture, usize> = Field {
    stored: "kv_heads",
    link: Some(Link {
        key: "kv",
        write: |a| a.kv_heads.map(|g| g.to_string()),
    }),
    label: "KV heads",
    // None is one K/V per head: G = H is written as None.
    value: Kind::OptionalNumber(|a, g, heads| {
        a.kv_heads = match g {
            None => None,
            Some(g) => Some(rules::kv_heads(g, heads)?).filter(|&g| g != heads),
        };
        Ok(())
    }),
    shown: |a| shown(&a.kv_heads),
};
pub const POSITIONS: Field<Architecture, usize> = Field {
    stored: "positions",
    link: Some(Link {
        key: "positions",
        write: |a| Some(a.positions.to_string()),
    }),
    label: "Positions",
    value: Kind::Name(|a, v| {
        a.positions = rules::positions(v)?;
        Ok(())
    }),
    shown: |a| shown(&a.positions),
};
pub const ATTENTION: Field<Architecture, usize> = Field {
    stored: "attention",
    link: Some(Link {
        key: "attention",
        write: |a| Some(a.attention.to_string()),
    }),
    label: "Attention",
    value: Kind::Name(|a, v| {
        a.attention = rules::attention_type(v)?;
        Ok(())
    }),
    shown: |a| shown(&a.attention),
};
pub const SCALING: Field<Architecture, usize> = Field {
    stored: "scaling",
    link: Some(Link {
        key: "scaling",
        write: |a| Some(a.scaling.to_string()),
    }),
    label: "Scaling",
    value: Kind::Name(|a, v| {
        a.scaling = rules::scaling(v)?;
        Ok(())
    }),
    shown: |a| shown(&a.scaling),
};

/// The "Architecture" group (and Compare's "Model B").
pub const ARCHITECTURE_FIELDS: [&Field<Architecture, usize>; 4] =
    [&KV_HEADS, &POSITIONS, &ATTENTION, &SCALING];

/// What `rules::architecture` refuses, as a notice names the pair.
pub fn positions_and_attention() -> String {
    format!("{} and {}", POSITIONS.label, ATTENTION.label)
}

pub const TEXT: Field<ProbeInput, Option<usize>> = Field {
    stored: "text",
    link: Some(Link {
        key: "sentence",
        write: |p| Some(p.text.clone()),
    }),
    label: "Sentence",
    value: Kind::Text(|p, t| p.text = t),
    shown: |p| shown(&p.text),
};
pub const PAIR: Field<ProbeInput, Option<usize>> = Field {
    stored: "pair",
    link: Some(Link {
        key: "pair",
        write: |p| Some(p.pair.clone()),
    }),
    label: "Second sentence",
    value: Kind::Text(|p, t| p.pair = t),
    shown: |p| shown(&p.pair),
};
pub const TARGET: Field<ProbeInput, Option<usize>> = Field {
    stored: "target",
    link: Some(Link {
        key: "target",
        write: |p| Some(p.target.clone()),
    }),
    label: "Target",
    value: Kind::Text(|p, t| p.target = t),
    shown: |p| shown(&p.target),
};
pub const PAD_TO: Field<ProbeInput, Option<usize>> = Field {
    stored: "pad_to",
    link: Some(Link {
        key: "pad",
        write: |p| p.pad_to.map(|n| n.to_string()),
    }),
    label: "Pad to",
    value: Kind::Blank(|p, v, _| {
        p.pad_to = rules::pad_to(v)?;
        Ok(())
    }),
    shown: |p| shown(&p.pad_to),
};
pub const MASK: Field<ProbeInput, Option<usize>> = Field {
    stored: "mask",
    link: Some(Link {
        key: "mask",
        write: |p| Some(mask_name(p.mask).into()),
    }),
    label: "Mask",
    value: Kind::Name(|p, v| {
        p.mask = rules::mask(v)?;
        Ok(())
    }),
    shown: |p| shown(&p.mask),
};
/// Against the T of the text last read, when known (the explorer's); a link and a record,
/// read before any text, refuse only 0 and non-numbers.
pub const WINDOW: Field<ProbeInput, Option<usize>> = Field {
    stored: "window",
    link: Some(Link {
        key: "window",
        write: |p| p.window.map(|w| w.to_string()),
    }),
    label: "Window",
    value: Kind::Blank(|p, v, tokens| {
        p.window = rules::window(v, tokens)?;
        Ok(())
    }),
    shown: |p| shown(&p.window),
};
pub const KERNEL: Field<ProbeInput, Option<usize>> = Field {
    stored: "attention",
    link: Some(Link {
        key: "kernel",
        write: |p| Some(p.attention.name().to_lowercase()),
    }),
    label: "Attention",
    value: Kind::Name(|p, v| {
        p.attention = rules::kernel(v)?;
        Ok(())
    }),
    shown: |p| shown(&p.attention),
};

/// What the explorer reads, in a link's order.
pub const PROBE: [&Field<ProbeInput, Option<usize>>; 7] =
    [&TEXT, &PAIR, &TARGET, &PAD_TO, &MASK, &WINDOW, &KERNEL];

/// The Workers setting (beside Speed), which the browser keeps in a record of its own: the
/// select's value (`WorkerCount::key`).
pub const WORKERS: Field<WorkerCount> = Field {
    stored: "workers",
    link: None,
    label: "Workers",
    value: Kind::Name(|w, v| {
        *w = WorkerCount::parse(v)?;
        Ok(())
    }),
    shown: |w| w.key(),
};

/// The names the selects and links use, which `rules` reads back.
pub fn mask_name(m: MaskMode) -> &'static str {
    match m {
        MaskMode::None => "none",
        MaskMode::Padding => "padding",
        MaskMode::Causal => "causal",
    }
}

/// One choice of a select: the name the page and a link write (and the command line reads),
/// and the label the panel shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    pub name: &'static str,
    pub label: &'static str,
}

/// The Objective select's choices (a link's `objective`, `attention-lab train --objective`):
/// one model's objective, or an encoder–decoder.
pub const MLM_NSP: Choice = Choice {
    name: "mlm-nsp",
    label: "MLM + NSP",
};
pub const NEXT_TOKEN: Choice = Choice {
    name: "next-token",
    label: "Next token",
};
pub const SEQ2SEQ: Choice = Choice {
    name: "seq2seq",
    label: "Sequence to sequence",
};
/// In the select's order.
pub const OBJECTIVES: [Choice; 3] = [MLM_NSP, NEXT_TOKEN, SEQ2SEQ];

/// Next token's Task select: the corpus's sentences, or Repeat (a link's `task=repeat`, as
/// `attention-lab train --task repeat`).
pub const CORPUS: Choice = Choice {
    name: "corpus",
    label: "Corpus",
};
pub const REPEAT_TASK: Choice = Choice {
    name: "repeat",
    label: "Repeat",
};

/// An encoder–decoder's Task select (a link's `task`, `--task`), in its order.
pub const TASKS: [(Task, Choice); 3] = [
    (
        Task::Copy,
        Choice {
            name: "copy",
            label: "Copy",
        },
    ),
    (
        Task::Reverse,
        Choice {
            name: "reverse",
            label: "Reverse",
        },
    ),
    (
        Task::Reply,
        Choice {
            name: "reply",
            label: "Reply",
        },
    ),
];

/// One model's objective: the choice of the Objective select that trains on it.
pub fn objective_choice(o: Objective) -> Choice {
    match o {
        Objective::MlmNsp => MLM_NSP,
        Objective::NextToken => NEXT_TOKEN,
    }
}

pub fn objective_name(o: Objective) -> &'static str {
    objective_choice(o).name
}

/// The Objective select's choice for a model of `kind`; None for one loaded without heads.
pub fn objective_of(kind: ModelKind) -> Option<Choice> {
    match kind.task() {
        Some(_) => Some(SEQ2SEQ),
        None => kind.objective().map(objective_choice),
    }
}

/// A one-model objective by its name (the Objective select's, a record's, a link's).
pub fn objective_named(v: &str) -> LabResult<Objective> {
    [Objective::MlmNsp, Objective::NextToken]
        .into_iter()
        .find(|&o| objective_name(o) == v)
        .ok_or_else(|| {
            LabError::setting(format!(
                "the objective must be {} or {}",
                MLM_NSP.label, NEXT_TOKEN.label
            ))
        })
}

pub fn task_choice(t: Task) -> Choice {
    TASKS
        .iter()
        .find(|(task, _)| *task == t)
        .map_or(CORPUS, |(_, c)| *c)
}

pub fn task_name(t: Task) -> &'static str {
    task_choice(t).name
}

/// A sequence-to-sequence task by its name (the Task select's, a record's, a link's).
pub fn task_named(v: &str) -> LabResult<Task> {
    TASKS
        .iter()
        .find(|(_, c)| c.name == v)
        .map(|(t, _)| *t)
        .ok_or_else(|| {
            let labels: Vec<&str> = TASKS.iter().map(|(_, c)| c.label).collect();
            LabError::setting(format!(
                "the task must be {} or {}",
                labels[..labels.len() - 1].join(", "),
                labels[labels.len() - 1]
            ))
        })
}

/// What a link's `task` says for a model of `kind`: an encoder–decoder's task, or Next token's
/// Repeat; None for the corpus.
pub fn task_of(kind: ModelKind) -> Option<Choice> {
    match (kind.task(), kind.repeat()) {
        (Some(task), _) => Some(task_choice(task)),
        (None, Some(_)) => Some(REPEAT_TASK),
        (None, None) => None,
    }
}

/// A fresh model of `kind` as its name says it: "BERT", "decoder", "decoder · Repeat",
/// "encoder–decoder · Reverse".
pub fn kind_name(kind: ModelKind) -> String {
    match (kind.task(), kind.decoder(), kind.repeat()) {
        (Some(task), _, _) => format!("encoder–decoder · {}", task_choice(task).label),
        (None, true, Some(_)) => format!("decoder · {}", REPEAT_TASK.label),
        (None, true, None) => "decoder".into(),
        (None, false, _) => "BERT".into(),
    }
}

/// `kind` in a sentence, as a link's differences name it: "MLM + NSP", "a next-token decoder",
/// "a next-token decoder on Repeat", "an encoder–decoder trained on reverse".
pub fn kind_words(kind: ModelKind) -> String {
    match (kind.task(), kind.decoder(), kind.repeat()) {
        (Some(task), _, _) => format!("an encoder–decoder trained on {}", task_name(task)),
        (None, true, Some(_)) => format!("a {} decoder on {}", NEXT_TOKEN.name, REPEAT_TASK.label),
        (None, true, None) => format!("a {} decoder", NEXT_TOKEN.name),
        (None, false, _) => MLM_NSP.label.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// The keys of `value`'s JSON object, as serde writes them.
    fn stored_keys(value: Value) -> Vec<String> {
        let Value::Object(fields) = value else {
            panic!("not an object: {value}")
        };
        let mut keys: Vec<String> = fields.keys().cloned().collect();
        keys.sort();
        keys
    }

    fn sorted(names: impl IntoIterator<Item = &'static str>) -> Vec<String> {
        let mut names: Vec<String> = names.into_iter().map(String::from).collect();
        names.sort();
        names
    }

    /// Every field a record stores has its row, under serde's name: a field added to the
    /// settings without a row (or renamed under one) fails here.
    #[test]
    fn the_rows_name_every_stored_field_as_serde_does() {
        let settings = serde_json::to_value(LabSettings::default()).unwrap();
        let rows = SETTINGS.iter().map(|f| f.stored);
        assert_eq!(
            stored_keys(settings),
            sorted(rows.chain([ARCHITECTURE, COMPARE.stored]))
        );
        let architecture = serde_json::to_value(Architecture::default()).unwrap();
        assert_eq!(
            stored_keys(architecture),
            sorted(ARCHITECTURE_FIELDS.iter().map(|f| f.stored))
        );
        let probe = serde_json::to_value(ProbeInput::default()).unwrap();
        assert_eq!(stored_keys(probe), sorted(PROBE.iter().map(|f| f.stored)));
    }

    #[test]
    fn link_keys_are_distinct() {
        let mut keys: Vec<String> = SETTINGS
            .iter()
            .filter_map(|f| f.link_key(""))
            .chain(COMPARE.link_key(""))
            .chain(ARCHITECTURE_FIELDS.iter().filter_map(|f| f.link_key("")))
            .chain(
                ARCHITECTURE_FIELDS
                    .iter()
                    .filter_map(|f| f.link_key(MODEL_B_LINK)),
            )
            .chain(PROBE.iter().filter_map(|f| f.link_key("")))
            .collect();
        let n = keys.len();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), n, "{keys:?}");
    }

    #[test]
    fn apply_reads_text_as_each_kind_does() {
        let mut s = LabSettings::default();
        LEARNING_RATE.apply(&mut s, " 0.01 ", ()).unwrap();
        assert_eq!(s.learning_rate, 0.01);
        let e = BATCH_SIZE.apply(&mut s, "eight", ()).unwrap_err();
        assert_eq!(e.to_string(), "\"eight\" is not a number");
        TASK.apply(&mut s, "reply", ()).unwrap();
        assert_eq!(s.task, Some(Task::Reply));
        FIXED_BATCH.apply(&mut s, "on", ()).unwrap();
        assert!(s.fixed_batch);
        assert!(FIXED_BATCH.apply(&mut s, "yes", ()).is_err());
        let mut a = Architecture::default();
        KV_HEADS.apply(&mut a, "2", 4).unwrap();
        assert_eq!(a.kv_heads, Some(2));
        KV_HEADS.apply(&mut a, "4", 4).unwrap();
        assert_eq!(a.kv_heads, None, "G = H is one per head");
        assert!(KV_HEADS.apply(&mut a, "3", 4).is_err());
    }
}
