//! "Prepare for a course": a model trained in the page, packed for a teacher to host beside a
//! course page. One zip holds the model's checkpoint folder (the files "Download checkpoint"
//! gives) and a README.txt that says where to put the folder and gives the `<iframe>` that
//! opens it, through a `checkpoint=` relative to Attention Lab's own page.

use crate::archive::{zip, DosTime};
use crate::link::{self, View};
use crate::remote::CheckpointSource;
use crate::view::Embed;
use crate::{LabResult, ModelBundle};
use engine::checkpoint::{CONFIG_FILE, TOKENIZER_CONFIG_FILE, VOCAB_FILE, WEIGHTS_FILE};

/// The README's name inside the archive.
pub const README: &str = "README.txt";

/// What the README calls Attention Lab's folder when the page is not in one of its own (it runs
/// at a site's root): the name its README's Publish section gives.
pub const APP_FOLDER: &str = "attention-lab";

/// The archive to download.
#[derive(Clone, Debug, PartialEq)]
pub struct CourseArchive {
    /// "tiny-bert-fresh-seed-0-step1200.zip"
    pub file_name: String,
    /// The folder inside it, the model's: "tiny-bert-fresh-seed-0-step1200".
    pub folder: String,
    pub bytes: Vec<u8>,
}

/// Packs `bundle` (its checkpoint files) with a README for showing `view` (its `embed`, the
/// stage's figures when it has none) from Attention Lab in the folder `app_folder` beside it.
pub fn course_archive(
    bundle: &ModelBundle,
    view: &View,
    app_folder: &str,
    when: DosTime,
) -> LabResult<CourseArchive> {
    let folder = folder_name(bundle);
    let app = if app_folder.is_empty() {
        APP_FOLDER
    } else {
        app_folder
    };
    let path = |file: &str| format!("{folder}/{file}");
    let tokenizer_config = bundle.tokenizer_config_json.as_deref().unwrap_or_default();
    let mut files: Vec<(String, &[u8])> = vec![
        (format!("{folder}/"), &[]),
        (path(CONFIG_FILE), bundle.config_json.as_bytes()),
        (path(WEIGHTS_FILE), &bundle.safetensors),
        (path(VOCAB_FILE), bundle.vocab_txt.as_bytes()),
    ];
    if !tokenizer_config.is_empty() {
        files.push((path(TOKENIZER_CONFIG_FILE), tokenizer_config.as_bytes()));
    }
    let names: Vec<&str> = files[1..]
        .iter()
        .filter_map(|(p, _)| p.rsplit('/').next())
        .collect();
    let listed = match names.as_slice() {
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
        [] => String::new(),
    };
    let readme = readme(bundle, view, &folder, app, &listed);
    files.push((README.to_string(), readme.as_bytes()));
    let entries: Vec<(&str, &[u8])> = files.iter().map(|(p, b)| (p.as_str(), *b)).collect();
    Ok(CourseArchive {
        file_name: format!("{folder}.zip"),
        bytes: zip(&entries, when)?,
        folder,
    })
}

/// The model's folder: its name in lower-case letters and digits joined by "-", then its step
/// ("tiny BERT (fresh, seed 0)" at step 1200: "tiny-bert-fresh-seed-0-step1200"). Safe in any
/// address and on any file system.
pub fn folder_name(bundle: &ModelBundle) -> String {
    let words: Vec<String> = bundle
        .name
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    let mut name = words.join("-");
    // Long names (a Hub address) keep their start.
    if name.len() > 60 {
        name.truncate(60);
        name = name.trim_end_matches('-').to_string();
    }
    if name.is_empty() {
        name.push_str("model");
    }
    format!("{name}-step{}", bundle.step)
}

/// The view as an address relative to the course page: Attention Lab's folder, and the query
/// with `checkpoint=../FOLDER/`, read by Attention Lab's page beside that folder.
pub fn embed_address(view: &View, folder: &str, app: &str) -> String {
    let mut view = view.clone();
    view.checkpoint = Some(CheckpointSource::Folder(format!("../{folder}/")));
    view.embed = Some(view.embed.unwrap_or(Embed::Stage));
    format!("{app}/{}", link::write(&view, &[]))
}

