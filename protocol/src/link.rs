//! A link to a view: the page's address holds what is on screen as a query string, so a
//! teacher can send "layer 2, head 3, causal mask, stage 4" and a reload comes back to it.
//!
//! `write` gives the query for a `View`; `read` checks a query field by field with the rules
//! the page applies to what the user types (`rules`), as `restore` checks what storage kept.
//! An address is anything anyone typed or pasted: a field that cannot be read keeps its
//! default and says why, and the good fields around it stay.

use crate::fields::{self, Field, Kind};
use crate::remote::CheckpointSource;
use crate::restore::Restored;
use crate::rules;
use crate::stage::Stage;
use crate::view::{Embed, Part, Selection, Showing};
use crate::{Architecture, LabSettings, ModelKind, Preset, ProbeInput, ProbeKernel};
use engine::batch::MaskMode;
use engine::config::{AttentionScaling, AttentionType};
use engine::seq2seq::Task;
use engine::train::Objective;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
// What the tests check the rules read back.
#[cfg(test)]
use crate::fields::{mask_name, objective_name, task_name};

/// The longest sentence a link may carry, in characters: about as much as a model reads
/// (MiniLM reads 512 tokens), and short enough that the address stays within what servers take
/// (2,000 characters of any script percent-encode to at most 24 kB). `write` cuts a longer
/// one, so every link the page writes reads back.
pub const MAX_TEXT: usize = 2_000;

/// Words in the query that switch the page into a mode, not parts of the view: kept as they
/// are.
pub const SWITCHES: [&str; 2] = ["test-hooks", "bench"];

/// The most notices one link gives (the last says how many more there were).
pub const MAX_NOTICES: usize = 8;

/// The highest layer or head a link may name (1-based). The model at hand may have fewer; the
/// page checks that when it has one.
pub const MAX_INDEX: usize = 64;

/// What shapes a model: changing any of these means building another one (a Reset).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelShape {
    pub preset: Preset,
    pub kind: ModelKind,
    pub architecture: Architecture,
    pub compare: Option<Architecture>,
}

impl ModelShape {
    /// The shape of the model `settings` build. An encoder–decoder is built with BERT's
    /// attention and trains alone, so for one the Architecture group and Compare do not count.
    pub fn of(settings: &LabSettings) -> ModelShape {
        let kind = settings.kind();
        let alone = kind.encoder_decoder();
        ModelShape {
            preset: settings.preset,
            kind,
            architecture: if alone {
                Architecture::default()
            } else {
                settings.architecture
            },
            compare: settings.compare.filter(|_| !alone),
        }
    }

    /// The default settings with this shape.
    pub fn settings(self) -> LabSettings {
        self.applied_to(&LabSettings::default())
    }

    /// `settings` with this shape; the rest (learning rate, batch, seed…) as they were, but
    /// for a shape that turns to Repeat: it trains with Repeat's measured seed, batch and
    /// learning rate, which a link does not carry.
    pub fn applied_to(self, settings: &LabSettings) -> LabSettings {
        let mut applied = LabSettings {
            preset: self.preset,
            architecture: self.architecture,
            compare: self.compare,
            ..settings.clone()
        };
        applied.set_kind(self.kind);
        if applied.repeat_task().is_some() && settings.repeat_task().is_none() {
            applied.repeat_training();
        }
        applied
    }

    /// What differs from the model `here` would build, each as "preset small (here tiny)".
    pub fn differences(self, here: ModelShape) -> Vec<String> {
        let mut out = Vec::new();
        let mut differ = |what: &str, link: String, here: String| {
            if link != here {
                out.push(format!("{what} {link} (here {here})"));
            }
        };
        differ(
            "preset",
            self.preset.name().into(),
            here.preset.name().into(),
        );
        differ(
            "model",
            fields::kind_words(self.kind),
            fields::kind_words(here.kind),
        );
        let (a, b) = (self.architecture, here.architecture);
        let (heads, here_heads) = (self.heads(), here.heads());
        let (da, db) = (a.describe(heads), b.describe(here_heads));
        differ("KV heads", kv_words(a), kv_words(b));
        differ("positions", da.positions().into(), db.positions().into());
        differ("attention", da.attention().into(), db.attention().into());
        differ(
            "scaling",
            a.scaling.label().into(),
            b.scaling.label().into(),
        );
        let compare = |c: Option<Architecture>, heads: usize| {
            c.map_or("off".to_string(), |b| {
                format!("with B: {}", b.describe(heads).name())
            })
        };
        differ(
            "Compare",
            compare(self.compare, heads),
            compare(here.compare, here_heads),
        );
        out
    }

    /// H of the preset.
    fn heads(self) -> usize {
        self.preset.config().num_attention_heads
    }
}

