//! A model from a web address: `checkpoint=` in a link names a folder of checkpoint files, or a
//! model on the Hugging Face Hub. Here: reading that value, where each file is, which addresses
//! the page may read, what a config or a weights file must look like before the worker gets it,
//! and the one sentence each failure gets. Fetching, the cache and the progress bar are the
//! browser's (`src/training/checkpoint/remote/`).

use engine::checkpoint::{CONFIG_FILE, TOKENIZER_CONFIG_FILE, VOCAB_FILE, WEIGHTS_FILE};
use engine::config::BertConfig;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

/// The Hugging Face Hub. A model `ORG/NAME` at `REVISION` keeps each file at
/// `{HUB}/ORG/NAME/resolve/REVISION/FILE`; the tests point the page at a local server laid out
/// the same way (`?test-hooks`, `src/test_hooks.rs`).
pub const HUB: &str = "https://huggingface.co";

/// The revision a Hub id without `@REVISION` means: the repository's default branch.
pub const HUB_DEFAULT_REVISION: &str = "main";

/// What starts a Hub id in a link.
pub const HUB_PREFIX: &str = "hf:";

/// Weights larger than this are downloaded only once the user says so, shown their size:
/// 100 MB (MiniLM-L6's 91 MB comes without asking; a BERT-base's 440 MB asks).
pub const ASK_ABOVE_BYTES: u64 = 100_000_000;

/// The longest `checkpoint=` value read, in characters: no folder's address needs more.
pub const MAX_ADDRESS: usize = 2_000;

/// What index.html's Content-Security-Policy lets the page fetch: its own origin; any https
/// address (a teacher's host, the Hub and the hosts it redirects downloads to); plain http
/// only on this computer (a test's server, a teacher trying a folder before publishing it).
/// `refused_by_policy` says the same in words, before a fetch the browser would block.
pub const CONNECT_SRC: &str = "connect-src 'self' https: http://127.0.0.1:* http://localhost:*";

/// A checkpoint's files in the order they are read: config.json first, so a model the page
/// cannot open is refused before its weights are downloaded; the weights last. Only
/// tokenizer_config.json may be missing.
pub const FILES: [(&str, bool); 4] = [
    (CONFIG_FILE, true),
    (VOCAB_FILE, true),
    (TOKENIZER_CONFIG_FILE, false),
    (WEIGHTS_FILE, true),
];

/// The `model_type`s the page opens: BERT, RoFormer (a BERT with rotary positions) and the
/// encoder–decoders made of two BERTs that the page itself saves.
pub const OPENS: [&str; 3] = ["bert", "roformer", "encoder-decoder"];

/// Where `checkpoint=` says the model is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckpointSource {
    /// A folder's address as the link gives it: absolute (http or https), or relative to the
    /// page, which the browser resolves.
    Folder(String),
    /// A model on the Hugging Face Hub.
    Hub(HubModel),
}

/// `hf:ORG/NAME[@REVISION]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HubModel {
    pub org: String,
    pub name: String,
    /// None: `HUB_DEFAULT_REVISION`.
    pub revision: Option<String>,
}

/// What the link's value may hold unencoded: RFC 3986's unreserved characters and the `/`, `:`
/// and `@` of an address, so `checkpoint=hf:ORG/NAME` reads as typed. `+`, `&`, `=`, `#`, `%`
/// and spaces are encoded.
const LINK_ENCODED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/')
    .remove(b':')
    .remove(b'@');

/// What a Hub revision is encoded with in a file's address: a branch such as `refs/pr/1` is one
/// path segment there (`refs%2Fpr%2F1`).
const REVISION_ENCODED: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_');

const WHAT_IT_IS: &str = "give a folder's address (with config.json, model.safetensors and vocab.txt in it), or hf:ORG/NAME for a model on the Hugging Face Hub";

