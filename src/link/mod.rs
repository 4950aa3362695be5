//! The address bar as the page's view: what is on screen is written into it as it changes
//! (`history.replaceState`, so Back is not filled with every click), and an address opened
//! with a view in it is read back (`protocol::link` does the reading; this is the browser's
//! side). The views are in `view`.

pub mod course;
pub mod view;

use crate::explorer::ExplorerView;
use crate::live::{Live, Shown};
use leptos::prelude::*;
use protocol::link::{self, ModelShape, View, SWITCHES};
use protocol::remote::CheckpointSource;
use protocol::restore::Restored;
use protocol::view::{Embed, Part, Selection};
use protocol::{LabError, LabSettings, ModelInfo, ProbeInput};

/// The view on screen, from the signals that hold it.
#[derive(Clone, Copy)]
pub struct ViewSignals {
    pub probe: RwSignal<ProbeInput>,
    pub settings: RwSignal<LabSettings>,
    pub explorer: ExplorerView,
    /// The tour's chapter, 1-based; None when the tour is closed.
    pub chapter: RwSignal<Option<usize>>,
    /// The one view this page shows, when it was opened with `&embed`.
    pub embed: Option<Embed>,
    /// Where the model came from, when from a web address (`checkpoint=`).
    pub checkpoint: RwSignal<Option<CheckpointSource>>,
}

impl ViewSignals {
    /// The view now, tracked: an effect that calls this runs again when any part changes.
    pub fn current(&self) -> View {
        View {
            probe: self.probe.get(),
            stage: self.explorer.stage.get(),
            selection: self.explorer.selection.get(),
            showing: self.explorer.showing.get(),
            chapter: self.chapter.get(),
            shape: self.settings.with(ModelShape::of),
            embed: self.embed,
            checkpoint: self.checkpoint.get(),
        }
    }

    /// Shows `view`, except its model shape: that needs a Reset, which the user is asked for.
    pub fn show(&self, view: &View) {
        self.probe.set(view.probe.clone());
        self.explorer.stage.set(view.stage);
        self.explorer.selection.set(view.selection);
        self.explorer.showing.set(view.showing);
        self.chapter.set(view.chapter);
        self.checkpoint.set(view.checkpoint.clone());
    }
}

/// The page's address query ("?…"), "" outside a browser.
fn query() -> String {
    web_sys::window()
        .and_then(|w| w.location().search().ok())
        .unwrap_or_default()
}

/// The page's switches ("test-hooks", "bench") in the address it was opened with: they stay
/// in every address written.
pub fn switches() -> Vec<&'static str> {
    let query = query();
    let words: Vec<&str> = query.trim_start_matches('?').split('&').collect();
    SWITCHES.into_iter().filter(|s| words.contains(s)).collect()
}

/// The view the page was opened with, if its address holds one.
pub fn opened(chapters: usize) -> Option<Restored<View>> {
    link::read(&query(), chapters)
}

/// The one view to show, when the page was opened with `&embed`.
pub fn embedded(chapters: usize) -> Option<Embed> {
    opened(chapters).and_then(|link| link.value.embed)
}

/// The address for `view`: this page's, with the view as its query.
pub fn address(view: &View) -> String {
    let Some(location) = web_sys::window().map(|w| w.location()) else {
        return String::new();
    };
    let origin = location.origin().unwrap_or_default();
    let path = location.pathname().unwrap_or_default();
    format!("{origin}{path}{}", link::write(view, &switches()))
}

/// The view on screen, embedded as `embed` says (None: the whole page).
pub fn view_of(signals: ViewSignals, opened: Opened, embed: Signal<Option<Embed>>) -> Memo<View> {
    // While a Reset to the link's model is offered, the address keeps asking for that model:
    // a reload or a copied link must not lose the offer.
    Memo::new(move |_| {
        let mut view = signals.current();
        if let Some(shape) = opened.offer.get() {
            view.shape = shape;
        }
        view.embed = embed.get();
        view
    })
}

/// The address of the view on screen, embedded as `embed` says (None: the whole page).
pub fn address_of(
    signals: ViewSignals,
    opened: Opened,
    embed: Signal<Option<Embed>>,
) -> Memo<String> {
    let view = view_of(signals, opened, embed);
    Memo::new(move |_| view.with(address))
}

/// Keeps the address bar on the view, and returns the address as a signal (for "Copy link").
/// A change is written at once, and then at most once every 300 ms (the last one at the end
/// of the pause): Safari refuses more than 100 `replaceState` calls in 10 seconds, and typing a
/// sentence changes the view at every key.
pub fn follow(signals: ViewSignals, opened: Opened) -> Memo<String> {
    let href = address_of(signals, opened, Signal::stored(signals.embed));
    let written = StoredValue::new(String::new());
    let pausing = StoredValue::new(false);
    fn write(href: Memo<String>, written: StoredValue<String>, pausing: StoredValue<bool>) {
        let latest = href.get_untracked();
        if written.with_value(|w| *w == latest) {
            pausing.set_value(false);
            return;
        }
        if let Some(history) = web_sys::window().and_then(|w| w.history().ok()) {
            // A refusal leaves the bar behind; the view is still on screen, and Copy link
            // carries it.
            let _ = history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(&latest));
        }
        written.set_value(latest);
        pausing.set_value(true);
        set_timeout(
            move || write(href, written, pausing),
            std::time::Duration::from_millis(300),
        );
    }
    Effect::new(move |_| {
        href.track();
        if !pausing.get_value() {
            write(href, written, pausing);
        }
    });
    href
}

