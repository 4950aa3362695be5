//! What the browser keeps between visits: small JSON values in localStorage (settings, corpus,
//! probe), and in IndexedDB the current model (its weights are too big for localStorage) and its
//! loss curves. The training worker writes the model itself, so its megabytes never cross the
//! page's main thread; the page writes the curves. IndexedDB works in both.
//!
//! Nothing here panics on what it finds: data from an older version or hand-edited storage
//! reads as "nothing saved".

use crate::js::js_message;
use js_sys::{Promise, Reflect, Uint8Array};
use protocol::record::{self, HistoryIndex};
use protocol::{Curves, LabError, LabResult, ModelBundle};
use serde::Serialize;
use std::cell::{Cell, RefCell};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    IdbDatabase, IdbOpenDbRequest, IdbRequest, IdbTransaction, IdbTransactionMode, Storage,
};

/// Every localStorage key and the IndexedDB database start with this.
pub const PREFIX: &str = "attention-lab/";

/// `"settings"` → `"attention-lab/settings"`.
pub fn key(name: &str) -> String {
    format!("{PREFIX}{name}")
}

fn local_storage() -> Option<Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

/// The text saved under `attention-lab/<name>`, unchecked (see `restore`).
pub fn load_text(name: &str) -> Option<String> {
    local_storage()?.get_item(&key(name)).ok().flatten()
}

/// Save `value` as JSON under `attention-lab/<name>`. A full or disabled storage is an error
/// message, not a panic.
pub fn save<T: Serialize>(name: &str, value: &T) -> LabResult<()> {
    let text = serde_json::to_string(value)
        .map_err(|e| LabError::browser(format!("Could not save {name}: {e}")))?;
    let storage = local_storage().ok_or_else(|| {
        LabError::browser("This browser does not allow saving (localStorage is off).")
    })?;
    storage.set_item(&key(name), &text).map_err(|e| {
        LabError::browser(format!(
            "Could not save {name} in this browser: {}",
            js_message(&e)
        ))
    })
}

pub fn remove(name: &str) {
    if let Some(storage) = local_storage() {
        let _ = storage.remove_item(&key(name));
    }
}

/// The model kept in IndexedDB, with its loss curves up to its step.
#[derive(Clone, Debug, PartialEq)]
pub struct Kept {
    pub bundle: ModelBundle,
    pub curves: Curves,
    /// Compare's model B and its curves, kept in the same record as model A.
    pub compare: Option<(ModelBundle, Curves)>,
}

const DB_NAME: &str = "attention-lab";
const DB_VERSION: u32 = 1;
const STORE: &str = "models";
/// One model is kept, under this key, and its curves under the other.
const CURRENT: &str = "current";
const CURVES: &str = "curves";
/// Compare's model B's curves (its bundle is in model A's record, under `B_PREFIX` fields).
const CURVES_B: &str = "curves-b";
const B_PREFIX: &str = "b_";
/// The History index; each entry's weights are under `record::history_key(step)`.
const HISTORY: &str = "history";

/// Settles when `target`'s success (or error) handler fires; no Rust closures involved, the
/// promise's own resolve/reject functions are the handlers.
async fn settle(set: impl FnOnce(&js_sys::Function, &js_sys::Function)) -> Result<(), JsValue> {
    let mut set = Some(set);
    let promise = Promise::new(&mut |resolve, reject| {
        if let Some(set) = set.take() {
            set(&resolve, &reject);
        }
    });
    JsFuture::from(promise).await.map(|_| ())
}

async fn request(req: &IdbRequest) -> LabResult<JsValue> {
    let outcome = settle(|ok, fail| {
        req.set_onsuccess(Some(ok));
        req.set_onerror(Some(fail));
    })
    .await;
    match outcome {
        Ok(()) => req.result().map_err(|e| LabError::browser(js_message(&e))),
        Err(_) => Err(LabError::browser(
            req.error()
                .ok()
                .flatten()
                .map(|e| format!("{}: {}", e.name(), e.message()))
                .unwrap_or_else(|| "request failed".into()),
        )),
    }
}