impl CheckpointSource {
    /// Reads a `checkpoint=` value (already percent-decoded). Every refusal says why.
    pub fn parse(value: &str) -> Result<CheckpointSource, String> {
        let v = value.trim();
        if v.is_empty() {
            return Err(format!("it is empty: {WHAT_IT_IS}"));
        }
        let n = v.chars().count();
        if n > MAX_ADDRESS {
            return Err(format!(
                "{n} characters are more than the {MAX_ADDRESS} an address may have"
            ));
        }
        if v.chars().any(char::is_control) {
            return Err("it holds control characters, which no address has".into());
        }
        match v.get(..HUB_PREFIX.len()) {
            Some(p) if p.eq_ignore_ascii_case(HUB_PREFIX) => {
                HubModel::parse(&v[HUB_PREFIX.len()..]).map(CheckpointSource::Hub)
            }
            _ => folder(v).map(CheckpointSource::Folder),
        }
    }

    /// The value as a link writes it (`parse` reads it back).
    pub fn text(&self) -> String {
        match self {
            CheckpointSource::Folder(f) => f.clone(),
            CheckpointSource::Hub(m) => format!("{HUB_PREFIX}{}", m.id()),
        }
    }

    /// The value percent-encoded for a query, `/`, `:` and `@` left as typed.
    pub fn link_value(&self) -> String {
        utf8_percent_encode(&self.text(), LINK_ENCODED).to_string()
    }

    /// The address of `file` in it: in the folder, or on the Hub at `hub` (`HUB`, or a test's
    /// server). A relative folder gives a relative address, which the browser resolves against
    /// the page.
    pub fn file_address(&self, hub: &str, file: &str) -> String {
        match self {
            CheckpointSource::Folder(f) if f.ends_with('/') => format!("{f}{file}"),
            CheckpointSource::Folder(f) => format!("{f}/{file}"),
            CheckpointSource::Hub(m) => format!(
                "{}/{}/{}/resolve/{}/{file}",
                hub.trim_end_matches('/'),
                m.org,
                m.name,
                utf8_percent_encode(m.revision(), REVISION_ENCODED)
            ),
        }
    }

    /// Files at this address never change: a Hub revision that is a commit's full hash. Any
    /// other address may be given new files, so a copy kept in the browser is checked first.
    pub fn immutable(&self) -> bool {
        match self {
            CheckpointSource::Hub(m) => m
                .revision
                .as_deref()
                .is_some_and(|r| r.len() == 40 && r.bytes().all(|b| b.is_ascii_hexdigit())),
            CheckpointSource::Folder(_) => false,
        }
    }
}

impl HubModel {
    /// `ORG/NAME[@REVISION]`, after `hf:`.
    fn parse(id: &str) -> Result<HubModel, String> {
        let (repo, revision) = match id.split_once('@') {
            Some((repo, rev)) => (repo, Some(rev)),
            None => (id, None),
        };
        let Some((org, name)) = repo.split_once('/').filter(|(_, n)| !n.contains('/')) else {
            return Err(format!(
                "\"{}\" is not a Hub model: it is hf:ORG/NAME, for example hf:sentence-transformers/all-MiniLM-L6-v2",
                shorten(id)
            ));
        };
        hub_name(org)?;
        hub_name(name)?;
        if let Some(rev) = revision {
            let fine = !rev.is_empty()
                && rev.len() <= 128
                && !rev.contains("..")
                && rev
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./".contains(&b));
            if !fine {
                return Err(format!(
                    "\"{}\" is not a revision: a branch, a tag or a commit's hash, of letters, digits, -, _, . and /",
                    shorten(rev)
                ));
            }
        }
        Ok(HubModel {
            org: org.into(),
            name: name.into(),
            revision: revision.map(str::to_string),
        })
    }

    /// `ORG/NAME`, with `@REVISION` when one was given.
    pub fn id(&self) -> String {
        match &self.revision {
            Some(r) => format!("{}/{}@{r}", self.org, self.name),
            None => format!("{}/{}", self.org, self.name),
        }
    }

