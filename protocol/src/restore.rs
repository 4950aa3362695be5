//! What an earlier visit left in localStorage (settings, probe, corpus), checked field by field
//! with the rules the panel applies to what the user types (`rules`). Storage can hold anything:
//! an older version's data, or a hand edit. A bad field falls back to its default and says so;
//! the good fields around it stay.

use crate::fields::{self, Field, Kind};
use crate::rules;
use crate::{Architecture, LabError, LabSettings, ProbeInput, WorkerCount, DEFAULT_CORPUS};
use serde_json::{Map, Value};

/// A restored value and what was reset on the way, one sentence per field, for the page.
#[derive(Debug, PartialEq)]
pub struct Restored<T> {
    pub value: T,
    pub notices: Vec<String>,
}

/// Nothing kept (`None`) gives the defaults quietly; anything kept is checked.
pub fn settings(kept: Option<&str>) -> Restored<LabSettings> {
    let mut value = LabSettings::default();
    let notices = match fields(kept, "settings") {
        Ok(kept) => {
            let mut notices: Vec<String> = fields::SETTINGS
                .iter()
                .filter_map(|f| check(f, &kept, &mut value, ()))
                .collect();
            if let Some(kept) = kept.get(fields::ARCHITECTURE) {
                let heads = value.preset.config().num_attention_heads;
                notices.extend(architecture(kept, heads, &mut value.architecture));
            }
            match kept.get(fields::COMPARE.stored) {
                None | Some(Value::Null) => {}
                Some(kept) if !kept.is_object() => notices.push(format!(
                    "{}'s model B kept from the last visit was unreadable, so {} is off.",
                    fields::COMPARE.label,
                    fields::COMPARE.label
                )),
                Some(kept) => {
                    let heads = value.preset.config().num_attention_heads;
                    let mut b = Architecture::default();
                    let b_notices = architecture(kept, heads, &mut b);
                    notices.extend(
                        b_notices
                            .into_iter()
                            .map(|n| format!("{}{n}", fields::MODEL_B_LABEL)),
                    );
                    value.compare = Some(b);
                }
            }
            notices
        }
        Err(notice) => notice.into_iter().collect(),
    };
    Restored { value, notices }
}

/// The "Architecture" group, checked against the `heads` of the preset kept beside it: a
/// KV-heads value that does not divide them (a hand edit) goes back to one per head.
fn architecture(kept: &Value, heads: usize, value: &mut Architecture) -> Vec<String> {
    let Value::Object(kept) = kept else {
        return vec![
            "The architecture kept from the last visit was unreadable, so BERT's applies.".into(),
        ];
    };
    let mut notices: Vec<String> = fields::ARCHITECTURE_FIELDS
        .iter()
        .filter_map(|f| check(f, kept, value, heads))
        .collect();
    if let Err(why) = rules::architecture(*value) {
        notices.push(format!(
            "{} kept from the last visit: {why}, so softmax attention applies.",
            fields::positions_and_attention()
        ));
        value.attention = engine::config::AttentionType::Softmax;
    }
    notices
}

pub fn probe(kept: Option<&str>) -> Restored<ProbeInput> {
    let mut value = ProbeInput::default();
    let notices = match fields(kept, "probe") {
        Ok(kept) => fields::PROBE
            .iter()
            .filter_map(|f| check(f, &kept, &mut value, None))
            .collect(),
        Err(notice) => notice.into_iter().collect(),
    };
    Restored { value, notices }
}

/// The corpus is any text the user typed; only another kind of value is wrong.
pub fn corpus(kept: Option<&str>) -> Restored<String> {
    let default = || DEFAULT_CORPUS.to_string();
    let Some(kept) = kept else {
        return Restored {
            value: default(),
            notices: Vec::new(),
        };
    };
    match serde_json::from_str::<Value>(kept) {
        Ok(Value::String(text)) => Restored {
            value: text,
            notices: Vec::new(),
        },
        _ => Restored {
            value: default(),
            notices: vec![
                "The corpus kept from the last visit was unreadable, so the built-in corpus is back."
                    .into(),
            ],
        },
    }
}