async fn finished(tx: &IdbTransaction) -> LabResult<()> {
    let settled = settle(|ok, fail| {
        tx.set_oncomplete(Some(ok));
        tx.set_onerror(Some(fail));
        tx.set_onabort(Some(fail));
    })
    .await;
    OPEN.with_borrow_mut(|open| open.retain(|t| !js_sys::Object::is(t, tx)));
    settled.map_err(|_| {
        LabError::browser(
            tx.error()
                .map(|e| format!("{}: {}", e.name(), e.message()))
                .unwrap_or_else(|| "transaction aborted".into()),
        )
    })
}

thread_local! {
    /// The open database, reused by every transaction of this page or worker (opening it
    /// anew for each keep cost a round trip through the browser's storage process).
    static DB: RefCell<Option<IdbDatabase>> = const { RefCell::new(None) };
}

/// The database, opened once per page or worker and again only after the browser closed it.
async fn open() -> LabResult<IdbDatabase> {
    if let Some(db) = DB.with_borrow(Clone::clone) {
        return Ok(db);
    }
    // `indexedDB` of the window or of the worker.
    let factory = Reflect::get(&js_sys::global(), &"indexedDB".into())
        .ok()
        .and_then(|f| f.dyn_into::<web_sys::IdbFactory>().ok())
        .ok_or_else(|| {
            LabError::browser("This browser does not allow saving models (IndexedDB is off).")
        })?;
    let opening: IdbOpenDbRequest = factory
        .open_with_u32(DB_NAME, DB_VERSION)
        .map_err(|e| LabError::browser(js_message(&e)))?;
    let for_upgrade = opening.clone();
    let upgrade = Closure::<dyn FnMut(web_sys::Event)>::new(move |_| {
        if let Ok(db) = for_upgrade
            .result()
            .and_then(|r| r.dyn_into::<IdbDatabase>())
        {
            if !db.object_store_names().contains(STORE) {
                let _ = db.create_object_store(STORE);
            }
        }
    });
    opening.set_onupgradeneeded(Some(upgrade.as_ref().unchecked_ref()));
    let db = request(&opening).await;
    opening.set_onupgradeneeded(None);
    drop(upgrade);
    let db = db?
        .dyn_into::<IdbDatabase>()
        .map_err(|_| LabError::browser("IndexedDB gave no database"))?;
    // Another tab upgrading the database, or the browser closing it (storage cleared): let
    // go, and the next transaction opens it again.
    let forget = Closure::<dyn FnMut()>::new(|| {
        if let Some(db) = DB.take() {
            db.close();
        }
    })
    .into_js_value();
    db.set_onversionchange(Some(forget.unchecked_ref()));
    db.set_onclose(Some(forget.unchecked_ref()));
    DB.set(Some(db.clone()));
    Ok(db)
}

/// One transaction on the model store.
async fn with_store(
    mode: IdbTransactionMode,
    work: impl FnOnce(&web_sys::IdbObjectStore) -> Result<IdbRequest, JsValue>,
) -> LabResult<JsValue> {
    let (tx, store) = begin(mode).await?;
    let req = work(&store).map_err(|e| LabError::browser(js_message(&e)))?;
    let value = request(&req).await?;
    finished(&tx).await?;
    Ok(value)
}

thread_local! {
    /// Transactions begun here and not yet settled, for `leave` to abort.
    static OPEN: RefCell<Vec<IdbTransaction>> = const { RefCell::new(Vec::new()) };
    /// Set by `leave`: the page is going, and starts nothing more in the store.
    static LEFT: Cell<bool> = const { Cell::new(false) };
}

/// A transaction on the model store and the store in it, tracked in `OPEN` until it settles.
async fn begin(mode: IdbTransactionMode) -> LabResult<(IdbTransaction, web_sys::IdbObjectStore)> {
    if LEFT.get() {
        return Err(LabError::browser("the page is being left"));
    }
    let db = open().await?;
    let tx = match db.transaction_with_str_and_mode(STORE, mode) {
        Ok(tx) => tx,
        // Closed under us: forget it, so the next call opens it again.
        Err(e) => {
            DB.set(None);
            return Err(LabError::browser(js_message(&e)));
        }
    };
    let store = tx
        .object_store(STORE)
        .map_err(|e| LabError::browser(js_message(&e)))?;
    OPEN.with_borrow_mut(|open| open.push(tx.clone()));
    Ok((tx, store))
}