    pub fn revision(&self) -> &str {
        self.revision.as_deref().unwrap_or(HUB_DEFAULT_REVISION)
    }
}

/// An organisation's or a model's name on the Hub: 1 to 96 letters, digits, `-`, `_` and `.`,
/// not starting with `-` or `.`, without `--` or `..` (the Hub's own rule).
fn hub_name(part: &str) -> Result<(), String> {
    let fine = (1..=96).contains(&part.len())
        && part
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        && !part.starts_with(['-', '.'])
        && !part.contains("--")
        && !part.contains("..");
    if fine {
        Ok(())
    } else {
        Err(format!(
            "\"{}\" is not a name on the Hub: 1 to 96 letters, digits, -, _ and .",
            shorten(part)
        ))
    }
}

/// A folder's address: http(s), or relative to the page; no query or fragment (the files' names
/// go after it); the folder's, not one of its files'.
fn folder(v: &str) -> Result<String, String> {
    if let Some(scheme) = scheme(v) {
        if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
            return Err(format!(
                "\"{scheme}:\" addresses cannot be read here: {WHAT_IT_IS} (http, https or relative to the page)"
            ));
        }
        let host = v[scheme.len() + 1..]
            .strip_prefix("//")
            .map(|rest| rest.split('/').next().unwrap_or_default());
        if host.is_none_or(str::is_empty) {
            return Err(format!(
                "\"{}\" has no host: an absolute address is {scheme}://HOST/FOLDER/",
                shorten(v)
            ));
        }
    }
    if v.contains(['?', '#']) {
        return Err("a folder's address holds no ? or #: the files' names go after it".into());
    }
    if v.contains('\\') {
        return Err("an address separates folders with /, not \\".into());
    }
    let last = v
        .trim_end_matches('/')
        .rsplit('/')
        .next()
        .unwrap_or_default();
    if !v.ends_with('/')
        && FILES
            .iter()
            .any(|(file, _)| last.eq_ignore_ascii_case(file))
    {
        let parent = &v[..v.len() - last.len()];
        return Err(format!(
            "it names the file {last}: give its folder's address instead ({})",
            if parent.is_empty() { "./" } else { parent }
        ));
    }
    Ok(v.to_string())
}

/// The scheme an address starts with ("https" of "https://…"), None for a relative one: letters,
/// digits, `+`, `-` and `.` after a first letter, up to a `:` that comes before any `/`.
fn scheme(v: &str) -> Option<&str> {
    let (head, _) = v.split_once(':')?;
    let mut bytes = head.bytes();
    let first = bytes.next()?;
    (first.is_ascii_alphabetic() && bytes.all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b)))
        .then_some(head)
}

/// At most 40 characters of what the user sent, for a sentence.
fn shorten(v: &str) -> String {
    if v.chars().count() <= 40 {
        v.to_string()
    } else {
        format!("{}…", v.chars().take(40).collect::<String>())
    }
}

/// An address the page fetches, as the browser's URL parser cut it.
#[derive(Clone, Copy, Debug)]
pub struct Origin<'a> {
    /// "http" or "https" (without the colon).
    pub scheme: &'a str,
    pub host: &'a str,
    /// "https://example.org:8443".
    pub origin: &'a str,
}

/// Why the page may not read a file at `file` (resolved against the page at `page`), before
/// asking the browser, which would refuse without saying why: `CONNECT_SRC`, and no plain
/// http from an https page (mixed content). None when it may.
pub fn refused_by_policy(page: Origin, file: Origin) -> Option<String> {
    if file.origin == page.origin || file.scheme == "https" {
        return None;
    }
    if file.scheme != "http" {
        return Some(format!(
            "{} is not an http or https address, so the page cannot read it.",
            file.origin
        ));
    }
    if page.scheme == "https" {
        return Some(format!(
            "This page is served over https, and browsers do not let it read the plain http address {}: serve the model over https.",
            file.origin
        ));
    }
    if matches!(file.host, "127.0.0.1" | "localhost") {
        return None;
    }
    Some(format!(
        "The page reads models from other sites only over https, and {} is plain http: serve the model over https, or beside the page.",
        file.origin
    ))
}