/// What opening a link left to say: fields it could not read (one line), and the model it
/// asks for when that is not the one here (a Reset the user may accept). Its layer and head
/// are checked against the first model that matches the link: the one here once the offer is
/// declined, or the one its Reset builds.
#[derive(Clone, Copy)]
pub struct Opened {
    pub notice: RwSignal<Option<String>>,
    pub offer: RwSignal<Option<ModelShape>>,
    /// The link's layer, head and part, until a model has answered whether they exist.
    unchecked: StoredValue<Option<Selection>>,
    shown: RwSignal<Selection>,
    /// The link's window, until a text has been read with it: a window needs as many tokens.
    unchecked_window: StoredValue<Option<usize>>,
    probe: RwSignal<ProbeInput>,
}

impl Opened {
    pub fn new(shown: RwSignal<Selection>, probe: RwSignal<ProbeInput>) -> Opened {
        Opened {
            notice: RwSignal::new(None),
            offer: RwSignal::new(None),
            unchecked: StoredValue::new(None),
            shown,
            unchecked_window: StoredValue::new(None),
            probe,
        }
    }

    fn add_notice(&self, line: String) {
        self.notice.update(|n| {
            *n = Some(match n.take() {
                Some(before) => format!("{before} {line}"),
                None => format!("Part of this link could not be read: {line}"),
            })
        });
    }

    /// The link's layer, head and part against the model `info` describes: one that does not
    /// exist is said once, and layer or head 1 (or self-attention) shown instead.
    pub fn check(&self, info: &ModelInfo) {
        let Some(asked) = self.unchecked.get_value() else {
            return;
        };
        self.unchecked.set_value(None);
        let (layers, heads) = (info.layers, info.heads);
        let mut sel = self.shown.get_untracked();
        if asked.part != Part::SelfAttention && !info.kind.encoder_decoder() {
            self.add_notice(format!(
                "Attention part: \"{}\" needs an encoder–decoder, and this model has only self-attention, which is shown.",
                asked.part.slug()
            ));
            sel.part = Part::SelfAttention;
        }
        if asked.layer >= layers {
            self.add_notice(format!(
                "Layer: this model has {layers} layers, so layer {} is shown as layer 1.",
                asked.layer + 1
            ));
            sel.layer = 0;
        }
        if asked.head >= heads {
            self.add_notice(format!(
                "Head: this model has {heads} heads, so head {} is shown as head 1.",
                asked.head + 1
            ));
            sel.head = 0;
        }
        self.shown.set(sel);
    }

    /// The link's window against the text as the model read it (`shown`): a window wider than
    /// the text's T tokens is said once and dropped.
    fn check_window(&self, shown: &Shown) {
        let Some(w) = self.unchecked_window.get_value() else {
            return;
        };
        let too_wide = match shown {
            None => return,
            Some(Ok(ins)) => protocol::rules::window_fits(w, Some(ins.tokens.len())).err(),
            // The worker refuses a window wider than the text before reading it.
            Some(Err(LabError::Setting(why))) if why.starts_with("Window:") => {
                Some(LabError::Setting(why.clone()))
            }
            Some(Err(_)) => None,
        };
        self.unchecked_window.set_value(None);
        if let Some(why) = too_wide {
            self.add_notice(format!("{why}, so the default (no window) applies."));
            self.probe.update(|p| p.window = None);
        }
    }
}

/// Shows the view the page was opened with (if any). The kept model is not touched: a link
/// for another model offers a Reset instead. Its layer, head, part and window are checked
/// against the first model that matches it (each Ready sets `live.info` again) and the first
/// text it reads.
pub fn open(chapters: usize, signals: ViewSignals, opened: Opened, live: Live) {
    let Some(mut link) = self::opened(chapters) else {
        return;
    };
    // A link carries at most MAX_TEXT characters of a text; a reload of the page's own
    // address keeps the whole text kept in this browser.
    let kept = signals.probe.get_untracked();
    let p = &mut link.value.probe;
    for (linked, kept) in [
        (&mut p.text, &kept.text),
        (&mut p.pair, &kept.pair),
        (&mut p.target, &kept.target),
    ] {
        if linked.chars().count() == link::MAX_TEXT && kept.starts_with(linked.as_str()) {
            *linked = kept.clone();
        }
    }
    signals.show(&link.value);
    for n in link.notices {
        opened.add_notice(n);
    }
    let here = signals.settings.with_untracked(ModelShape::of);
    // A link with a checkpoint opens that model (`RemoteModel`): no Reset to offer.
    if link.value.shape != here && link.value.checkpoint.is_none() {
        opened.offer.set(Some(link.value.shape));
    }
    opened.unchecked.set_value(Some(link.value.selection));
    opened.unchecked_window.set_value(link.value.probe.window);
    Effect::watch(
        move || live.info.get(),
        move |info, _, _| {
            // While a Reset is offered, the model here is not the link's.
            if let Some(info) = info {
                if opened.offer.with_untracked(Option::is_none) {
                    opened.check(info);
                }
            }
        },
        true,
    );
    Effect::watch(
        move || live.inspection.get(),
        move |shown, _, _| opened.check_window(shown),
        true,
    );
}