/// A page the browser keeps for Back is frozen as it is, and a transaction frozen before it
/// commits holds the store's lock until the browser drops the page: the next page of this
/// site would wait for its first read forever (WebKit). So the page aborts what it has open
/// (what it was writing is lost: the curves since the last keep) and starts nothing more.
pub fn leave() {
    LEFT.set(true);
    for tx in OPEN.take() {
        let _ = tx.abort();
    }
    if let Some(db) = DB.take() {
        db.close();
    }
}

fn bytes_value(bytes: &[u8]) -> JsValue {
    Uint8Array::from(bytes).buffer().into()
}

/// The bytes of a stored ArrayBuffer; `None` for anything else.
fn stored_bytes(value: &JsValue) -> Option<Vec<u8>> {
    value
        .is_instance_of::<js_sys::ArrayBuffer>()
        .then(|| Uint8Array::new(value).to_vec())
}

/// Keep `model` (and Compare's `model_b`, in the same record) in IndexedDB, replacing the one
/// kept before. A full disk (quota) is an error.
pub async fn save_model(model: &ModelBundle, model_b: Option<&ModelBundle>) -> LabResult<()> {
    let record = js_sys::Object::new();
    let set = |k: &str, v: &JsValue| {
        Reflect::set(&record, &k.into(), v)
            .map(|_| ())
            .map_err(|e| LabError::browser(js_message(&e)))
    };
    let set_bundle = |prefix: &str, model: &ModelBundle| -> LabResult<()> {
        set(&format!("{prefix}meta"), &record::encode_meta(model).into())?;
        set(
            &format!("{prefix}safetensors"),
            &bytes_value(&model.safetensors),
        )?;
        if let Some(state) = &model.training_state {
            set(&format!("{prefix}training_state"), &bytes_value(state))?;
        }
        Ok(())
    };
    set_bundle("", model)?;
    if let Some(b) = model_b {
        set_bundle(B_PREFIX, b)?;
    }
    with_store(IdbTransactionMode::Readwrite, |store| {
        store.put_with_key(&record, &CURRENT.into())
    })
    .await
    .map(|_| ())
    .map_err(|e| LabError::browser(format!("Could not save the model in this browser: {e}")))
}

/// Keep the loss curves of the kept model (and of Compare's model B), binary: up to 5,000
/// points each, written every few seconds while training.
pub async fn save_curves(curves: &Curves, curves_b: Option<&Curves>) -> LabResult<()> {
    let buffer = bytes_value(&record::encode_curves(curves));
    let buffer_b = curves_b.map(|c| bytes_value(&record::encode_curves(c)));
    in_one_transaction(|store| {
        store.put_with_key(&buffer, &CURVES.into())?;
        match &buffer_b {
            Some(b) => store.put_with_key(b, &CURVES_B.into())?,
            None => store.delete(&CURVES_B.into())?,
        };
        Ok(())
    })
    .await
    .map(|_| ())
    .map_err(|e| {
        LabError::browser(format!(
            "Could not keep the loss curves in this browser: {e}"
        ))
    })
}

/// The model kept in IndexedDB, with its curves up to its step; `Ok(None)` when there is none
/// or it is unreadable. Unreadable curves cost the curves, not the model.
pub async fn load_model() -> LabResult<Option<Kept>> {
    find_model().await.map(|found| found.kept)
}

/// What `find_model` found, and what it had to drop, one sentence each, for the page.
pub struct Found {
    pub kept: Option<Kept>,
    pub notices: Vec<String>,
}

/// `load_model`, saying when a record was there but unreadable (another version, a hand edit).
pub async fn find_model() -> LabResult<Found> {
    let read = |key: &'static str| {
        with_store(IdbTransactionMode::Readonly, move |store| {
            store.get(&key.into())
        })
    };
    let record = read(CURRENT)
        .await
        .map_err(|e| LabError::browser(format!("Could not read the saved model: {e}")))?;
    let mut notices = Vec::new();
    let bundle = decode(&record, "");
    if bundle.is_none() && !record.is_undefined() {
        notices.push(
            "The model kept in this browser was unreadable (from another version, or edited), so a fresh one starts."
                .to_string(),
        );
    }
    let kept_curves = read(CURVES).await.unwrap_or(JsValue::UNDEFINED);
    let curves = stored_bytes(&kept_curves).and_then(|b| record::decode_curves(&b));
    if bundle.is_some() && curves.is_none() && !kept_curves.is_undefined() {
        notices.push(
            "The loss curves kept with the model were unreadable, so they start empty.".to_string(),
        );
    }
    let compare = match decode(&record, B_PREFIX) {
        Some(b) => {
            let kept_b = read(CURVES_B).await.unwrap_or(JsValue::UNDEFINED);
            let curves_b = stored_bytes(&kept_b).and_then(|b| record::decode_curves(&b));
            let step = b.step;
            Some((b, curves_b.map_or_else(Curves::new, |c| c.until(step))))
        }
        None => None,
    };
    let kept = bundle.map(|bundle| Kept {
        curves: curves.map_or_else(Curves::new, |c| c.until(bundle.step)),
        bundle,
        compare,
    });
    Ok(Found { kept, notices })
}