/// Refuses a config.json the page cannot open, before its weights are downloaded: another kind
/// of model (named by its `model_type`), or a BERT config the engine refuses. `at` says where
/// it came from.
pub fn check_config(config_json: &str, at: &str) -> Result<(), String> {
    let json: serde_json::Value = serde_json::from_str(config_json).map_err(|e| {
        format!("The config.json of {at} is not JSON ({e}): it may be damaged, or not a model's.")
    })?;
    let model_type = json.get("model_type").and_then(|t| t.as_str());
    match model_type {
        Some(t) if !OPENS.contains(&t) => Err(format!(
            "{at} is a {t} model (model_type \"{t}\"), not a BERT: this page opens BERT checkpoints (model_type bert, roformer, or its own encoder-decoder)."
        )),
        // An encoder–decoder's halves are read when it loads (`engine::seq2seq::load`).
        Some("encoder-decoder") => Ok(()),
        _ => BertConfig::from_json(config_json).map(|_| ()).map_err(|e| {
            format!("The config.json of {at} is not a BERT config this page can open: {e}.")
        }),
    }
}

/// Refuses a model.safetensors that is cut short or not a safetensors file, before the worker
/// builds a model from it: its first 8 bytes give the length of a JSON header, and the header
/// gives each tensor's place in the bytes after it (`data_offsets`).
pub fn check_safetensors(bytes: &[u8], at: &str) -> Result<(), String> {
    let len = bytes.len() as u64;
    let damaged = |why: &str| {
        format!("The {WEIGHTS_FILE} of {at} is not a safetensors file ({why}): it is damaged, or another kind of file.")
    };
    let cut = |needed: u64| {
        format!("The {WEIGHTS_FILE} of {at} is truncated: it holds {len} bytes of the {needed} its header describes.")
    };
    let Some(head) = bytes.get(..8) else {
        return Err(cut(8));
    };
    let header_len = u64::from_le_bytes(head.try_into().unwrap_or([0; 8]));
    // safetensors refuses headers over 100 MB: such a length is noise, not a cut-off file.
    if header_len == 0 || header_len > 100_000_000 {
        return Err(damaged("its first bytes give no header length"));
    }
    let Some(header) = bytes.get(8..8 + header_len as usize) else {
        return Err(cut(8 + header_len));
    };
    let header: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(header).map_err(|_| damaged("its header is not JSON"))?;
    let mut end = 0u64;
    for (name, tensor) in header.iter().filter(|(n, _)| *n != "__metadata__") {
        let offsets = tensor
            .get("data_offsets")
            .and_then(|o| o.as_array())
            .and_then(|o| Some((o.first()?.as_u64()?, o.get(1)?.as_u64()?)));
        match offsets {
            Some((from, to)) if from <= to => end = end.max(to),
            _ => return Err(damaged(&format!("{} has no place in it", shorten(name)))),
        }
    }
    let needed = 8 + header_len + end;
    if needed > len {
        return Err(cut(needed));
    }
    Ok(())
}

/// What tells whether a file at an address changed since a copy of it was kept: the headers a
/// page may read from any server (Content-Length, Last-Modified), and the ETag where the server
/// lets it be read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Validators {
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    pub length: Option<String>,
}

impl Validators {
    /// Whether `now` describes the file a copy was kept with: the same ETag, or (without ETags)
    /// the same Last-Modified and length. With neither nobody can tell, and it is not the same.
    pub fn same_file(&self, now: &Validators) -> bool {
        if let (Some(kept), Some(now)) = (&self.etag, &now.etag) {
            return kept == now;
        }
        match (&self.last_modified, &now.last_modified) {
            (Some(kept), Some(now_modified)) => kept == now_modified && self.length == now.length,
            _ => false,
        }
    }
}

