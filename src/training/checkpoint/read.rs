//! Reading picked files through their streams, with progress, into a `ModelBundle`.

use super::recognise::{check_sizes, checkpoint_name, recognise, text, Role};
use crate::format::format_bytes;
use crate::js::js_message;
use engine::checkpoint::CheckpointFiles;
use js_sys::{Reflect, Uint8Array};
use protocol::{LabError, LabResult, ModelBundle};
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{File, FileList, ReadableStream, ReadableStreamDefaultReader};

/// Where reading stands.
#[derive(Clone, Debug, PartialEq)]
pub struct Reading {
    pub file: String,
    pub file_bytes: u64,
    /// Bytes read so far, over all files.
    pub done: u64,
    pub total: u64,
}

/// Picked files, read.
#[derive(Debug)]
pub struct Picked {
    pub bundle: ModelBundle,
    /// Files that are not part of a checkpoint, set aside.
    pub ignored: Vec<String>,
    /// Bytes read.
    pub total: u64,
}

/// Read a whole file through its stream, reporting the bytes read after each chunk.
async fn read_bytes(file: &File, progress: impl FnMut(u64)) -> LabResult<Vec<u8>> {
    let name = file.name();
    let stream = file.stream();
    read_stream(stream, file.size() as u64, u64::MAX, progress, |why| {
        LabError::file(format!("Could not read {name}: {why}"))
    })
    .await
}

/// Read a whole stream (a picked file's, a download's), reporting the bytes read after each
/// chunk. `size` bytes are reserved first (0 when unknown); past `limit` bytes it stops. Each
/// failure is put into words by `fail`.
pub async fn read_stream<E>(
    stream: ReadableStream,
    size: u64,
    limit: u64,
    mut progress: impl FnMut(u64),
    fail: impl Fn(String) -> E,
) -> Result<Vec<u8>, E> {
    let memory = |n: u64| fail(format!("not enough memory for {}", format_bytes(n)));
    let mut buf = Vec::new();
    buf.try_reserve_exact(size as usize)
        .map_err(|_| memory(size))?;
    let reader: ReadableStreamDefaultReader = stream.get_reader().unchecked_into();
    loop {
        let chunk = JsFuture::from(reader.read())
            .await
            .map_err(|e| fail(js_message(&e)))?;
        if Reflect::get(&chunk, &"done".into())
            .ok()
            .and_then(|d| d.as_bool())
            .unwrap_or(true)
        {
            break;
        }
        let value = Reflect::get(&chunk, &"value".into()).map_err(|e| fail(js_message(&e)))?;
        let bytes = Uint8Array::new(&value);
        let (start, len) = (buf.len(), bytes.length() as usize);
        if (start + len) as u64 > limit {
            let _ = reader.cancel();
            return Err(fail(format!("it is larger than {}", format_bytes(limit))));
        }
        buf.try_reserve(len)
            .map_err(|_| memory((start + len) as u64))?;
        buf.resize(start + len, 0);
        bytes.copy_to(&mut buf[start..]);
        progress(buf.len() as u64);
    }
    Ok(buf)
}