/// The Workers setting (`fields::WORKERS`), kept as the select writes it; anything else is
/// the default again, and says so.
pub fn workers(kept: Option<&str>) -> Restored<WorkerCount> {
    let field = &fields::WORKERS;
    let mut value = WorkerCount::default();
    let Some(kept) = kept else {
        return Restored {
            value,
            notices: Vec::new(),
        };
    };
    let read = serde_json::from_str::<String>(kept)
        .map_err(|_| "unreadable".to_string())
        .and_then(|text| {
            field
                .apply(&mut value, &text, ())
                .map_err(|e| e.to_string())
        });
    let notices = match read {
        Ok(()) => Vec::new(),
        Err(why) => {
            let label = field.label;
            value = WorkerCount::default();
            vec![format!(
                "{label} kept from the last visit: {why}, so {label} is {} again.",
                (field.shown)(&value)
            )]
        }
    };
    Restored { value, notices }
}

/// The kept JSON object's fields; an unreadable one is the notice to show instead.
fn fields(kept: Option<&str>, what: &str) -> Result<Map<String, Value>, Option<String>> {
    let Some(kept) = kept else {
        return Err(None);
    };
    match serde_json::from_str::<Value>(kept) {
        Ok(Value::Object(fields)) => Ok(fields),
        _ => Err(Some(format!(
            "The {what} kept from the last visit were unreadable, so the defaults apply."
        ))),
    }
}

