use crate::alerts::{CrashBanner, RestoreNotes};
use crate::claims::ClaimsPanel;
use crate::embed::EmbedPage;
use crate::explorer::{Explorer, ExplorerView, Focus};
use crate::format;
use crate::keys;
use crate::link::course::PrepareCourse;
use crate::link::view::{CopyLink, LinkBanner};
use crate::link::{self, Opened, ViewSignals};
use crate::live::Live;
use crate::panel::TrainingPanel;
use crate::pytorch::NotebookSource;
use crate::storage;
use crate::tour::chapters::CHAPTERS;
use crate::tour::view::{TourButton, TourPanel};
use crate::tour::Tour;
use crate::training::checkpoint::remote::view::ModelDownload;
use crate::training::checkpoint::remote::RemoteModel;
use protocol::link::View;
use protocol::view::Embed;
use protocol::{restore, LabSettings, ProbeInput, ToWorker, WorkerCount};
use serde::Serialize;

const CORPUS_KEY: &str = "corpus";
const SETTINGS_KEY: &str = "settings";
const PROBE_KEY: &str = "probe";
const WORKERS_KEY: &str = "workers";
use leptos::prelude::*;

#[component]
pub fn App() -> impl IntoView {
    let live = Live::start();
    let (corpus, settings, probe, workers) = restore_kept(live);
    let explorer = ExplorerView::new();
    let remote = RemoteModel::new(live, corpus, settings);
    // An embedded view has no tour: it neither opens one nor changes the one kept here.
    let embed = link::embedded(CHAPTERS.len());
    let tour = embed
        .is_none()
        .then(|| Tour::new(live, probe, settings, corpus, explorer));
    // An address with a view in it shows that view; the model kept here stays.
    let signals = ViewSignals {
        probe,
        settings,
        explorer,
        chapter: tour.map_or_else(|| RwSignal::new(None), |t| t.chapter),
        embed,
        checkpoint: remote.source,
    };
    let opened = Opened::new(explorer.selection, probe);
    link::open(CHAPTERS.len(), signals, opened, live);
    let href = link::follow(signals, opened);
    start_model(live, corpus.get_untracked(), settings, opened, remote);
    // Local storage is the outside world too.
    Effect::new(move |_| corpus.with(|c| remember(live, CORPUS_KEY, c)));
    Effect::new(move |_| settings.with(|s| remember(live, SETTINGS_KEY, s)));
    Effect::new(move |_| probe.with(|p| remember(live, PROBE_KEY, p)));
    if workers != WorkerCount::Auto {
        live.send(ToWorker::Workers(workers));
    }
    Effect::new(move |_| remember(live, WORKERS_KEY, &live.worker_count.get().key()));

    // The worker is the outside world: tell it whenever the probe changes.
    Effect::new(move |_| live.inspect(probe.get()));
    keyboard_shortcuts(live);
    keep_when_hidden(live);
    nothing_frozen_open(live);
    if location_has("test-hooks") {
        crate::test_hooks::install(live);
    }
    let benchmark = location_has("bench");
    if benchmark {
        live.send(ToWorker::Bench {
            iters: 20,
            warmup: 10,
        });
    }

    let alerts = move || {
        view! {
            <CrashBanner live=live corpus=corpus settings=settings/>
            <RestoreNotes live=live/>
            <LinkBanner live=live opened=opened corpus=corpus settings=settings/>
            <ModelDownload remote=remote/>
        }
    };
    // There is a tour unless the page is embedded.
    let Some(tour) = tour else {
        let focus = Focus::new(
            live.inspection.into(),
            live.info.into(),
            live.inspection_b.into(),
            live.info_b.into(),
            explorer,
        );
        return view! {
            {alerts()}
            <EmbedPage live=live embed=embed.unwrap_or(Embed::Stage) focus=focus
                full_page=link::address_of(signals, opened, Signal::stored(None))/>
        }
        .into_any();
    };
    provide_context(NotebookSource {
        live,
        probe,
        settings,
        corpus,
        link: href,
    });
    let embed_choice = RwSignal::new(Embed::Stage);
    let embed_view = link::view_of(
        signals,
        opened,
        Signal::derive(move || Some(embed_choice.get())),
    );
    let embed_href = Memo::new(move |_| embed_view.with(link::address));
    view! {
        <PageHeader live=live tour=tour href=href embed_choice=embed_choice embed_view=embed_view embed_href=embed_href/>
        {alerts()}
        {benchmark.then(|| view! { <pre id="bench" data-done=move || live.bench.with(|b| b.is_some()).to_string()>{move || live.bench.get().unwrap_or_else(|| "benchmarking…".into())}</pre> })}
        <div class="layout">
            <main>
                <Explorer probe=probe inspection=live.inspection.into() info=live.info.into()
                    inspection_b=live.inspection_b info_b=live.info_b
                    generation=live.generated
                    on_generate=Callback::new(move |(sentence, settings)| live.generate(sentence, settings))
                    on_stop_generating=Callback::new(move |()| live.stop_generating())
                    no_trainer=Signal::derive(move || live.crashed.with(Option::is_some))
                    view=explorer/>
                <ClaimsPanel live=live/>
            </main>
            <TrainingPanel live=live corpus=corpus settings=settings probe=probe/>
        </div>
        <TourPanel tour=tour/>
    }
    .into_any()
}

