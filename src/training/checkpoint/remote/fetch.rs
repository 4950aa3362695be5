//! One file of a checkpoint from a web address: from this browser's copy when the server says
//! the file has not changed (or cannot be reached), otherwise downloaded through its stream
//! with progress, cancelled by an `AbortSignal`, and kept for the next visit. A fetch that
//! fails without an answer is CORS or no network: a `no-cors` request to the same address
//! tells them apart (it gets an opaque answer from a server that is there).

use super::super::read::read_stream;
use crate::js::js_message;
use engine::checkpoint::{check_file_size, MAX_FILE_BYTES};
use protocol::remote::{say, CheckpointSource, Validators};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{AbortSignal, Cache, Request, RequestCache, RequestInit, RequestMode, Response};

/// The copies of downloaded files, one per address, apart from the app's own files (the
/// service worker's cache, which each new version replaces).
pub const CACHE: &str = "attention-lab-checkpoints";

/// How a file is asked for.
pub struct Fetch<'a> {
    /// The model's address, for sentences.
    pub source: &'a CheckpointSource,
    /// The file's name ("config.json") and its absolute address.
    pub name: &'a str,
    pub url: &'a str,
    /// Its origin ("https://example.org"), for the CORS and no-network sentences.
    pub origin: &'a str,
    pub signal: &'a AbortSignal,
    /// The browser's copies; None where the browser keeps none (not a secure context).
    pub cache: Option<&'a Cache>,
    /// The address's files never change: a kept copy is used without asking the server.
    pub immutable: bool,
}

/// A file as it came.
pub struct Got {
    pub bytes: Vec<u8>,
    /// From this browser's copy, not the network.
    pub kept: bool,
}

/// What came back from the network before the body: the answer, or (optional files) nothing.
pub enum Answer {
    Body(Response),
    Missing,
}

impl Fetch<'_> {
    /// This browser's copy, when there is one and it is still the server's file.
    pub async fn kept_copy(&self) -> Option<Got> {
        let kept = self.cache?;
        let copy: Response = JsFuture::from(kept.match_with_str(self.url))
            .await
            .ok()?
            .dyn_into()
            .ok()?;
        if !self.immutable {
            // Asked afresh each visit (a HEAD, no bytes): a teacher may replace a model in place.
            match self.request("HEAD", RequestMode::Cors).await {
                // No answer at all (offline): the copy is the best there is.
                Err(_) => {}
                Ok(now) if now.ok() && validators(&copy).same_file(&validators(&now)) => {}
                Ok(_) => return None,
            }
        }
        let bytes = JsFuture::from(copy.array_buffer().ok()?).await.ok()?;
        Some(Got {
            bytes: js_sys::Uint8Array::new(&bytes).to_vec(),
            kept: true,
        })
    }

    /// The server's answer for the file: an error sentence for a refusal, CORS, no network or a
    /// cancel; `Missing` for an optional file that is not there.
    pub async fn answer(&self, required: bool) -> Result<Answer, String> {
        let response = match self.request("GET", RequestMode::Cors).await {
            Ok(r) => r,
            Err(e) => return Err(self.why_no_answer(e).await),
        };
        match response.status() {
            _ if response.ok() => Ok(Answer::Body(response)),
            404 if !required => Ok(Answer::Missing),
            status => Err(say::status(self.source, self.name, status)),
        }
    }

    /// The size the server gives the body (Content-Length), refused past what the page reads.
    pub fn size(&self, response: &Response) -> Result<Option<u64>, String> {
        let size = header(response, "content-length").and_then(|s| s.parse::<u64>().ok());
        if let Some(n) = size {
            check_file_size(self.name, n).map_err(|e| format!("{e}."))?;
        }
        Ok(size)
    }

    /// The body, read with `progress(bytes so far)`, and kept for the next visit.
    pub async fn body(
        &self,
        response: Response,
        size: Option<u64>,
        progress: impl FnMut(u64),
    ) -> Result<Got, String> {
        let validators = validators(&response);
        let Some(stream) = response.body() else {
            return Ok(Got {
                bytes: Vec::new(),
                kept: false,
            });
        };
        let read = read_stream(stream, size.unwrap_or(0), MAX_FILE_BYTES, progress, |why| {
            why
        })
        .await;
        let bytes = match read {
            Ok(bytes) => bytes,
            Err(_) if self.signal.aborted() => return Err(say::cancelled()),
            Err(why) => return Err(say::broken(self.name, &why)),
        };
        self.keep(&bytes, &validators).await;
        Ok(Got { bytes, kept: false })
    }

    /// Keeps a copy under the file's address, with what tells whether it changed. A browser that
    /// will not (storage full, private browsing) downloads it again next time: nothing else.
    async fn keep(&self, bytes: &[u8], v: &Validators) {
        let Some(cache) = self.cache else { return };
        let headers = web_sys::Headers::new();
        if let Ok(headers) = &headers {
            for (name, value) in [
                ("etag", &v.etag),
                ("last-modified", &v.last_modified),
                ("content-length", &v.length),
            ] {
                if let Some(value) = value {
                    let _ = headers.set(name, value);
                }
            }
        }
        let init = web_sys::ResponseInit::new();
        if let Ok(headers) = &headers {
            init.set_headers_headers(headers);
        }
        let body: js_sys::Object = js_sys::Uint8Array::from(bytes).into();
        let Ok(copy) = Response::new_with_opt_buffer_source_and_init(Some(&body), &init) else {
            return;
        };
        let _ = JsFuture::from(cache.put_with_str(self.url, &copy)).await;
    }

    /// CORS or no network, for a request that got no answer (the browser says only "failed").
    async fn why_no_answer(&self, error: JsValue) -> String {
        if self.signal.aborted() {
            return say::cancelled();
        }
        let online = web_sys::window().is_none_or(|w| w.navigator().on_line());
        // An opaque answer means a server answered, and only reading it was refused.
        if online && self.request("GET", RequestMode::NoCors).await.is_ok() {
            return say::cors(self.origin);
        }
        let _ = error;
        say::no_network(self.origin)
    }

    /// One request for the file, past every HTTP cache (the page keeps its own copies, and the
    /// service worker leaves `no-store` requests alone).
    async fn request(&self, method: &str, mode: RequestMode) -> Result<Response, JsValue> {
        let init = RequestInit::new();
        init.set_method(method);
        init.set_mode(mode);
        init.set_cache(RequestCache::NoStore);
        init.set_signal(Some(self.signal));
        let request = Request::new_with_str_and_init(self.url, &init)?;
        let window = web_sys::window().ok_or_else(|| JsValue::from_str("no window"))?;
        JsFuture::from(window.fetch_with_request(&request))
            .await?
            .dyn_into()
            .map_err(|v| JsValue::from_str(&js_message(&v)))
    }
}

fn header(response: &Response, name: &str) -> Option<String> {
    response.headers().get(name).ok().flatten()
}

fn validators(response: &Response) -> Validators {
    Validators {
        etag: header(response, "etag"),
        last_modified: header(response, "last-modified"),
        length: header(response, "content-length"),
    }
}

/// The browser's store of copies, where it has one (a secure context: https or this computer).
pub async fn open_cache() -> Option<Cache> {
    let caches = web_sys::window()?.caches().ok()?;
    JsFuture::from(caches.open(CACHE))
        .await
        .ok()?
        .dyn_into()
        .ok()
}