fn kv_words(a: Architecture) -> String {
    match a.kv_heads {
        Some(g) => g.to_string(),
        None => "one per head".to_string(),
    }
}

/// Everything a link restores.
#[derive(Clone, Debug, PartialEq)]
pub struct View {
    /// Sentence, second sentence, target, Pad to, mask, window and attention kernel.
    pub probe: ProbeInput,
    pub stage: Stage,
    /// Layer, head and part, 0-based (a link counts from 1, as the page does).
    pub selection: Selection,
    pub showing: Showing,
    /// The tour's chapter, 1-based; None when the tour is closed.
    pub chapter: Option<usize>,
    pub shape: ModelShape,
    /// The one view an embedded page shows (`&embed`); None for the whole page.
    pub embed: Option<Embed>,
    /// Where the model is (`checkpoint=`): the page opens it instead of building one, so the
    /// link's model shape does not apply and is not written.
    pub checkpoint: Option<CheckpointSource>,
}

impl Default for View {
    fn default() -> Self {
        View {
            probe: ProbeInput::default(),
            stage: Stage::FIRST_SHOWN,
            selection: Selection::default(),
            showing: Showing::A,
            chapter: None,
            shape: ModelShape::of(&LabSettings::default()),
            embed: None,
            checkpoint: None,
        }
    }
}

/// What a query value may hold unencoded: letters, digits and `-._~` (RFC 3986's unreserved).
const ENCODED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The query for `view` ("?sentence=…&head=2", or "" for the defaults), with the page's
/// `switches` (e.g. "test-hooks") first. Only what differs from the default is written.
pub fn write(view: &View, switches: &[&str]) -> String {
    let d = View::default();
    let mut parts: Vec<String> = switches.iter().map(|s| s.to_string()).collect();
    let mut put = |key: &str, value: &str| {
        parts.push(format!("{key}={}", utf8_percent_encode(value, ENCODED)))
    };
    put_fields(&mut put, "", &fields::PROBE, &view.probe, &d.probe);
    if view.stage != d.stage {
        put("stage", view.stage.slug());
    }
    if view.selection.layer != 0 {
        put("layer", &(view.selection.layer + 1).to_string());
    }
    if view.selection.head != 0 {
        put("head", &(view.selection.head + 1).to_string());
    }
    if view.selection.part != Part::default() {
        put("part", view.selection.part.slug());
    }
    if view.showing != d.showing {
        put("model", &view.showing.label().to_lowercase());
    }
    if let Some(c) = view.chapter {
        put("tour", &c.to_string());
    }
    // A checkpoint's shape is its own: the settings' would only offer a Reset.
    let shape = view.checkpoint.as_ref().map_or(&view.shape, |_| &d.shape);
    let (s, ds) = (shape.settings(), d.shape.settings());
    put_fields(&mut put, "", &fields::SETTINGS, &s, &ds);
    put_fields(
        &mut put,
        "",
        &fields::ARCHITECTURE_FIELDS,
        &s.architecture,
        &ds.architecture,
    );
    put_fields(&mut put, "", &[&fields::COMPARE], &s, &ds);
    if let Some(b) = s.compare {
        let d = Architecture::default();
        put_fields(
            &mut put,
            fields::MODEL_B_LINK,
            &fields::ARCHITECTURE_FIELDS,
            &b,
            &d,
        );
    }
    match view.embed {
        // A bare word, as a teacher would type it.
        Some(Embed::Stage) => parts.push("embed".to_string()),
        Some(e) => put("embed", e.slug()),
        None => {}
    }
    if let Some(c) = &view.checkpoint {
        parts.push(format!("{CHECKPOINT_KEY}={}", c.link_value()));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("?{}", parts.join("&"))
    }
}

/// Each of `rows` a link carries whose value in `value` differs from the one in `default`, its
/// key after `prefix`.
fn put_fields<S, C>(
    put: &mut impl FnMut(&str, &str),
    prefix: &str,
    rows: &[&Field<S, C>],
    value: &S,
    default: &S,
) {
    for link in rows.iter().filter_map(|f| f.link.as_ref()) {
        let written = (link.write)(value);
        if let Some(v) = written
            .as_deref()
            .filter(|_| written != (link.write)(default))
        {
            put(&format!("{prefix}{}", link.key), cut(v));
        }
    }
}