/// What the user set last time, checked as if typed now, else the defaults: the corpus, the
/// settings, the probe and the Workers setting. What was unreadable becomes a note.
fn restore_kept(
    live: Live,
) -> (
    RwSignal<String>,
    RwSignal<LabSettings>,
    RwSignal<ProbeInput>,
    WorkerCount,
) {
    let corpus = restore::corpus(storage::load_text(CORPUS_KEY).as_deref());
    let settings = restore::settings(storage::load_text(SETTINGS_KEY).as_deref());
    let probe = restore::probe(storage::load_text(PROBE_KEY).as_deref());
    let workers = restore::workers(storage::load_text(WORKERS_KEY).as_deref());
    live.notes.set(
        [
            &corpus.notices,
            &settings.notices,
            &probe.notices,
            &workers.notices,
        ]
        .into_iter()
        .flatten()
        .cloned()
        .collect(),
    );
    (
        RwSignal::new(corpus.value),
        RwSignal::new(settings.value),
        RwSignal::new(probe.value),
        workers.value,
    )
}

/// The title, Tour and Copy link, and the model here (with Compare's B) and its workers.
#[component]
fn PageHeader(
    live: Live,
    tour: Tour,
    href: Memo<String>,
    embed_choice: RwSignal<Embed>,
    embed_view: Memo<View>,
    embed_href: Memo<String>,
) -> impl IntoView {
    view! {
        <SkipLinks/>
        <header>
            <h1>"Attention Lab"</h1>
            <nav class="header-actions" aria-label="Tour and link">
                <TourButton tour=tour/>
                <CopyLink href=href embed=embed_choice embed_href=embed_href>
                    <PrepareCourse live=live view=embed_view/>
                </CopyLink>
            </nav>
            <span class="model-name">{move || live.info.get().map(|i| i.name).unwrap_or_default()}</span>
            <span class="model-facts">{move || live.info.with(|i| i.as_ref().map(format::facts)).unwrap_or_default()}</span>
            {move || live.workers.with(|w| w.as_ref().map(|w| view! {
                <span class="workers-facts" data-workers=w.using>{format::workers(w)}</span>
            }))}
            {move || live.info_b.with(|b| b.as_ref().map(|b| {
                let a = live.info.with(|a| a.as_ref().map(format::architecture_name)).unwrap_or_default();
                view! {
                    <span class="model-facts compare-facts">
                        {format!("Compare: A {a} · B {} ({} parameters)", format::architecture_name(b), format::millions(b.parameters))}
                    </span>
                }
            }))}
        </header>
    }
}

/// The page's first stops for the keyboard: links that jump past the header, the settings and
/// each other to the sentence, Play, the figures and the claims. Shown only while focused.
#[component]
fn SkipLinks() -> impl IntoView {
    const TARGETS: [(&str, &str); 4] = [
        ("sentence", "Skip to the sentence"),
        ("play", "Skip to Play"),
        ("figures", "Skip to the figures"),
        ("claims", "Skip to the claims"),
    ];
    // Focus moves by script, not by the address's #fragment, which the page's link keeps.
    let skip = |id: &'static str| {
        move |ev: leptos::ev::MouseEvent| {
            ev.prevent_default();
            let target = document().get_element_by_id(id);
            if let Some(el) =
                target.and_then(|e| wasm_bindgen::JsCast::dyn_into::<web_sys::HtmlElement>(e).ok())
            {
                let _ = el.focus();
                el.scroll_into_view();
            }
        }
    };
    view! {
        <nav class="skip-links" aria-label="Skip to">
            {TARGETS.map(|(id, text)| view! { <a href=format!("#{id}") on:click=skip(id)>{text}</a> })}
        </nav>
    }
}