/// The kept model record's bundle under `prefix` (model A's: none; model B's: `B_PREFIX`):
/// its description and its bytes.
fn decode(stored: &JsValue, prefix: &str) -> Option<ModelBundle> {
    if !stored.is_object() {
        return None;
    }
    let field = |name: &str| Reflect::get(stored, &format!("{prefix}{name}").into()).ok();
    let meta = field("meta")?.as_string()?;
    let mut bundle = record::decode_meta(&meta)?;
    let bytes = field("safetensors")?;
    if !(bytes.is_instance_of::<js_sys::ArrayBuffer>() || bytes.is_instance_of::<Uint8Array>()) {
        return None;
    }
    bundle.safetensors = Uint8Array::new(&bytes).to_vec();
    bundle.training_state = field("training_state").and_then(|s| stored_bytes(&s));
    Some(bundle)
}

/// Several requests in one transaction; done when the transaction is.
async fn in_one_transaction(
    work: impl FnOnce(&web_sys::IdbObjectStore) -> Result<(), JsValue>,
) -> LabResult<()> {
    let (tx, store) = begin(IdbTransactionMode::Readwrite).await?;
    work(&store).map_err(|e| LabError::browser(js_message(&e)))?;
    finished(&tx).await
}

/// The kept History index; `None` when there is none or it is unreadable.
async fn history_index() -> Option<HistoryIndex> {
    let stored = with_store(IdbTransactionMode::Readonly, |store| {
        store.get(&HISTORY.into())
    })
    .await
    .ok()?;
    record::decode_history(&stored_bytes(&stored)?)
}

/// Keep the History beside the model: `index` lists every entry, `new_entries` the weights not
/// stored yet; entries stored before and no longer in `index` (thinned, rewound, another
/// model's) are deleted. One transaction, so a reload sees the old History or the new one.
pub async fn save_history(index: &HistoryIndex, new_entries: &[(u64, Vec<u8>)]) -> LabResult<()> {
    let stale: Vec<u64> = history_index()
        .await
        .map(|old| old.steps)
        .unwrap_or_default()
        .into_iter()
        .filter(|s| index.steps.binary_search(s).is_err())
        .collect();
    let encoded = bytes_value(&record::encode_history(index));
    in_one_transaction(|store| {
        for step in stale {
            store.delete(&record::history_key(step).into())?;
        }
        for (step, weights) in new_entries {
            store.put_with_key(&bytes_value(weights), &record::history_key(*step).into())?;
        }
        store.put_with_key(&encoded, &HISTORY.into())?;
        Ok(())
    })
    .await
    .map_err(|e| LabError::browser(format!("Could not keep the History in this browser: {e}")))
}

/// The kept History: its index and each entry's weights (entries whose weights are missing
/// are left out). `None` when nothing is kept or the index is unreadable.
pub async fn load_history() -> Option<(HistoryIndex, Vec<(u64, Vec<u8>)>)> {
    let index = history_index().await?;
    let mut entries = Vec::with_capacity(index.steps.len());
    for &step in &index.steps {
        let key = record::history_key(step);
        let stored = with_store(IdbTransactionMode::Readonly, |store| {
            store.get(&key.as_str().into())
        })
        .await
        .ok();
        if let Some(bytes) = stored.as_ref().and_then(stored_bytes) {
            entries.push((step, bytes));
        }
    }
    Some((index, entries))
}