/// The one sentence for each way a download fails. `at` is the model's address as the link
/// gives it.
pub mod say {
    use super::{CheckpointSource, WEIGHTS_FILE};

    /// The server answered `status` for `file`: 404 (or the Hub's 401 for a model that is not
    /// there or needs a login), or another refusal.
    pub fn status(source: &CheckpointSource, file: &str, status: u16) -> String {
        match (source, status) {
            (CheckpointSource::Hub(m), 401 | 403) => format!(
                "The Hub has no public model {}/{} (it answered {status}: there is no such model, or it needs a login).",
                m.org, m.name
            ),
            (CheckpointSource::Hub(m), 404) => format!(
                "The Hub has no {file} for {}/{} at revision {} (404): check the model's id and revision.",
                m.org,
                m.name,
                m.revision()
            ),
            (CheckpointSource::Folder(f), 404) => format!(
                "There is no {file} at {f} (the server answered 404): check the address, and that the folder holds config.json, model.safetensors and vocab.txt."
            ),
            (_, status) => format!(
                "The server answered {status} for {file} of {}, so the model could not be downloaded.",
                source.text()
            ),
        }
    }

    /// The server answers, but not to this page: no `Access-Control-Allow-Origin` for it.
    pub fn cors(origin: &str) -> String {
        format!(
            "The server at {origin} does not allow this page to read its files (CORS): download config.json, model.safetensors and vocab.txt from it and open them with Load checkpoint instead."
        )
    }

    /// Nothing answered at all.
    pub fn no_network(origin: &str) -> String {
        format!("Could not reach {origin}: there is no network, or the server is not answering.")
    }

    /// The connection broke while `file` came.
    pub fn broken(file: &str, why: &str) -> String {
        format!("The download of {file} broke off ({why}): check the network and try again.")
    }

    /// The user chose not to download weights of `size` (said as the page says sizes).
    pub fn declined(size: &str) -> String {
        format!("The model was not downloaded: its {WEIGHTS_FILE} is {size}, and you chose not to.")
    }

    pub fn cancelled() -> String {
        "The download was cancelled.".into()
    }

    /// The files came, and the worker could not make a model of them.
    pub fn not_opened(source: &CheckpointSource, why: &str) -> String {
        format!(
            "The model at {} could not be opened: {}",
            source.text(),
            with_stop(why)
        )
    }