fn readme(bundle: &ModelBundle, view: &View, folder: &str, app: &str, files: &str) -> String {
    let embed = view.embed.unwrap_or(Embed::Stage);
    let code = link::embed_code(&embed_address(view, folder, app), embed);
    let mut whole = view.clone();
    whole.embed = None;
    whole.checkpoint = Some(CheckpointSource::Folder(format!("../{folder}/")));
    let whole = format!("{app}/{}", link::write(&whole, &[]));
    // The two folders' names in a column, their notes after them.
    let width = folder.len().max(app.len()) + 3;
    let app_row = format!("{:width$}", format!("{app}/"));
    let folder_row = format!("{:width$}", format!("{folder}/"));
    format!(
        "Attention Lab: {name}, trained {step} steps, for a course page
{underline}

This archive holds the model's checkpoint folder,

    {folder}/

with {files}: the files \"Download checkpoint\" gives.

1. Put that folder on your course site beside Attention Lab's own folder (its
   files, as Attention Lab's README says under Publish):

    {app_row}Attention Lab (index.html and its files)
    {folder_row}this model

2. Paste this into a course page that sits beside them too. It shows
   {what}:

{code}

The frame opens Attention Lab from {app}/, and Attention Lab opens the model
from the address in checkpoint=, which it reads from its own page: the model
needs no server settings while it sits beside Attention Lab on the same site.
Students see the trained model at once, without training it; Play trains on.

To link to the whole page with this model instead:

    {whole}

If Attention Lab's folder has another name, change {app}/ in both addresses.
",
        name = bundle.name,
        step = bundle.step,
        underline = "=".repeat(60),
        what = embed.label(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::archive::tests::unzip;

    fn bundle() -> ModelBundle {
        ModelBundle {
            name: "tiny BERT (fresh, seed 0)".into(),
            step: 1200,
            config_json: "{}".into(),
            vocab_txt: "[PAD]\n".into(),
            tokenizer_config_json: Some("{\"do_lower_case\": true}".into()),
            word_level: true,
            safetensors: vec![1, 2, 3, 4],
            training_state: None,
        }
    }

    #[test]
    fn the_archive_holds_the_folder_and_a_readme_with_its_iframe() {
        let mut view = View::default();
        view.selection.layer = 1;
        view.embed = Some(Embed::Model);
        let b = bundle();
        let a = course_archive(
            &b,
            &view,
            "attention-lab",
            DosTime::new(2026, 12, 5, 9, 0, 0),
        )
        .unwrap();
        assert_eq!(a.folder, "tiny-bert-fresh-seed-0-step1200");
        assert_eq!(a.file_name, "tiny-bert-fresh-seed-0-step1200.zip");
        let files = unzip(&a.bytes);
        let names: Vec<&str> = files.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "tiny-bert-fresh-seed-0-step1200/",
                "tiny-bert-fresh-seed-0-step1200/config.json",
                "tiny-bert-fresh-seed-0-step1200/model.safetensors",
                "tiny-bert-fresh-seed-0-step1200/vocab.txt",
                "tiny-bert-fresh-seed-0-step1200/tokenizer_config.json",
                "README.txt",
            ]
        );
        assert_eq!(files[2].1, b.safetensors);
        let readme = String::from_utf8(files[5].1.clone()).unwrap();
        let src = "attention-lab/?layer=2&amp;embed=model&amp;checkpoint=../tiny-bert-fresh-seed-0-step1200/";
        assert!(
            readme.contains(&format!("<iframe data-attention-lab src=\"{src}\"")),
            "{readme}"
        );
        assert!(
            readme
                .contains("attention-lab/?layer=2&checkpoint=../tiny-bert-fresh-seed-0-step1200/"),
            "{readme}"
        );
        assert!(readme.contains("trained 1200 steps"), "{readme}");
        assert!(
            readme.contains(
                "with config.json, model.safetensors, vocab.txt and tokenizer_config.json:"
            ),
            "{readme}"
        );
        // The embed's address reads back to the view with the folder beside the app.
        let query = embed_address(&view, &a.folder, "attention-lab");
        let back = link::read(query.trim_start_matches("attention-lab/"), 14).unwrap();
        assert_eq!(back.notices, Vec::<String>::new());
        assert_eq!(
            back.value.checkpoint,
            Some(CheckpointSource::Folder(
                "../tiny-bert-fresh-seed-0-step1200/".into()
            ))
        );
        assert_eq!(back.value.embed, Some(Embed::Model));
    }

    #[test]
    fn folder_names_are_safe_anywhere() {
        let mut b = bundle();
        b.name = "hf:sentence-transformers/all-MiniLM-L6-v2".into();
        b.step = 0;
        assert_eq!(
            folder_name(&b),
            "hf-sentence-transformers-all-minilm-l6-v2-step0"
        );
        b.name = "🐱 ../../etc".into();
        assert_eq!(folder_name(&b), "etc-step0");
        b.name = "🐱".into();
        assert_eq!(folder_name(&b), "model-step0");
        b.name = "x".repeat(500);
        assert_eq!(folder_name(&b).len(), 60 + "-step0".len());
        // No tokenizer config: three files and the folder.
        b.tokenizer_config_json = None;
        let a =
            course_archive(&b, &View::default(), "", DosTime::new(2026, 1, 1, 0, 0, 0)).unwrap();
        let files = unzip(&a.bytes);
        assert_eq!(files.len(), 5);
        let readme = String::from_utf8(files[4].1.clone()).unwrap();
        assert!(
            readme.contains("src=\"attention-lab/?embed&amp;checkpoint=../"),
            "{readme}"
        );
    }
}