/// Forget the model kept in IndexedDB, its curves and its History.
pub async fn clear_model() -> LabResult<()> {
    let history: Vec<u64> = history_index()
        .await
        .map(|index| index.steps)
        .unwrap_or_default();
    in_one_transaction(|store| {
        for step in history {
            store.delete(&record::history_key(step).into())?;
        }
        store.delete(&HISTORY.into())?;
        store.delete(&CURVES.into())?;
        store.delete(&CURVES_B.into())?;
        store.delete(&CURRENT.into())?;
        Ok(())
    })
    .await
    .map_err(|e| LabError::browser(format!("Could not remove the saved model: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::CurvePoint;
    use serde::Deserialize;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Settings {
        rate: f64,
        name: String,
    }

    fn load<T: serde::de::DeserializeOwned>(name: &str) -> Option<T> {
        serde_json::from_str(&load_text(name)?).ok()
    }

    #[test]
    fn local_storage_round_trips_and_tolerates_junk() {
        let value = Settings {
            rate: 1e-3,
            name: "tiny".into(),
        };
        save("test-settings", &value).unwrap();
        assert_eq!(load::<Settings>("test-settings"), Some(value));
        let raw = local_storage().unwrap();
        assert!(
            raw.get_item("attention-lab/test-settings")
                .unwrap()
                .is_some(),
            "namespaced key"
        );

        raw.set_item("attention-lab/test-settings", "{\"rate\": \"fast\"")
            .unwrap();
        assert_eq!(load::<Settings>("test-settings"), None, "malformed JSON");
        raw.set_item("attention-lab/test-settings", "{\"speed\": 3}")
            .unwrap();
        assert_eq!(load::<Settings>("test-settings"), None, "old shape");
        remove("test-settings");
        assert_eq!(raw.get_item("attention-lab/test-settings").unwrap(), None);
        assert_eq!(load::<Settings>("never-saved"), None);
    }

    #[test]
    fn a_full_local_storage_is_an_error() {
        // ~12 MB of text: over Chromium's ~5 MB localStorage quota.
        let big = "x".repeat(12 << 20);
        let e = save("test-too-big", &big).unwrap_err().to_string();
        assert!(
            e.starts_with("Could not save test-too-big in this browser"),
            "{e}"
        );
        assert_eq!(load::<String>("test-too-big"), None);
    }

    fn bundle(step: u64) -> ModelBundle {
        ModelBundle {
            name: "tiny BERT (fresh, seed 0)".into(),
            step,
            config_json: "{\"hidden_size\": 64}".into(),
            vocab_txt: "[PAD]\n[UNK]\n".into(),
            tokenizer_config_json: Some("{}".into()),
            word_level: true,
            safetensors: (0..100_000u32).map(|i| (i * 7 % 256) as u8).collect(),
            training_state: Some(vec![5; 1000]),
        }
    }

    fn curves(steps: u64) -> Curves {
        let mut c = Curves::new();
        c.extend((1..=steps).map(|step| CurvePoint {
            step,
            loss: 5.0 / step as f32,
            ..CurvePoint::default()
        }));
        c
    }

    async fn put_raw(value: &JsValue, key: &str) {
        with_store(IdbTransactionMode::Readwrite, |s| {
            s.put_with_key(value, &key.into())
        })
        .await
        .unwrap();
    }

    #[test]
    async fn indexed_db_round_trips_the_model() {
        let model = bundle(1234);
        clear_model().await.unwrap();
        assert_eq!(load_model().await.unwrap(), None);
        save_model(&model, None).await.unwrap();
        save_curves(&curves(1234), None).await.unwrap();
        let kept = Kept {
            bundle: model.clone(),
            curves: curves(1234),
            compare: None,
        };
        assert_eq!(load_model().await.unwrap(), Some(kept.clone()));
        // A newer model leaves the curves kept before (until its own curves are saved).
        let newer = ModelBundle {
            step: 2000,
            tokenizer_config_json: None,
            training_state: None,
            ..model.clone()
        };
        save_model(&newer, None).await.unwrap();
        assert_eq!(
            load_model().await.unwrap(),
            Some(Kept {
                bundle: newer,
                ..kept.clone()
            })
        );
        // Compare: model B and its curves in the same record, until a model without B.
        let b = ModelBundle {
            name: "B".into(),
            safetensors: vec![7; 40],
            ..model.clone()
        };
        save_model(&model, Some(&b)).await.unwrap();
        save_curves(&curves(1234), Some(&curves(1000)))
            .await
            .unwrap();
        assert_eq!(
            load_model().await.unwrap(),
            Some(Kept {
                compare: Some((b, curves(1000))),
                ..kept.clone()
            })
        );
        save_model(&model, None).await.unwrap();
        save_curves(&curves(1234), None).await.unwrap();
        assert_eq!(load_model().await.unwrap(), Some(kept.clone()));
        clear_model().await.unwrap();
        assert_eq!(load_model().await.unwrap(), None);
        save_model(&model, None).await.unwrap();
        let back = load_model().await.unwrap().unwrap();
        assert!(back.curves.is_empty(), "clearing forgot the curves too");
        clear_model().await.unwrap();
        assert_eq!(load_model().await.unwrap(), None);
    }

    #[test]
    async fn curves_are_kept_up_to_the_model_and_bad_ones_cost_only_themselves() {
        let model = bundle(90);
        save_model(&model, None).await.unwrap();
        assert!(
            load_model().await.unwrap().unwrap().curves.is_empty(),
            "saved apart"
        );
        save_curves(&curves(100), None).await.unwrap();
        let back = load_model().await.unwrap().unwrap();
        assert_eq!(
            back.curves,
            curves(90),
            "points after the kept step are dropped"
        );

        // Lengths that disagree: the model is restored without curves, and the page says so.
        let bad =
            postcard::to_allocvec(&(vec![CurvePoint::default(); 2], vec![1u32], 1u32)).unwrap();
        put_raw(&bytes_value(&bad), CURVES).await;
        let found = find_model().await.unwrap();
        let back = found.kept.unwrap();
        assert!(back.curves.is_empty());
        assert_eq!(back.bundle.safetensors, model.safetensors);
        assert_eq!(found.notices.len(), 1, "{:?}", found.notices);
        assert!(found.notices[0].contains("loss curves"));
        clear_model().await.unwrap();
    }

    #[test]
    async fn unreadable_records_are_dropped_with_a_notice() {
        clear_model().await.unwrap();
        let found = find_model().await.unwrap();
        assert!(
            found.kept.is_none() && found.notices.is_empty(),
            "nothing kept: quiet"
        );
        // A hand-edited model record: no model, and the page says why it starts fresh.
        put_raw(&"edited".into(), CURRENT).await;
        let found = find_model().await.unwrap();
        assert!(found.kept.is_none());
        assert_eq!(found.notices.len(), 1, "{:?}", found.notices);
        assert!(
            found.notices[0].contains("unreadable"),
            "{:?}",
            found.notices
        );
        clear_model().await.unwrap();
    }

    #[test]
    async fn the_history_is_kept_beside_the_model_and_cleared_with_it() {
        clear_model().await.unwrap();
        assert_eq!(load_history().await, None);
        let weights = |step: u64| vec![step as u8; 1000];
        let first = HistoryIndex::new(5, vec![0, 5, 10]);
        let entries: Vec<_> = first.steps.iter().map(|&s| (s, weights(s))).collect();
        save_history(&first, &entries).await.unwrap();
        assert_eq!(load_history().await, Some((first, entries)));
        // Thinned: 5 goes, 20 comes; only 20's weights are new.
        let second = HistoryIndex::new(10, vec![0, 10, 20]);
        save_history(&second, &[(20, weights(20))]).await.unwrap();
        let (index, back) = load_history().await.unwrap();
        assert_eq!(index, second);
        assert_eq!(
            back,
            [(0, weights(0)), (10, weights(10)), (20, weights(20))]
        );
        let gone = with_store(IdbTransactionMode::Readonly, |s| {
            s.get(&record::history_key(5).into())
        })
        .await
        .unwrap();
        assert!(gone.is_undefined(), "a thinned entry's weights are deleted");
        clear_model().await.unwrap();
        assert_eq!(load_history().await, None);
    }

    #[test]
    async fn a_malformed_saved_model_reads_as_none() {
        let junk = js_sys::Object::new();
        Reflect::set(&junk, &"meta".into(), &"{\"version\": 99}".into()).unwrap();
        Reflect::set(&junk, &"safetensors".into(), &JsValue::from(3)).unwrap();
        put_raw(&junk, CURRENT).await;
        assert_eq!(load_model().await.unwrap(), None);
        put_raw(&"text".into(), CURRENT).await;
        assert_eq!(load_model().await.unwrap(), None);
        clear_model().await.unwrap();
        assert!(decode(&JsValue::UNDEFINED, "").is_none());
    }
}