    fn with_stop(s: &str) -> String {
        if s.ends_with('.') {
            s.to_string()
        } else {
            format!("{s}.")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hub(org: &str, name: &str, revision: Option<&str>) -> CheckpointSource {
        CheckpointSource::Hub(HubModel {
            org: org.into(),
            name: name.into(),
            revision: revision.map(str::to_string),
        })
    }

    #[test]
    fn folders_and_hub_ids_are_read_and_written_back() {
        for (value, source) in [
            (
                "hf:nreimers/MiniLM-L6-H384-uncased",
                hub("nreimers", "MiniLM-L6-H384-uncased", None),
            ),
            ("HF:org/name@v1.0", hub("org", "name", Some("v1.0"))),
            (
                "hf:org/name@refs/pr/1",
                hub("org", "name", Some("refs/pr/1")),
            ),
            (
                "models/week3/",
                CheckpointSource::Folder("models/week3/".into()),
            ),
            (
                "../induction",
                CheckpointSource::Folder("../induction".into()),
            ),
            (
                "https://example.org/m/",
                CheckpointSource::Folder("https://example.org/m/".into()),
            ),
            (
                "//cdn.example.org/m/",
                CheckpointSource::Folder("//cdn.example.org/m/".into()),
            ),
            (
                "  modèles/🐱/ ",
                CheckpointSource::Folder("modèles/🐱/".into()),
            ),
        ] {
            let read = CheckpointSource::parse(value).unwrap_or_else(|e| panic!("{value}: {e}"));
            assert_eq!(read, source, "{value}");
            assert_eq!(CheckpointSource::parse(&read.text()).unwrap(), read);
        }
        assert_eq!(
            hub("a", "b", None).link_value(),
            "hf:a/b",
            "a Hub id reads in a link as typed"
        );
        assert_eq!(
            CheckpointSource::Folder("my models/a+b&c=d#e/".into()).link_value(),
            "my%20models/a%2Bb%26c%3Dd%23e/"
        );
    }

    #[test]
    fn bad_values_say_why() {
        let long = "a/".repeat(1500);
        for (value, says) in [
            ("", "it is empty"),
            ("   ", "it is empty"),
            (long.as_str(), "3000 characters are more than the 2000"),
            ("models/\u{7}/", "control characters"),
            ("hf:", "is not a Hub model"),
            ("hf:bert-base-uncased", "is not a Hub model: it is hf:ORG/NAME"),
            ("hf:a/b/c", "is not a Hub model"),
            ("hf:🐱/model", "\"🐱\" is not a name on the Hub"),
            ("hf:-org/model", "\"-org\" is not a name on the Hub"),
            ("hf:org/model@", "\"\" is not a revision"),
            ("hf:org/model@a b", "\"a b\" is not a revision"),
            ("hf:org/model@../x", "is not a revision"),
            ("javascript:alert(1)", "\"javascript:\" addresses cannot be read"),
            ("data:text/plain,x", "\"data:\" addresses cannot be read"),
            ("file:///home/me/model/", "\"file:\" addresses cannot be read"),
            ("C:\\models\\", "\"C:\" addresses cannot be read"),
            ("https:/example.org/m/", "has no host"),
            ("http:///m/", "has no host"),
            ("models/?token=1", "holds no ? or #"),
            ("models\\week3", "separates folders with /"),
            ("models/week3/model.safetensors", "names the file model.safetensors: give its folder's address instead (models/week3/)"),
            ("config.json", "(./)"),
        ] {
            let e = CheckpointSource::parse(value).expect_err(value);
            assert!(e.contains(says), "{value:?}: {e}");
        }
    }

    #[test]
    fn each_file_has_one_address() {
        let folder = CheckpointSource::Folder("models/week3".into());
        assert_eq!(
            folder.file_address(HUB, "vocab.txt"),
            "models/week3/vocab.txt"
        );
        let folder = CheckpointSource::Folder("https://x.org/m/".into());
        assert_eq!(
            folder.file_address(HUB, "vocab.txt"),
            "https://x.org/m/vocab.txt"
        );
        assert_eq!(
            hub("org", "name", None).file_address(HUB, "config.json"),
            "https://huggingface.co/org/name/resolve/main/config.json"
        );
        assert_eq!(
            hub("org", "name", Some("refs/pr/1"))
                .file_address("http://127.0.0.1:9/", "config.json"),
            "http://127.0.0.1:9/org/name/resolve/refs%2Fpr%2F1/config.json"
        );
        let commit = "0123456789abcdef0123456789abcdef01234567";
        assert!(hub("o", "n", Some(commit)).immutable());
        assert!(!hub("o", "n", None).immutable());
        assert!(!hub("o", "n", Some("v1")).immutable());
        assert!(!folder.immutable());
    }

    #[test]
    fn the_policy_in_words_is_index_htmls() {
        let html = include_str!("../../index.html");
        assert!(
            html.contains(&format!("; {CONNECT_SRC}\"")),
            "index.html's Content-Security-Policy ends with {CONNECT_SRC}"
        );
        let at = |origin: &'static str| {
            let (scheme, rest) = origin.split_once("://").unwrap();
            Origin {
                scheme,
                host: rest.split(':').next().unwrap(),
                origin,
            }
        };
        let local = at("http://127.0.0.1:8080");
        let published = at("https://example.org");
        assert_eq!(refused_by_policy(local, at("http://127.0.0.1:9000")), None);
        assert_eq!(refused_by_policy(local, at("http://localhost:9000")), None);
        assert_eq!(refused_by_policy(local, at("https://huggingface.co")), None);
        assert_eq!(refused_by_policy(published, published), None);
        assert!(refused_by_policy(local, at("http://example.org"))
            .unwrap()
            .contains("only over https"));
        assert!(refused_by_policy(published, at("http://127.0.0.1:9000"))
            .unwrap()
            .contains("served over https"));
    }

    #[test]
    fn a_config_of_another_kind_is_named_by_its_model_type() {
        let e = check_config(
            r#"{"model_type": "gpt2", "n_embd": 768}"#,
            "hf:openai-community/gpt2",
        )
        .unwrap_err();
        assert!(
            e.starts_with(
                "hf:openai-community/gpt2 is a gpt2 model (model_type \"gpt2\"), not a BERT"
            ),
            "{e}"
        );
        let e = check_config("{nope", "x/").unwrap_err();
        assert!(e.contains("is not JSON"), "{e}");
        let e = check_config(r#"{"model_type": "bert"}"#, "x/").unwrap_err();
        assert!(e.contains("not a BERT config this page can open"), "{e}");
        let bert = BertConfig::tiny(100).to_json();
        assert_eq!(check_config(&bert, "x/"), Ok(()));
        assert_eq!(
            check_config(r#"{"model_type": "encoder-decoder"}"#, "x/"),
            Ok(())
        );
    }

    /// A safetensors file: 8 bytes of header length, the JSON header, the tensors' bytes.
    fn safetensors(header: &str, data: usize) -> Vec<u8> {
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend(header.as_bytes());
        bytes.extend(vec![0u8; data]);
        bytes
    }

    #[test]
    fn cut_or_damaged_weights_are_told_apart() {
        let header = r#"{"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}"#;
        let whole = safetensors(header, 12);
        assert_eq!(check_safetensors(&whole, "x/"), Ok(()));
        let e = check_safetensors(&whole[..whole.len() - 5], "x/").unwrap_err();
        assert!(e.contains("is truncated: it holds"), "{e}");
        assert!(
            e.contains(&format!("of the {} its header", whole.len())),
            "{e}"
        );
        let e = check_safetensors(&whole[..20], "x/").unwrap_err();
        assert!(e.contains("truncated"), "{e}");
        assert!(check_safetensors(&whole[..3], "x/")
            .unwrap_err()
            .contains("truncated"));
        let e = check_safetensors(b"<html>not found</html>", "x/").unwrap_err();
        assert!(e.contains("not a safetensors file"), "{e}");
        let e = check_safetensors(&safetensors("{nope}", 0), "x/").unwrap_err();
        assert!(e.contains("its header is not JSON"), "{e}");
        let e = check_safetensors(&safetensors(r#"{"a":{"data_offsets":[4,1]}}"#, 4), "x/")
            .unwrap_err();
        assert!(e.contains("a has no place in it"), "{e}");
    }

    #[test]
    fn a_kept_copy_is_the_same_file_only_when_the_server_says_so() {
        let v = |etag: Option<&str>, modified: Option<&str>, length: Option<&str>| Validators {
            etag: etag.map(Into::into),
            last_modified: modified.map(Into::into),
            length: length.map(Into::into),
        };
        let date = Some("Sat, 05 Dec 2026 10:00:00 GMT");
        let later = Some("Sat, 05 Dec 2026 11:00:00 GMT");
        assert!(v(Some("\"a\""), None, None).same_file(&v(Some("\"a\""), date, Some("9"))));
        assert!(!v(Some("\"a\""), date, Some("9")).same_file(&v(Some("\"b\""), date, Some("9"))));
        assert!(v(None, date, Some("9")).same_file(&v(None, date, Some("9"))));
        assert!(v(Some("\"a\""), date, Some("9")).same_file(&v(None, date, Some("9"))));
        assert!(!v(None, date, Some("9")).same_file(&v(None, later, Some("9"))));
        assert!(!v(None, date, Some("9")).same_file(&v(None, date, Some("10"))));
        assert!(!v(None, None, Some("9")).same_file(&v(None, None, Some("9"))));
    }

    #[test]
    fn failures_read_as_one_sentence() {
        let folder = CheckpointSource::Folder("https://x.org/m/".into());
        let h = hub("org", "name", None);
        for s in [
            say::status(&folder, "config.json", 404),
            say::status(&h, "config.json", 404),
            say::status(&h, "config.json", 401),
            say::status(&folder, "vocab.txt", 500),
            say::cors("https://x.org"),
            say::no_network("https://x.org"),
            say::broken("model.safetensors", "network error"),
            say::declined("150 MB"),
            say::cancelled(),
            say::not_opened(&h, "model.safetensors is not a valid safetensors file"),
        ] {
            assert!(
                s.ends_with('.') && s.matches(". ").count() == 0,
                "one sentence: {s}"
            );
        }
        assert!(say::cors("https://x.org").contains("Load checkpoint"));
        assert!(say::status(&folder, "config.json", 404).contains("404"));
    }
}

#[cfg(test)]
mod link_tests {
    use super::*;
    use crate::link::{read, write, View};
    use crate::view::Embed;

    #[test]
    fn a_link_carries_the_checkpoint_and_not_the_shape() {
        let mut view = View {
            checkpoint: Some(CheckpointSource::parse("hf:org/name@v2").unwrap()),
            embed: Some(Embed::Stage),
            ..View::default()
        };
        view.selection.head = 2;
        let query = write(&view, &["test-hooks"]);
        assert_eq!(query, "?test-hooks&head=3&embed&checkpoint=hf:org/name@v2");
        let back = read(&query, 14).unwrap();
        assert_eq!(back.notices, Vec::<String>::new());
        assert_eq!(back.value, view);
        // A shape beside it would only offer a Reset: not written, and ignored when read.
        view.shape.preset = crate::Preset::Small;
        assert_eq!(write(&view, &[]), "?head=3&embed&checkpoint=hf:org/name@v2");
        let r = read("?preset=small&checkpoint=models%2Fweek%203%2F", 14).unwrap();
        assert_eq!(r.value.shape, View::default().shape);
        assert_eq!(
            r.value.checkpoint,
            Some(CheckpointSource::Folder("models/week 3/".into()))
        );
        assert_eq!(
            r.notices,
            ["Checkpoint: the link opens that model, so its model settings are ignored."]
        );
        let folder = View {
            checkpoint: r.value.checkpoint,
            ..View::default()
        };
        assert_eq!(write(&folder, &[]), "?checkpoint=models/week%203/");
    }

    #[test]
    fn a_bad_checkpoint_leaves_the_rest_of_the_link() {
        for bad in [
            "",
            "hf:nope",
            "javascript:alert(1)",
            "%F0%9F%90",
            "hf:%F0%9F%90%B1/x",
        ] {
            let r = read(&format!("?head=2&checkpoint={bad}"), 14).unwrap();
            assert_eq!(r.value.checkpoint, None, "{bad}");
            assert_eq!(r.value.selection.head, 1, "{bad}");
            assert_eq!(r.notices.len(), 1, "{bad}: {:?}", r.notices);
            assert!(r.notices[0].starts_with("Checkpoint: "), "{:?}", r.notices);
        }
        let huge = format!("?checkpoint={}", "a".repeat(100_000));
        let r = read(&huge, 14).unwrap();
        assert!(
            r.notices[0].contains("100000 characters are more than"),
            "{:?}",
            r.notices
        );
    }
}