/// The view a query asks for, read against a tour of `chapters` chapters; None when the query
/// names no part of a view (a plain visit, or only the page's switches). `notices` hold one
/// sentence per field that could not be read (its default applies).
pub fn read(query: &str, chapters: usize) -> Option<Restored<View>> {
    let mut fields: Vec<(String, Result<String, String>)> = Vec::new();
    let mut notices = Vec::new();
    for part in query.trim_start_matches('?').split('&') {
        if part.is_empty() || SWITCHES.contains(&part) {
            continue;
        }
        let (key, value) = part.split_once('=').unwrap_or((part, ""));
        let key = match decode(key) {
            Ok(k) => k,
            Err(why) => {
                notices.push(format!(
                    "A key of the link was unreadable ({why}): ignored."
                ));
                continue;
            }
        };
        if !is_key(&key) {
            notices.push(format!(
                "The link's \"{}\" is not something a link sets: ignored.",
                shorten(&key)
            ));
            continue;
        }
        if fields.iter().any(|(k, _)| *k == key) {
            notices.push(format!(
                "The link gives \"{key}\" twice: the first is used."
            ));
            continue;
        }
        fields.push((key, decode(value)));
    }
    if fields.is_empty() && notices.is_empty() {
        return None;
    }
    let mut r = Reader {
        fields,
        notices,
        view: View::default(),
    };
    r.read_probe();
    r.read_view(chapters);
    r.read_shape();
    if r.view.checkpoint.is_some() && r.view.shape != View::default().shape {
        r.notices.push(
            "Checkpoint: the link opens that model, so its model settings are ignored.".into(),
        );
        r.view.shape = View::default().shape;
    }
    // A link of a thousand bad keys is one line, not a thousand.
    let mut notices = r.notices;
    if notices.len() > MAX_NOTICES {
        let more = notices.len() - (MAX_NOTICES - 1);
        notices.truncate(MAX_NOTICES - 1);
        notices.push(format!("And {more} more problems, ignored."));
    }
    Some(Restored {
        value: r.view,
        notices,
    })
}

/// What a course page needs to show `embed` from `address` (a link with `&embed`): an
/// `<iframe>`, and a line of script that sets its height to the one the embed posts
/// (`src/embed.rs`), so the course page scrolls and the frame never does. Where a course site
/// strips scripts, the height attribute stays: what most views take at 800 px wide.
pub fn embed_code(address: &str, embed: Embed) -> String {
    let height = match embed {
        Embed::Stage => 820,
        Embed::Model => 620,
        Embed::Claim(_) => 780,
    };
    format!(
        "<iframe data-attention-lab src=\"{}\" title=\"Attention Lab: {}\" width=\"100%\" height=\"{height}\" style=\"border: 0; max-width: 100%\" loading=\"lazy\"></iframe>\n{HEIGHT_SCRIPT}",
        attribute(address),
        attribute(&embed.label())
    )
}

/// Sizes each Attention Lab iframe to the height its page posts (`{ attentionLabHeight }`).
const HEIGHT_SCRIPT: &str = "<script>addEventListener(\"message\", function (e) { document.querySelectorAll(\"iframe[data-attention-lab]\").forEach(function (f) { if (f.contentWindow === e.source && e.data && e.data.attentionLabHeight > 0) f.height = Math.ceil(e.data.attentionLabHeight); }); });</script>";

