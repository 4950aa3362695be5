//! A model from a web address (`checkpoint=` in a link, `protocol::remote`): its files fetched
//! one by one (`fetch`), with a progress bar and Cancel, a question before weights over
//! `ASK_ABOVE_BYTES`, and one sentence for each failure, after which a fresh model opens so the
//! page stays usable (`view`). The files go to the worker as a loaded checkpoint's do.

pub mod fetch;
pub mod view;

use crate::live::Live;
use fetch::{open_cache, Answer, Fetch, Got};
use leptos::prelude::*;
use protocol::remote::{
    check_config, check_safetensors, refused_by_policy, say, CheckpointSource, Origin,
    ASK_ABOVE_BYTES, FILES,
};
use protocol::{LabSettings, ModelBundle};
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortController, Url};

/// Where the download stands.
#[derive(Clone, Debug, PartialEq)]
pub enum Fetching {
    Idle,
    /// `file` (the `index`-th of `count`) coming: `done` bytes of `size` (when the server says).
    Downloading {
        file: String,
        index: usize,
        count: usize,
        done: u64,
        size: Option<u64>,
    },
    /// The weights are `size` bytes: waiting for the user to say whether to download them.
    Asking {
        size: u64,
    },
    /// Every file came; the worker is making a model of them.
    Opening,
    /// Why it did not open (one sentence); a fresh model is open instead.
    Failed(String),
}

/// The page's model from an address: where it came from, and the download.
#[derive(Clone, Copy)]
pub struct RemoteModel {
    /// Where the model on screen came from (None: not from an address). The address bar and
    /// every link the page writes keep it (`link::ViewSignals`).
    pub source: RwSignal<Option<CheckpointSource>>,
    pub fetching: RwSignal<Fetching>,
    /// The address last asked for, for Try again.
    asked: StoredValue<Option<CheckpointSource>>,
    abort: StoredValue<Option<AbortController>, LocalStorage>,
    /// Resolves the question about the weights' size.
    answer: StoredValue<Option<js_sys::Function>, LocalStorage>,
    live: Live,
    corpus: RwSignal<String>,
    settings: RwSignal<LabSettings>,
}

impl RemoteModel {
    pub fn new(live: Live, corpus: RwSignal<String>, settings: RwSignal<LabSettings>) -> Self {
        let remote = RemoteModel {
            source: RwSignal::new(None),
            fetching: RwSignal::new(Fetching::Idle),
            asked: StoredValue::new(None),
            abort: StoredValue::new_local(None),
            answer: StoredValue::new_local(None),
            live,
            corpus,
            settings,
        };
        remote.follow_the_model();
        remote
    }

    /// The model on screen is the address's while the worker says so: opened, or trained on
    /// (`ModelInfo::name` is the address). Any other model (a Reset, Load checkpoint) is not.
    fn follow_the_model(self) {
        Effect::watch(
            move || self.live.info.get(),
            move |info, _, _| {
                let Some(info) = info else { return };
                let ours = self
                    .source
                    .with_untracked(|s| s.as_ref().map(|s| s.text() == info.name));
                match (self.fetching.get_untracked(), ours) {
                    (Fetching::Downloading { .. } | Fetching::Asking { .. }, _) | (_, None) => {}
                    (Fetching::Opening, Some(true)) => self.fetching.set(Fetching::Idle),
                    (_, Some(true)) => {}
                    // Another model (after a crash and Restart, the one kept here).
                    (state, Some(false)) => {
                        self.source.set(None);
                        if state == Fetching::Opening {
                            self.fetching.set(Fetching::Idle);
                        }
                    }
                }
            },
            false,
        );
    }

    /// Whether `kept` (the model kept in this browser) is this address's model, trained on
    /// here: a reload then goes on with it instead of downloading it again.
    pub fn trained_here(source: &CheckpointSource, kept: &ModelBundle) -> bool {
        kept.name == source.text() && kept.step > 0
    }

    /// Downloads the model at `source` and opens it; on any failure, says why and opens a
    /// fresh model.
    pub fn open(self, source: CheckpointSource) {
        if matches!(
            self.fetching.get_untracked(),
            Fetching::Downloading { .. } | Fetching::Asking { .. } | Fetching::Opening
        ) {
            return;
        }
        self.asked.set_value(Some(source.clone()));
        self.source.set(Some(source.clone()));
        self.live
            .busy
            .set(Some(format!("Downloading the model at {}…", source.text())));
        let Ok(abort) = AbortController::new() else {
            self.failed("This browser cannot download a model (no AbortController).".into());
            return;
        };
        let signal = abort.signal();
        self.abort.set_value(Some(abort));
        leptos::task::spawn_local(async move {
            match self.download(&source, &signal).await {
                Ok(bundle) => {
                    self.fetching.set(Fetching::Opening);
                    self.live.open_from_address(
                        bundle,
                        self.corpus.get_untracked(),
                        self.settings.get_untracked(),
                        move |e| self.failed(say::not_opened(&source, &e.to_string())),
                    );
                }
                Err(sentence) => self.failed(sentence),
            }
            self.abort.set_value(None);
        });
    }

    /// Try again, after a failure.
    pub fn retry(self) {
        if let Some(source) = self.asked.get_value() {
            self.open(source);
        }
    }

    /// Cancel: stops the download (or answers no to the question about its size).
    pub fn cancel(self) {
        self.answer_size(false);
        self.abort
            .with_value(|a| a.iter().for_each(AbortController::abort));
    }