/// `field` as `kept` holds it, set on `value` if it passes the field's rule. A field absent (an
/// older version) keeps its default quietly; one that fails keeps its default, and the notice
/// says which and why.
fn check<S, C: Copy>(
    field: &Field<S, C>,
    kept: &Map<String, Value>,
    value: &mut S,
    c: C,
) -> Option<String> {
    let v = kept.get(field.stored)?;
    let not = |what: &str| Err(LabError::setting(format!("not {what}")));
    let set = match (&field.value, v) {
        (Kind::Number(set), v) => v
            .as_f64()
            .map_or_else(|| not("a number"), |n| set(value, n)),
        (Kind::Name(set), v) => v.as_str().map_or_else(|| not("a name"), |n| set(value, n)),
        (Kind::OptionalName(set), Value::Null) => set(value, None),
        (Kind::OptionalName(set), Value::String(n)) => set(value, Some(n)),
        (Kind::OptionalName(_), _) => not("a name"),
        (Kind::OptionalNumber(set), Value::Null) => set(value, None, c),
        (Kind::OptionalNumber(set), v) => v
            .as_f64()
            .map_or_else(|| not("a number"), |n| set(value, Some(n), c)),
        (Kind::Blank(set), Value::Null) => set(value, "", c),
        // The text box's own rule, on the number as the user would have typed it.
        (Kind::Blank(set), Value::Number(n)) => set(value, &n.to_string(), c),
        (Kind::Blank(_), _) => not("a number"),
        (Kind::Text(set), Value::String(t)) => {
            set(value, t.clone());
            Ok(())
        }
        (Kind::Text(_), _) => not("text"),
        (Kind::Switch(set), Value::Bool(on)) => {
            set(value, *on);
            Ok(())
        }
        (Kind::Switch(_), _) => not("on or off"),
    };
    let why = set.err()?;
    let mut kept = v.to_string();
    if kept.chars().count() > 40 {
        kept = kept.chars().take(40).collect::<String>() + "…";
    }
    Some(format!(
        "{} {kept} from the last visit was reset to {}: {why}.",
        field.label,
        (field.shown)(value)
    ))
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_workers_setting_comes_back_as_written_and_anything_else_is_auto() {
        for count in WorkerCount::CHOICES {
            let kept = serde_json::to_string(&count.key()).unwrap();
            let restored = workers(Some(&kept));
            assert_eq!((restored.value, restored.notices.len()), (count, 0));
        }
        assert_eq!(workers(None).value, WorkerCount::Auto);
        assert!(workers(None).notices.is_empty());
        for bad in ["\"9\"", "\"0\"", "\"🦀\"", "\"\"", "2", "{", ""] {
            let restored = workers(Some(bad));
            assert_eq!(restored.value, WorkerCount::Auto, "{bad}");
            assert_eq!(restored.notices.len(), 1, "{bad}");
            assert!(
                restored.notices[0].starts_with("Workers kept"),
                "{:?}",
                restored.notices
            );
        }
    }
    use super::*;

    #[test]
    fn good_settings_come_back_unchanged() {
        let mut s = LabSettings {
            learning_rate: 0.002,
            batch_size: 16,
            seed: 7,
            ..LabSettings::default()
        };
        s.preset = crate::Preset::Small;
        let kept = serde_json::to_string(&s).unwrap();
        assert_eq!(
            settings(Some(&kept)),
            Restored {
                value: s,
                notices: Vec::new()
            }
        );
        assert_eq!(settings(None).value, LabSettings::default());
    }

    #[test]
    fn sequence_to_sequence_and_its_target_come_back_and_a_bad_task_is_reset() {
        use engine::seq2seq::Task;
        let s = LabSettings {
            task: Some(Task::Reply),
            ..LabSettings::default()
        };
        let kept = serde_json::to_string(&s).unwrap();
        assert!(kept.contains("\"task\":\"reply\""), "{kept}");
        assert_eq!(
            settings(Some(&kept)),
            Restored {
                value: s,
                notices: Vec::new()
            }
        );
        let bad = settings(Some(&kept.replace("\"reply\"", "\"sort\"")));
        assert_eq!(bad.value.task, None);
        assert!(
            bad.notices[0].starts_with("Task \"sort\""),
            "{:?}",
            bad.notices
        );
        // Settings and probes kept before these fields existed: one model, no target.
        assert_eq!(settings(Some("{}")).value.task, None);
        let p = ProbeInput {
            target: "warm is sky blue".into(),
            ..ProbeInput::default()
        };
        let back = probe(Some(&serde_json::to_string(&p).unwrap()));
        assert_eq!(back.value, p);
        assert_eq!(probe(Some("{\"text\": \"a b\"}")).value.target, "");
    }

    #[test]
    fn no_mask_is_a_mask_the_page_offers_and_comes_back() {
        use engine::batch::MaskMode;
        let s = LabSettings {
            train_mask: MaskMode::None,
            ..LabSettings::default()
        };
        let kept = serde_json::to_string(&s).unwrap();
        assert!(kept.contains("\"train_mask\":\"none\""), "{kept}");
        assert_eq!(settings(Some(&kept)).value.train_mask, MaskMode::None);
        assert!(settings(Some(&kept)).notices.is_empty());
        let p = ProbeInput {
            mask: MaskMode::None,
            pad_to: Some(12),
            ..ProbeInput::default()
        };
        let restored = probe(Some(&serde_json::to_string(&p).unwrap()));
        assert_eq!((restored.value, restored.notices), (p, Vec::new()));
        assert!(settings(None).notices.is_empty());
    }

    #[test]
    fn compares_model_b_comes_back_and_is_checked_like_a() {
        use engine::config::PositionEmbeddingType;
        let s = LabSettings {
            compare: Some(Architecture {
                kv_heads: Some(1),
                positions: PositionEmbeddingType::Rotary,
                ..Architecture::default()
            }),
            ..LabSettings::default()
        };
        let kept = serde_json::to_string(&s).unwrap();
        let restored = settings(Some(&kept));
        assert_eq!((restored.value, restored.notices), (s.clone(), Vec::new()));
        let bad = kept.replace("\"kv_heads\":1", "\"kv_heads\":3");
        let restored = settings(Some(&bad));
        let b = restored.value.compare.unwrap();
        assert_eq!(
            (b.kv_heads, b.positions),
            (None, PositionEmbeddingType::Rotary)
        );
        assert!(
            restored.notices[0].starts_with("Model B: KV heads 3"),
            "{:?}",
            restored.notices
        );
        let off = kept.replace(&serde_json::to_string(&s.compare).unwrap(), "null");
        assert_eq!(settings(Some(&off)).value.compare, None);
        let junk = kept.replace(&serde_json::to_string(&s.compare).unwrap(), "7");
        let restored = settings(Some(&junk));
        assert_eq!(restored.value.compare, None);
        assert!(
            restored.notices[0].contains("Compare is off"),
            "{:?}",
            restored.notices
        );
    }

    #[test]
    fn the_architecture_comes_back_and_a_kv_heads_value_that_does_not_divide_falls_back() {
        use engine::config::{AttentionType, PositionEmbeddingType};
        let s = LabSettings {
            architecture: Architecture {
                kv_heads: Some(2),
                positions: PositionEmbeddingType::Rotary,
                attention: AttentionType::Linear,
                scaling: Default::default(),
            },
            compare: Some(Architecture {
                scaling: engine::config::AttentionScaling::None,
                ..Architecture::default()
            }),
            ..LabSettings::default()
        };
        let kept = serde_json::to_string(&s).unwrap();
        assert!(kept.contains("\"scaling\":\"none\""), "{kept}");
        assert!(kept.contains("\"positions\":\"rotary\""), "{kept}");
        let restored = settings(Some(&kept));
        assert_eq!((restored.value, restored.notices), (s, Vec::new()));
        // Hand-edited: 3 K/V groups for 4 heads.
        let bad = kept.replace("\"kv_heads\":2", "\"kv_heads\":3");
        let restored = settings(Some(&bad));
        assert_eq!(restored.value.architecture.kv_heads, None);
        assert_eq!(
            restored.value.architecture.positions,
            PositionEmbeddingType::Rotary
        );
        assert_eq!(restored.notices.len(), 1, "{:?}", restored.notices);
        assert!(
            restored.notices[0].starts_with("KV heads 3 from the last visit was reset to none: KV heads must divide the 4 heads"),
            "{:?}",
            restored.notices
        );
        let bad = kept.replace("\"linear\"", "\"sparse\"");
        let restored = settings(Some(&bad));
        assert_eq!(
            restored.value.architecture.attention,
            AttentionType::Softmax
        );
        assert_eq!(restored.notices.len(), 1);
        // ALiBi with linear attention (a hand edit): ALiBi stays, softmax attention applies.
        let bad = kept.replace("\"rotary\"", "\"alibi\"");
        let restored = settings(Some(&bad));
        let a = restored.value.architecture;
        assert_eq!(
            (a.positions, a.attention),
            (PositionEmbeddingType::Alibi, AttentionType::Softmax)
        );
        assert_eq!(restored.notices.len(), 1, "{:?}", restored.notices);
        assert!(
            restored.notices[0].contains("linear attention has no scores"),
            "{:?}",
            restored.notices
        );
        // Settings kept before the group existed load as BERT's, quietly.
        let mut old: Value = serde_json::from_str(&kept).unwrap();
        old.as_object_mut().unwrap().remove("architecture");
        let restored = settings(Some(&old.to_string()));
        assert_eq!(restored.value.architecture, Architecture::default());
        assert!(restored.notices.is_empty());
        assert_eq!(
            serde_json::from_str::<LabSettings>(&old.to_string())
                .unwrap()
                .architecture,
            Architecture::default()
        );
    }

    #[test]
    fn window_and_kernel_come_back_and_old_probes_load_without_them() {
        use crate::ProbeKernel;
        let p = ProbeInput {
            window: Some(3),
            attention: ProbeKernel::Tiled,
            ..ProbeInput::default()
        };
        let kept = serde_json::to_string(&p).unwrap();
        let restored = probe(Some(&kept));
        assert_eq!((restored.value, restored.notices), (p, Vec::new()));
        let zero = probe(Some(&kept.replace("\"window\":3", "\"window\":0")));
        assert_eq!(zero.value.window, None);
        assert_eq!(zero.notices.len(), 1, "{:?}", zero.notices);
        let mut old: Value = serde_json::from_str(&kept).unwrap();
        old.as_object_mut().unwrap().remove("window");
        old.as_object_mut().unwrap().remove("attention");
        let old = old.to_string();
        let from_serde = serde_json::from_str::<ProbeInput>(&old).unwrap();
        assert_eq!(
            (from_serde.window, from_serde.attention),
            (None, ProbeKernel::Full)
        );
        assert!(probe(Some(&old)).notices.is_empty());
    }

    #[test]
    fn fixed_batch_is_read_and_settings_kept_before_it_load_with_it_off() {
        let on = LabSettings {
            fixed_batch: true,
            ..LabSettings::default()
        };
        let kept = serde_json::to_string(&on).unwrap();
        assert_eq!(settings(Some(&kept)).value, on);
        let mut old: serde_json::Value = serde_json::from_str(&kept).unwrap();
        old.as_object_mut().unwrap().remove("fixed_batch");
        let old = old.to_string();
        assert!(
            !serde_json::from_str::<LabSettings>(&old)
                .unwrap()
                .fixed_batch
        );
        let restored = settings(Some(&old));
        assert!(!restored.value.fixed_batch && restored.notices.is_empty());
        let bad = kept.replace("\"fixed_batch\":true", "\"fixed_batch\":3");
        let restored = settings(Some(&bad));
        assert!(!restored.value.fixed_batch);
        assert_eq!(restored.notices.len(), 1, "{:?}", restored.notices);
    }
}