/// Space: play/pause, S: one step — unless the user is typing in a field, or Space presses
/// the focused control.
fn keyboard_shortcuts(live: Live) {
    let handle = window_event_listener(leptos::ev::keydown, move |ev| {
        if keys::is_editing(&ev) {
            return;
        }
        match ev.key().as_str() {
            " " if !keys::space_is_taken(&ev) => {
                ev.prevent_default();
                live.send(if live.playing.get_untracked() {
                    ToWorker::Pause
                } else {
                    ToWorker::Play
                });
            }
            "s" | "S" => live.send(ToWorker::Step),
            _ => {}
        }
    });
    on_cleanup(move || handle.remove());
}

/// A page the browser keeps for Back (its back/forward cache, as WebKit does with this one) is
/// frozen with its worker, and a write to IndexedDB frozen before it commits (the worker keeping
/// the model, the page its curves) holds the store's lock: the next page of this site waits at
/// "Starting the training worker…" (its first read of the store) until the frozen page is
/// dropped. So as the page goes, the worker ends and the page aborts its own writes (the browser
/// then lets go of both); a page that comes back reloads, opening the model last kept here as
/// any visit does.
fn nothing_frozen_open(live: Live) {
    let persisted = |event: &web_sys::Event| {
        js_sys::Reflect::get(event, &"persisted".into())
            .ok()
            .and_then(|v| v.as_bool())
            .unwrap_or(false)
    };
    let hide = window_event_listener_untyped("pagehide", move |event| {
        if persisted(&event) {
            live.end_worker();
            storage::leave();
        }
    });
    let show = window_event_listener_untyped("pageshow", move |event| {
        if persisted(&event) {
            let _ = window().location().reload();
        }
    });
    on_cleanup(move || {
        hide.remove();
        show.remove();
    });
}

/// A hidden tab may be closed or discarded without another chance: keep the model first.
fn keep_when_hidden(live: Live) {
    let handle = window_event_listener(leptos::ev::visibilitychange, move |_| {
        if document().hidden() {
            live.keep_now();
        }
    });
    on_cleanup(move || handle.remove());
}

/// The model at the link's address (`checkpoint=`), unless the one kept here is that model
/// trained on; else the model kept in this browser by an earlier visit, else a fresh one: the
/// model an opened link asks for, since there is nothing to replace.
fn start_model(
    live: Live,
    corpus: String,
    settings: RwSignal<LabSettings>,
    opened: Opened,
    remote: RemoteModel,
) {
    leptos::task::spawn_local(async move {
        let found = storage::find_model().await;
        // A trainer that failed to start while the store was read waits for Restart, which
        // loads what is kept. Starting a model here would start another worker behind the
        // banner: the banner would go and the controls come back until that one failed too.
        if live.crashed.with_untracked(Option::is_some) {
            if let Ok(found) = found {
                live.notes.update(|n| n.extend(found.notices));
            }
            return;
        }
        let asked = remote.source.get_untracked();
        match found {
            Ok(found) => {
                live.notes.update(|n| n.extend(found.notices));
                match (found.kept, asked) {
                    (Some(kept), Some(source))
                        if RemoteModel::trained_here(&source, &kept.bundle) =>
                    {
                        live.restore(kept, corpus, settings.get_untracked())
                    }
                    (_, Some(source)) => remote.open(source),
                    (Some(kept), None) => live.restore(kept, corpus, settings.get_untracked()),
                    (None, None) => {
                        if let Some(shape) = opened.offer.get_untracked() {
                            settings.update(|s| *s = shape.applied_to(s));
                            opened.offer.set(None);
                        }
                        live.reset(corpus, settings.get_untracked())
                    }
                }
            }
            Err(e) => {
                live.notice.set(Some(format!(
                    "Could not read the model kept in this browser ({e}); starting fresh."
                )));
                match asked {
                    Some(source) => remote.open(source),
                    None => live.reset(corpus, settings.get_untracked()),
                }
            }
        }
    });
}

fn remember<T: Serialize>(live: Live, key: &str, value: &T) {
    if let Err(e) = storage::save(key, value) {
        live.notice.set(Some(e.to_string()));
    }
}

/// `?word` in the page's URL.
fn location_has(word: &str) -> bool {
    let search = web_sys::window()
        .and_then(|w| w.location().search().ok())
        .unwrap_or_default();
    search
        .trim_start_matches('?')
        .split('&')
        .any(|part| part == word)
}