/// `text` as an HTML attribute's value between double quotes.
fn attribute(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The link key of a model from a web address (`remote::CheckpointSource`).
pub const CHECKPOINT_KEY: &str = "checkpoint";

/// The keys of the view around the settings' (`fields`), `CHECKPOINT_KEY` too.
const VIEW_KEYS: [&str; 7] = ["stage", "layer", "head", "part", "model", "tour", "embed"];

/// Whether a link may hold `key`.
fn is_key(key: &str) -> bool {
    let own = |k: Option<String>| k.as_deref() == Some(key);
    let b = fields::MODEL_B_LINK;
    VIEW_KEYS.contains(&key)
        || key == CHECKPOINT_KEY
        || fields::PROBE.iter().any(|f| own(f.link_key("")))
        || fields::SETTINGS.iter().any(|f| own(f.link_key("")))
        || own(fields::COMPARE.link_key(""))
        || fields::ARCHITECTURE_FIELDS
            .iter()
            .any(|f| own(f.link_key("")) || own(f.link_key(b)))
}

struct Reader {
    fields: Vec<(String, Result<String, String>)>,
    notices: Vec<String>,
    view: View,
}

impl Reader {
    /// `key`'s value read by `parse`; None when absent. A value that cannot be read leaves a
    /// notice naming the field (`label`) and is None too, so the default stays.
    fn get<T>(
        &mut self,
        key: &str,
        label: &str,
        parse: impl FnOnce(&str) -> Result<T, String>,
    ) -> Option<T> {
        let value = self.fields.iter().find(|(k, _)| k == key)?.1.clone();
        let result = value.and_then(|v| parse(&v));
        match result {
            Ok(v) => Some(v),
            Err(why) => {
                self.notices
                    .push(format!("{label}: {why}, so the default applies."));
                None
            }
        }
    }

    /// `field` as the link gives it (its key after `prefix`), set on `value` if it passes the
    /// field's rule; a notice names it after `who` (Compare's "Model B: ") when it does not.
    fn field<S, C>(&mut self, field: &Field<S, C>, prefix: &str, who: &str, value: &mut S, c: C) {
        let Some(key) = field.link_key(prefix) else {
            return;
        };
        let label = format!("{who}{}", field.label);
        self.get(&key, &label, |v| {
            if let Kind::Text(_) = field.value {
                let n = v.chars().count();
                if n > MAX_TEXT {
                    return Err(format!(
                        "{n} characters are more than the {MAX_TEXT} a link may carry"
                    ));
                }
            }
            field.apply(value, v, c).map_err(|e| e.to_string())
        });
    }

    fn read_probe(&mut self) {
        let mut p = self.view.probe.clone();
        for f in fields::PROBE {
            self.field(f, "", "", &mut p, None);
        }
        self.view.probe = p;
    }

    fn read_view(&mut self, chapters: usize) {
        if let Some(s) = self.get("stage", "Stage", |v| {
            Stage::from_slug(v).ok_or_else(|| format!("\"{}\" is not a stage", shorten(v)))
        }) {
            self.view.stage = s;
        }
        if let Some(l) = self.get("layer", "Layer", |v| index(v, MAX_INDEX)) {
            self.view.selection.layer = l - 1;
        }
        if let Some(h) = self.get("head", "Head", |v| index(v, MAX_INDEX)) {
            self.view.selection.head = h - 1;
        }
        if let Some(part) = self.get("part", "Attention part", |v| {
            Part::ALL
                .into_iter()
                .find(|p| p.slug() == v)
                .ok_or_else(|| "it must be self, cross or encoder".to_string())
        }) {
            self.view.selection.part = part;
        }
        if let Some(m) = self.get("model", "Model", |v| {
            Showing::ALL
                .into_iter()
                .find(|s| s.label().eq_ignore_ascii_case(v))
                .ok_or_else(|| "it must be A, B or Both".to_string())
        }) {
            self.view.showing = m;
        }
        if let Some(c) = self.get("tour", "Tour chapter", |v| index(v, chapters)) {
            self.view.chapter = Some(c);
        }
        if let Some(e) = self.get("embed", "Embed", |v| {
            Embed::from_slug(v).ok_or_else(|| {
                let names: Vec<&str> = Embed::all().skip(1).map(Embed::slug).collect();
                format!(
                    "\"{}\" is not a view to embed (nothing for a stage's figures, or {})",
                    shorten(v),
                    names.join(", ")
                )
            })
        }) {
            self.view.embed = Some(e);
        }
        self.view.checkpoint = self.get(CHECKPOINT_KEY, "Checkpoint", CheckpointSource::parse);
    }

    fn read_shape(&mut self) {
        let mut shape = self.view.shape;
        let mut s = shape.settings();
        self.field(&fields::PRESET, "", "", &mut s, ());
        shape.preset = s.preset;
        shape.kind = self.read_kind();
        let heads = shape.preset.config().num_attention_heads;
        shape.architecture = self.architecture("", "", heads);
        let compare = &fields::COMPARE;
        let compare_on = self.get(
            compare.link_key("").as_deref().unwrap_or_default(),
            compare.label,
            |v| match v {
                "on" => Ok(true),
                "off" => Ok(false),
                _ => Err("it must be on or off".to_string()),
            },
        );
        let b = self.architecture(fields::MODEL_B_LINK, fields::MODEL_B_LABEL, heads);
        let b_given = fields::ARCHITECTURE_FIELDS
            .iter()
            .filter_map(|f| f.link_key(fields::MODEL_B_LINK))
            .any(|k| self.fields.iter().any(|(f, _)| *f == k));
        shape.compare = match compare_on {
            Some(false) if b_given => {
                self.notices.push(
                    "Compare: the link says off, so its model B settings are ignored.".into(),
                );
                None
            }
            Some(false) => None,
            _ => (compare_on.is_some() || b_given).then_some(b),
        };
        if shape.kind.encoder_decoder() {
            let ignored: Vec<&str> = [
                (
                    shape.architecture != Architecture::default(),
                    "the architecture",
                ),
                (shape.compare.is_some(), "Compare"),
            ]
            .into_iter()
            .filter_map(|(given, what)| given.then_some(what))
            .collect();
            if !ignored.is_empty() {
                self.notices.push(format!(
                    "Objective: an encoder–decoder is built with BERT's attention and trains alone, so {} in the link {} ignored.",
                    ignored.join(" and "),
                    if ignored.len() > 1 { "are" } else { "is" }
                ));
            }
            shape.architecture = Architecture::default();
            shape.compare = None;
        }
        self.view.shape = shape;
    }

    /// The kind of model a link's `objective` and `task` give: "seq2seq" alone is an
    /// encoder–decoder on Reverse; a task that does not go with the objective is ignored, and
    /// said so.
    fn read_kind(&mut self) -> ModelKind {
        let (objective, task) = (&fields::OBJECTIVE, &fields::TASK);
        let mut s = LabSettings::default();
        // `None` is an encoder–decoder.
        let seq2seq = self.get(
            objective.link_key("").as_deref().unwrap_or_default(),
            objective.label,
            |v| match v {
                v if v == fields::SEQ2SEQ.name => Ok(None),
                v => fields::objective_named(v).map(Some).map_err(|_| {
                    let names: Vec<&str> = fields::OBJECTIVES.iter().map(|c| c.name).collect();
                    format!("it must be {} or {}", names[..2].join(", "), names[2])
                }),
            },
        );
        match seq2seq {
            Some(Some(objective)) => s.objective = objective,
            Some(None) => s.task = Some(Task::Reverse),
            None => {}
        }
        // `None` is Next token's Repeat.
        let task = self.get(
            task.link_key("").as_deref().unwrap_or_default(),
            task.label,
            |v| match v {
                v if v == fields::REPEAT_TASK.name => Ok(None),
                v => fields::task_named(v).map(Some).map_err(|e| e.to_string()),
            },
        );
        match (task, s.task) {
            (Some(Some(t)), Some(_)) => s.task = Some(t),
            (Some(None), None) if s.objective == Objective::NextToken => s.repeat = true,
            (Some(Some(_)), None) => self.notices.push(format!(
                "{}: a task needs the objective {}, so it is ignored.",
                fields::TASK.label,
                fields::SEQ2SEQ.name
            )),
            (Some(None), _) => self.notices.push(format!(
                "{}: {} needs the objective {}, so it is ignored.",
                fields::TASK.label,
                fields::REPEAT_TASK.name,
                fields::NEXT_TOKEN.name
            )),
            (None, _) => {}
        }
        s.kind()
    }

    fn architecture(&mut self, prefix: &str, who: &str, heads: usize) -> Architecture {
        let mut a = Architecture::default();
        for f in fields::ARCHITECTURE_FIELDS {
            self.field(f, prefix, who, &mut a, heads);
        }
        if let Err(why) = rules::architecture(a) {
            self.notices.push(format!(
                "{who}{}: {why}, so softmax attention applies.",
                fields::positions_and_attention()
            ));
            a.attention = AttentionType::Softmax;
        }
        a
    }
}

/// A 1-based number from 1 to `max`.
fn index(v: &str, max: usize) -> Result<usize, String> {
    match v.parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        Ok(n) => Err(format!("{n} is not between 1 and {max}")),
        Err(_) => Err(format!("\"{}\" is not a whole number", shorten(v))),
    }
}