    /// The user's answer to "download N MB?".
    pub fn answer_size(self, yes: bool) {
        if let Some(resolve) = self.answer.try_update_value(Option::take).flatten() {
            let _ = resolve.call1(&wasm_bindgen::JsValue::NULL, &yes.into());
        }
    }

    /// Why it did not open, and a fresh model in its place.
    fn failed(self, sentence: String) {
        self.fetching.set(Fetching::Failed(sentence));
        self.source.set(None);
        self.live
            .reset(self.corpus.get_untracked(), self.settings.get_untracked());
    }

    /// Every file of the checkpoint, checked as far as the page can before the worker: the
    /// address against the page's policy, config.json's model type before the weights are
    /// downloaded, the weights' length against their header.
    async fn download(
        self,
        source: &CheckpointSource,
        signal: &web_sys::AbortSignal,
    ) -> Result<ModelBundle, String> {
        let at = source.text();
        let cache = open_cache().await;
        let hub = crate::test_hooks::hub();
        let mut texts: Vec<Option<String>> = Vec::new();
        let mut weights = Vec::new();
        for (index, &(name, required)) in FILES.iter().enumerate() {
            let url = absolute(&source.file_address(&hub, name))?;
            let fetch = Fetch {
                source,
                name,
                url: &url.href(),
                origin: &url.origin(),
                signal,
                cache: cache.as_ref(),
                immutable: source.immutable(),
            };
            let Some(got) = self.file(&fetch, &url, index, required).await? else {
                texts.push(None);
                continue;
            };
            if name == engine::checkpoint::WEIGHTS_FILE {
                check_safetensors(&got.bytes, &at)?;
                weights = got.bytes;
                continue;
            }
            let text = String::from_utf8(got.bytes).map_err(|_| {
                format!("The {name} of {at} is not UTF-8 text: is it the right file?")
            })?;
            if name == engine::checkpoint::CONFIG_FILE {
                check_config(&text, &at)?;
            }
            texts.push(Some(text));
        }
        let [Some(config_json), Some(vocab_txt), tokenizer_config_json] =
            <[Option<String>; 3]>::try_from(texts).unwrap_or_default()
        else {
            return Err(format!("The files of {at} did not all come."));
        };
        Ok(ModelBundle::picked(
            at,
            engine::checkpoint::CheckpointFiles {
                config_json,
                safetensors: weights,
                vocab_txt,
                tokenizer_config_json,
            },
        ))
    }

    /// One file: the kept copy, or the network's with progress (and a question first for large
    /// weights). None for an optional file that is not there.
    async fn file(
        self,
        fetch: &Fetch<'_>,
        url: &Url,
        index: usize,
        required: bool,
    ) -> Result<Option<Got>, String> {
        let (page, file) = (page_url()?, url);
        let (page_scheme, file_scheme) = (scheme(&page), scheme(file));
        let (page_host, file_host, page_origin) = (page.hostname(), file.hostname(), page.origin());
        if let Some(why) = refused_by_policy(
            Origin {
                scheme: &page_scheme,
                host: &page_host,
                origin: &page_origin,
            },
            Origin {
                scheme: &file_scheme,
                host: &file_host,
                origin: fetch.origin,
            },
        ) {
            return Err(why);
        }
        let showing = |done: u64, size: Option<u64>| Fetching::Downloading {
            file: fetch.name.to_string(),
            index: index + 1,
            count: FILES.len(),
            done,
            size,
        };
        self.fetching.set(showing(0, None));
        if let Some(kept) = fetch.kept_copy().await {
            return Ok(Some(kept));
        }
        let response = match fetch.answer(required).await? {
            Answer::Body(r) => r,
            Answer::Missing => return Ok(None),
        };
        let size = fetch.size(&response)?;
        if fetch.name == engine::checkpoint::WEIGHTS_FILE {
            if let Some(n) = size.filter(|&n| n > ASK_ABOVE_BYTES) {
                if !self.ask(n).await {
                    // The answer's stream is left unread: dropping it frees the connection.
                    if let Some(a) = self.abort.get_value() {
                        a.abort();
                    }
                    return Err(say::declined(&crate::format::format_bytes(n)));
                }
            }
        }
        self.fetching.set(showing(0, size));
        // At most ~200 updates of the bar, however many chunks the file comes in.
        let mut shown = 0;
        let step = size.unwrap_or(1_000_000).max(200) / 200;
        let got = fetch
            .body(response, size, |done| {
                if done / step != shown {
                    shown = done / step;
                    self.fetching.set(showing(done, size));
                }
            })
            .await?;
        Ok(Some(got))
    }

    /// Asks whether to download `size` bytes of weights; true for yes.
    async fn ask(self, size: u64) -> bool {
        let mut resolve = None;
        let promise = js_sys::Promise::new(&mut |yes, _| resolve = Some(yes));
        self.answer.set_value(resolve);
        self.fetching.set(Fetching::Asking { size });
        JsFuture::from(promise)
            .await
            .ok()
            .and_then(|v| v.as_bool())
            .unwrap_or(false)
    }
}

/// The page's own address.
fn page_url() -> Result<Url, String> {
    let href = web_sys::window()
        .and_then(|w| w.location().href().ok())
        .ok_or("The page has no address to read a model's address against.")?;
    Url::new(&href).map_err(|_| "The page's own address cannot be read.".into())
}

/// `address` resolved against the page: absolute, or relative to it.
fn absolute(address: &str) -> Result<Url, String> {
    let page = page_url()?;
    Url::new_with_base(address, &page.href())
        .map_err(|_| format!("\"{address}\" is not an address the browser can read."))
}

/// "https" of "https:".
fn scheme(url: &Url) -> String {
    url.protocol().trim_end_matches(':').to_string()
}
