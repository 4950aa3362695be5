//! The address bar as the page's view: what is on screen is written into it as it changes
//! (`history.replaceState`, so Back is not filled with every click), and an address opened
//! with a view in it is read back (`protocol::link` does the reading; this is the browser's
//! side). The views are in `view`.

pub mod view;

use crate::explorer::ExplorerView;
use leptos::prelude::*;
use protocol::link::{self, ModelShape, View, SWITCHES};
use protocol::restore::Restored;
use protocol::view::Selection;
use protocol::{LabSettings, ProbeInput};

/// The view on screen, from the signals that hold it.
#[derive(Clone, Copy)]
pub struct ViewSignals {
    pub probe: RwSignal<ProbeInput>,
    pub settings: RwSignal<LabSettings>,
    pub explorer: ExplorerView,
    /// The tour's chapter, 1-based; None when the tour is closed.
    pub chapter: RwSignal<Option<usize>>,
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
        }
    }

    /// Shows `view`, except its model shape: that needs a Reset, which the user is asked for.
    pub fn show(&self, view: &View) {
        self.probe.set(view.probe.clone());
        self.explorer.stage.set(view.stage);
        self.explorer.selection.set(view.selection);
        self.explorer.showing.set(view.showing);
        self.chapter.set(view.chapter);
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
fn switches() -> Vec<&'static str> {
    let query = query();
    let words: Vec<&str> = query.trim_start_matches('?').split('&').collect();
    SWITCHES.into_iter().filter(|s| words.contains(s)).collect()
}

/// The view the page was opened with, if its address holds one.
pub fn opened(chapters: usize) -> Option<Restored<View>> {
    link::read(&query(), chapters)
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

/// Keeps the address bar on the view, and returns the address as a signal (for "Copy link").
/// The bar is written at most every 300 ms: Safari refuses more than 100 `replaceState` calls
/// in 30 seconds, and typing a sentence changes the view at every key.
pub fn follow(signals: ViewSignals) -> Memo<String> {
    let href = Memo::new(move |_| address(&signals.current()));
    let waiting = StoredValue::new(false);
    Effect::new(move |_| {
        href.track();
        if waiting.get_value() {
            return;
        }
        waiting.set_value(true);
        set_timeout(
            move || {
                waiting.set_value(false);
                let latest = href.get_untracked();
                if let Some(history) = web_sys::window().and_then(|w| w.history().ok()) {
                    // A refusal leaves the bar behind; the view is still on screen, and Copy
                    // link carries it.
                    let _ = history.replace_state_with_url(
                        &wasm_bindgen::JsValue::NULL,
                        "",
                        Some(&latest),
                    );
                }
            },
            std::time::Duration::from_millis(300),
        );
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
    /// The link's layer and head, until a model has answered whether they exist.
    unchecked: StoredValue<Option<Selection>>,
    shown: RwSignal<Selection>,
}

impl Opened {
    pub fn new(shown: RwSignal<Selection>) -> Opened {
        Opened {
            notice: RwSignal::new(None),
            offer: RwSignal::new(None),
            unchecked: StoredValue::new(None),
            shown,
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

    /// The link's layer and head against a model of `layers` × `heads`: one that does not
    /// exist is said once, and layer or head 1 shown instead.
    pub fn check(&self, layers: usize, heads: usize) {
        let Some(asked) = self.unchecked.get_value() else {
            return;
        };
        self.unchecked.set_value(None);
        let mut sel = self.shown.get_untracked();
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
}

/// Shows the view the page was opened with (if any). The kept model is not touched: a link
/// for another model offers a Reset instead. `heads` gives the layers and heads of the model
/// here; each new model (a Ready) sets it again.
pub fn open(
    chapters: usize,
    signals: ViewSignals,
    opened: Opened,
    heads: Signal<Option<(usize, usize)>>,
) {
    let Some(link) = self::opened(chapters) else {
        return;
    };
    signals.show(&link.value);
    for n in link.notices {
        opened.add_notice(n);
    }
    let here = signals.settings.with_untracked(ModelShape::of);
    if link.value.shape != here {
        opened.offer.set(Some(link.value.shape));
    }
    opened.unchecked.set_value(Some(link.value.selection));
    Effect::watch(
        move || heads.get(),
        move |shape, _, _| {
            if let Some((layers, heads)) = *shape {
                // While a Reset is offered, the model here is not the link's.
                if opened.offer.with_untracked(Option::is_none) {
                    opened.check(layers, heads);
                }
            }
        },
        true,
    );
}