/// A query value as typed: `+` is a space, `%XX` a byte, and the bytes must be UTF-8. A `%`
/// without two hex digits after it is an error, not a literal, so a cut-off link says so.
pub fn decode(value: &str) -> Result<String, String> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes.get(i + 1..i + 3).and_then(|h| {
                    let h = std::str::from_utf8(h).ok()?;
                    u8::from_str_radix(h, 16)
                        .ok()
                        .filter(|_| h.bytes().all(|b| b.is_ascii_hexdigit()))
                });
                match hex {
                    Some(b) => out.push(b),
                    None => return Err("a % not followed by two hex digits".into()),
                }
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| "its bytes are not UTF-8 text".into())
}

/// At most [`MAX_TEXT`] characters of `text`.
fn cut(text: &str) -> &str {
    match text.char_indices().nth(MAX_TEXT) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// At most 40 characters of what the user sent, for a notice.
fn shorten(v: &str) -> String {
    if v.chars().count() <= 40 {
        v.to_string()
    } else {
        format!("{}…", v.chars().take(40).collect::<String>())
    }
}

/// Every field set away from its default, for the tests here and the fuzz target's seeds.
pub fn example() -> View {
    View {
        probe: ProbeInput {
            text: "the cat sat on the mat & 50% more ü 🐱 [MASK] ?x=1#y".into(),
            pair: "a + b = c".into(),
            target: "tam eht no tas tac eht".into(),
            pad_to: Some(20),
            mask: MaskMode::Causal,
            window: Some(3),
            attention: ProbeKernel::Tiled,
        },
        stage: Stage::Softmax,
        selection: Selection {
            layer: 1,
            head: 3,
            part: Part::Cross,
        },
        showing: Showing::Both,
        chapter: Some(6),
        shape: ModelShape {
            preset: Preset::Small,
            kind: ModelKind::Decoder {
                repeat: Some(engine::repeat::RepeatTask::default()),
            },
            architecture: Architecture {
                kv_heads: Some(2),
                positions: engine::config::PositionEmbeddingType::Rotary,
                attention: engine::config::AttentionType::Softmax,
                scaling: AttentionScaling::None,
            },
            compare: Some(Architecture {
                kv_heads: None,
                positions: engine::config::PositionEmbeddingType::Absolute,
                attention: engine::config::AttentionType::Linear,
                scaling: AttentionScaling::default(),
            }),
        },
        embed: Some(Embed::Claim(crate::claims::Claim::KvCache)),
        checkpoint: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_survives_a_round_trip() {
        let view = example();
        let query = write(&view, &[]);
        let back = read(&query, 14).expect("a view");
        assert_eq!(back.notices, Vec::<String>::new());
        assert_eq!(back.value, view);
        // A decoder's objective and each task too.
        for kind in [
            ModelKind::Decoder { repeat: None },
            ModelKind::EncoderDecoder(Task::Reply),
        ] {
            let mut v = View::default();
            v.shape.kind = kind;
            assert_eq!(read(&write(&v, &[]), 14).unwrap().value, v);
        }
    }

    #[test]
    fn repeat_is_a_next_token_task_and_ignored_elsewhere() {
        let repeat = read("?objective=next-token&task=repeat", 14).unwrap();
        assert!(repeat.value.shape.kind.repeat().is_some());
        assert_eq!(
            repeat.value.shape.settings().repeat_task(),
            Some(engine::repeat::RepeatTask::default())
        );
        // A link to Repeat trains it in its measured setting, which the link does not carry.
        let settings = repeat.value.shape.settings();
        assert_eq!(
            (settings.seed, settings.batch_size, settings.learning_rate),
            (
                engine::repeat::RepeatTask::SEED,
                engine::repeat::RepeatTask::BATCH_SIZE,
                engine::repeat::RepeatTask::LEARNING_RATE
            )
        );
        assert_eq!(
            write(&repeat.value, &[]),
            "?objective=next-token&task=repeat"
        );
        let ignored = read("?task=repeat", 14).unwrap();
        assert_eq!(ignored.value.shape.kind, ModelKind::Encoder);
        assert_eq!(
            ignored.notices,
            vec!["Task: repeat needs the objective next-token, so it is ignored."]
        );
        let mut here = View::default().shape;
        here.kind = ModelKind::Decoder { repeat: None };
        assert_eq!(
            repeat.value.shape.differences(here),
            vec!["model a next-token decoder on Repeat (here a next-token decoder)"]
        );
    }

    #[test]
    fn the_defaults_write_nothing_and_a_plain_visit_is_no_link() {
        assert_eq!(write(&View::default(), &[]), "");
        assert_eq!(write(&View::default(), &["test-hooks"]), "?test-hooks");
        assert_eq!(read("", 14), None);
        assert_eq!(read("?test-hooks", 14), None);
        assert_eq!(read("?test-hooks&bench", 14), None);
    }

    #[test]
    fn switches_are_kept_beside_the_view() {
        let mut v = View::default();
        v.selection.head = 1;
        assert_eq!(write(&v, &["test-hooks"]), "?test-hooks&head=2");
        assert_eq!(read("?test-hooks&head=2", 14).unwrap().value, v);
    }

    #[test]
    fn bad_fields_fall_back_one_by_one_and_say_so() {
        let r = read(
            "?head=2&layer=zero&mask=sideways&stage=nope&tour=99&kv=3&foo=1",
            14,
        )
        .unwrap();
        assert_eq!(r.value.selection.head, 1, "the good field stays");
        assert_eq!(r.value.selection.layer, 0);
        assert_eq!(r.value.probe.mask, MaskMode::Padding);
        assert_eq!(r.value.stage, Stage::FIRST_SHOWN);
        assert_eq!(r.value.chapter, None);
        assert_eq!(r.value.shape.architecture.kv_heads, None);
        let all = r.notices.join(" | ");
        for needle in [
            "Layer: \"zero\"",
            "Mask:",
            "Stage: \"nope\"",
            "Tour chapter: 99 is not between 1 and 14",
            "KV heads",
            "\"foo\" is not something a link sets",
        ] {
            assert!(all.contains(needle), "{needle} in {all}");
        }
        assert_eq!(r.notices.len(), 6);
    }

    /// ALiBi with linear attention cannot be built: the link keeps ALiBi and says why it
    /// takes softmax attention instead; ALiBi with softmax reads back as given.
    #[test]
    fn alibi_with_linear_attention_falls_back_to_softmax_and_says_why() {
        use engine::config::PositionEmbeddingType;
        let r = read("?positions=alibi&attention=linear", 14).unwrap();
        let a = r.value.shape.architecture;
        assert_eq!(
            (a.positions, a.attention),
            (PositionEmbeddingType::Alibi, AttentionType::Softmax)
        );
        assert_eq!(r.notices.len(), 1, "{:?}", r.notices);
        assert!(
            r.notices[0].starts_with("Positions and Attention: ALiBi adds its bias")
                && r.notices[0].ends_with("so softmax attention applies."),
            "{:?}",
            r.notices
        );
        let r = read("?positions=alibi", 14).unwrap();
        assert_eq!(
            r.value.shape.architecture.positions,
            PositionEmbeddingType::Alibi
        );
        assert!(r.notices.is_empty());
    }

    #[test]
    fn a_huge_sentence_is_refused_and_the_default_kept() {
        let huge = "a".repeat(100_000);
        let r = read(&format!("?sentence={huge}&pair=ok"), 14).unwrap();
        const { assert!(MAX_TEXT < 100_000) };
        assert_eq!(r.value.probe.text, ProbeInput::default().text);
        assert_eq!(r.value.probe.pair, "ok");
        assert!(
            r.notices[0].starts_with("Sentence: 100000 characters"),
            "{:?}",
            r.notices
        );
    }

    #[test]
    fn malformed_percent_encoding_is_named_not_guessed() {
        for bad in ["%", "%4", "%zz", "%+1", "%C3%28", "a%-1"] {
            assert!(decode(bad).is_err(), "{bad}");
            let r = read(&format!("?sentence={bad}"), 14).unwrap();
            assert_eq!(r.value.probe.text, ProbeInput::default().text);
            assert_eq!(r.notices.len(), 1, "{bad}: {:?}", r.notices);
        }
        assert_eq!(decode("a+b%20c%F0%9F%90%B1").unwrap(), "a b c🐱");
        assert!(read("?%zz=1", 14).unwrap().notices[0].contains("unreadable"));
    }

    #[test]
    fn a_sentence_longer_than_a_link_carries_is_cut_so_the_link_reads_back() {
        let mut v = View::default();
        v.probe.text = "é".repeat(MAX_TEXT + 9);
        let back = read(&write(&v, &[]), 14).unwrap();
        assert_eq!(back.notices, Vec::<String>::new());
        assert_eq!(back.value.probe.text.chars().count(), MAX_TEXT);
    }

    #[test]
    fn an_encoder_decoder_link_drops_what_such_a_model_ignores_and_says_so() {
        let r = read("?objective=seq2seq&task=copy&kv=2&compare=on", 14).unwrap();
        assert_eq!(r.value.shape.kind, ModelKind::EncoderDecoder(Task::Copy));
        assert_eq!(r.value.shape.architecture, Architecture::default());
        assert_eq!(r.value.shape.compare, None);
        assert_eq!(r.notices.len(), 1, "{:?}", r.notices);
        assert!(r.notices[0].contains("the architecture and Compare"));
        // Settings for an encoder–decoder describe it without what it ignores.
        let settings = LabSettings {
            task: Some(Task::Copy),
            compare: Some(Architecture::default()),
            ..LabSettings::default()
        };
        assert_eq!(ModelShape::of(&settings).compare, None);
    }

    #[test]
    fn an_encoder_decoder_reads_back_whatever_objective_came_before_it() {
        let settings = LabSettings {
            objective: Objective::NextToken,
            task: Some(Task::Reply),
            ..LabSettings::default()
        };
        let v = View {
            shape: ModelShape::of(&settings),
            ..View::default()
        };
        assert_eq!(read(&write(&v, &[]), 14).unwrap().value.shape, v.shape);
    }

    #[test]
    fn a_thousand_bad_keys_make_a_few_notices() {
        let query = "?".to_string() + &vec!["x=1"; 1000].join("&");
        let r = read(&query, 14).unwrap();
        assert_eq!(r.notices.len(), MAX_NOTICES);
        assert!(r.notices[MAX_NOTICES - 1].starts_with("And 993 more"));
    }

    #[test]
    fn compare_off_wins_over_model_b_keys() {
        let r = read("?compare=off&b-kv=1", 14).unwrap();
        assert_eq!(r.value.shape.compare, None);
        assert_eq!(r.notices.len(), 1);
        let r = read("?b-kv=1", 14).unwrap();
        assert_eq!(r.value.shape.compare.unwrap().kv_heads, Some(1));
    }

    #[test]
    fn embed_reads_a_bare_word_as_the_stage_and_names_what_it_cannot_embed() {
        use crate::claims::Claim;
        let r = read("?stage=softmax&head=2&embed", 14).unwrap();
        assert_eq!(r.value.embed, Some(Embed::Stage));
        assert_eq!(r.value.selection.head, 1);
        assert!(r.notices.is_empty(), "{:?}", r.notices);
        assert_eq!(
            read("?embed=stage", 14).unwrap().value.embed,
            Some(Embed::Stage)
        );
        for e in Embed::all() {
            let v = View {
                embed: Some(e),
                ..View::default()
            };
            let query = write(&v, &["test-hooks"]);
            assert_eq!(read(&query, 14).unwrap().value, v, "{query}");
        }
        assert_eq!(
            write(
                &View {
                    embed: Some(Embed::Stage),
                    ..View::default()
                },
                &[]
            ),
            "?embed"
        );
        assert_eq!(
            read("?embed=heads", 14).unwrap().value.embed,
            Some(Embed::Claim(Claim::Heads))
        );
        let r = read("?embed=everything&head=2", 14).unwrap();
        assert_eq!(r.value.embed, None, "the whole page");
        assert_eq!(r.value.selection.head, 1);
        assert_eq!(r.notices.len(), 1);
        assert!(
            r.notices[0].starts_with("Embed: \"everything\" is not a view to embed")
                && r.notices[0].contains("model, leakage"),
            "{:?}",
            r.notices
        );
        // Slugs are distinct, so every embed reads back as itself.
        let slugs: std::collections::HashSet<&str> = Embed::all().map(Embed::slug).collect();
        assert_eq!(slugs.len(), Embed::all().count());
    }

    #[test]
    fn embed_code_is_an_iframe_whose_address_reads_back() {
        use crate::claims::Claim;
        let view = View {
            embed: Some(Embed::Claim(Claim::Scaling)),
            ..example()
        };
        let address = format!("https://example.org/courses/lab/{}", write(&view, &[]));
        let code = embed_code(&address, Embed::Claim(Claim::Scaling));
        assert!(
            code.starts_with("<iframe data-attention-lab src=\"https://example.org/courses/lab/?")
        );
        assert!(code.contains("></iframe>\n<script>") && code.ends_with("</script>"));
        assert!(code.contains("title=\"Attention Lab: the claim Scaling (√d_k)\""));
        // The address as a browser reads the attribute back: &amp; is &.
        let src = code
            .split("src=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap();
        assert!(!src.contains('<') && !src.contains('>'));
        let query = src.replace("&amp;", "&");
        let query = &query[query.find('?').unwrap()..];
        assert_eq!(read(query, 14).unwrap().value, view);
    }

    #[test]
    fn a_key_given_twice_keeps_the_first() {
        let r = read("?head=2&head=3", 14).unwrap();
        assert_eq!(r.value.selection.head, 1);
        assert_eq!(r.notices.len(), 1);
    }

    #[test]
    fn seq2seq_without_a_task_is_reverse_and_a_task_alone_is_ignored() {
        let r = read("?objective=seq2seq", 14).unwrap();
        assert_eq!(r.value.shape.kind, ModelKind::EncoderDecoder(Task::Reverse));
        let r = read("?task=copy", 14).unwrap();
        assert_eq!(r.value.shape.kind, ModelKind::Encoder);
        assert_eq!(r.notices.len(), 1);
    }

    #[test]
    fn the_shape_applies_to_settings_and_leaves_the_rest() {
        // Settings on Repeat already: the link's shape changes the shape alone.
        let mut settings = LabSettings {
            learning_rate: 0.01,
            objective: Objective::NextToken,
            repeat: true,
            ..LabSettings::default()
        };
        let shape = example().shape;
        assert!(shape.kind.repeat().is_some());
        settings = shape.applied_to(&settings);
        assert_eq!(ModelShape::of(&settings), shape);
        assert_eq!(settings.learning_rate, 0.01);
        // Turning to Repeat brings its measured learning rate.
        let turned = shape.applied_to(&LabSettings {
            learning_rate: 0.01,
            ..LabSettings::default()
        });
        assert_eq!(
            turned.learning_rate,
            engine::repeat::RepeatTask::LEARNING_RATE
        );
        let here = ModelShape::of(&LabSettings::default());
        assert_eq!(
            shape.differences(here)[..2],
            [
                "preset small (here tiny)".to_string(),
                "model a next-token decoder on Repeat (here MLM + NSP)".to_string()
            ]
        );
        let differences = shape.differences(here);
        assert_eq!(differences.len(), 6, "{differences:?}");
        assert!(differences.contains(&"scaling None (here ÷√d_k)".to_string()));
        assert!(here.differences(here).is_empty());
    }

    #[test]
    fn written_names_are_the_names_the_rules_read() {
        for m in [MaskMode::None, MaskMode::Padding, MaskMode::Causal] {
            assert_eq!(rules::mask(mask_name(m)).unwrap(), m);
        }
        for o in [Objective::MlmNsp, Objective::NextToken] {
            assert_eq!(fields::objective_named(objective_name(o)).unwrap(), o);
        }
        for t in [Task::Copy, Task::Reverse, Task::Reply] {
            assert_eq!(fields::task_named(task_name(t)).unwrap(), t);
        }
        for s in Stage::ALL {
            assert_eq!(Stage::from_slug(s.slug()), Some(s));
        }
    }
}