/// Recognise, size-check and read the picked files.
pub async fn read_checkpoint(
    files: Vec<File>,
    mut progress: impl FnMut(Reading),
) -> LabResult<Picked> {
    let named = files.into_iter().map(|f| (f.name(), f)).collect();
    let picked = recognise(named)?;
    let total = check_sizes(&picked, |f| f.size() as u64)?;
    let mut before = 0u64;
    let mut texts: [Option<String>; 3] = [None, None, None];
    let mut safetensors = Vec::new();
    for (role, file) in picked.to_read() {
        let file_bytes = file.size() as u64;
        let reading = Reading {
            file: role.file_name().into(),
            file_bytes,
            done: before,
            total,
        };
        progress(reading.clone());
        // At most ~200 updates of the bar, however many chunks the file comes in.
        let mut shown = before * 200 / total.max(1);
        let bytes = read_bytes(file, |n| {
            let done = before + n;
            if done * 200 / total.max(1) != shown {
                shown = done * 200 / total.max(1);
                progress(Reading {
                    done,
                    ..reading.clone()
                });
            }
        })
        .await?;
        before += file_bytes;
        match role {
            Role::Weights => safetensors = bytes,
            Role::Config => texts[0] = Some(text(role, bytes)?),
            Role::Vocab => texts[1] = Some(text(role, bytes)?),
            Role::TokenizerConfig => texts[2] = Some(text(role, bytes)?),
        }
    }
    let [Some(config_json), Some(vocab_txt), tokenizer_config_json] = texts else {
        return Err(LabError::file("config.json or vocab.txt was not read"));
    };
    let name = checkpoint_name(&config_json);
    let files = CheckpointFiles {
        config_json,
        safetensors,
        vocab_txt,
        tokenizer_config_json,
    };
    Ok(Picked {
        bundle: ModelBundle::picked(name, files),
        ignored: picked.ignored,
        total,
    })
}

pub fn file_vec(list: Option<FileList>) -> Vec<File> {
    let Some(list) = list else { return Vec::new() };
    (0..list.length()).filter_map(|i| list.item(i)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen::JsValue;
    use wasm_bindgen_test::wasm_bindgen_test as test;

    #[test]
    async fn a_huge_picked_file_is_refused_before_a_byte_is_read() {
        let file = |name: &str, claimed: Option<f64>| {
            let parts = js_sys::Array::of1(&JsValue::from_str("x"));
            let f = File::new_with_str_sequence(&parts, name).unwrap();
            if let Some(size) = claimed {
                let descriptor = js_sys::Object::new();
                js_sys::Reflect::set(&descriptor, &"value".into(), &size.into()).unwrap();
                js_sys::Object::define_property(&f, &"size".into(), &descriptor);
            }
            f
        };
        let mut reading = None;
        let files = vec![
            file("config.json", None),
            file("model.safetensors", Some(3e9)),
            file("vocab.txt", None),
        ];
        assert_eq!(
            files[1].size(),
            3e9,
            "the claimed size is what the page sees"
        );
        let e = read_checkpoint(files, |r| reading = Some(r))
            .await
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("model.safetensors is 3.0 GB"), "{e}");
        assert_eq!(reading, None, "no file was opened for reading");
    }

    fn file(name: &str, bytes: &[u8]) -> File {
        let parts = js_sys::Array::of1(&Uint8Array::from(bytes));
        File::new_with_u8_array_sequence(&parts, name).unwrap()
    }

    #[test]
    async fn files_are_read_with_progress() {
        let weights: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let files = vec![
            file("config.json", br#"{"_name_or_path": "tiny-test"}"#),
            file("vocab.txt", b"[PAD]\n[UNK]\n"),
            file("model.safetensors", &weights),
            file("README.md", b"hello"),
        ];
        let mut reading = None;
        let Picked {
            bundle: picked,
            ignored,
            total,
        } = read_checkpoint(files, |r| reading = Some(r)).await.unwrap();
        assert_eq!(picked.name, "tiny-test");
        assert_eq!(picked.vocab_txt, "[PAD]\n[UNK]\n");
        assert_eq!(picked.tokenizer_config_json, None);
        assert_eq!(picked.safetensors, weights);
        assert_eq!(ignored, vec!["README.md".to_string()]);
        assert_eq!(total, 300_000 + 30 + 12);
        let last = reading.expect("no progress shown");
        assert_eq!(last.file, "model.safetensors");
        assert!(last.done > 42 && last.done <= total, "{last:?}");

        let bad = vec![
            file("config.json", &[0xc3, 0x28]),
            file("vocab.txt", b"a"),
            file("model.safetensors", b"x"),
        ];
        let e = read_checkpoint(bad, |_| {}).await.unwrap_err().to_string();
        assert!(e.contains("config.json is not UTF-8"), "{e}");
    }
}
