//! "Prepare for a course", beside "Copy embed code": the live model's checkpoint folder and a
//! README.txt in one zip (`protocol::course`), whose `<iframe>` opens the chosen view of that
//! model through a `checkpoint=` relative to Attention Lab's page.

use crate::format::format_bytes;
use crate::live::Live;
use crate::training::checkpoint::download::download_files;
use leptos::prelude::*;
use protocol::archive::DosTime;
use protocol::course::course_archive;
use protocol::link::View;
use protocol::messages::FilesFor;
use protocol::{LabResult, ModelBundle};

/// The button, and what it did (in `data-course-said`).
#[component]
pub fn PrepareCourse(live: Live, view: Memo<View>) -> impl IntoView {
    let said = RwSignal::new(None::<String>);
    let waiting = RwSignal::new(false);
    let off =
        move || waiting.get() || live.busy.with(Option::is_some) || live.info.with(Option::is_none);
    let prepare = move |_| {
        waiting.set(true);
        said.set(None);
        live.files_for(FilesFor::Course, move |files| {
            waiting.set(false);
            said.set(Some(
                match files.and_then(|(a, _)| pack(&a, &view.get_untracked())) {
                    Ok(told) => told,
                    Err(e) => format!("Not prepared: {e}"),
                },
            ));
        });
    };
    view! {
        <button type="button" class="prepare-course" disabled=off on:click=prepare
            title="Download this model's checkpoint folder in a zip, with a README on putting it beside your course page and the iframe that shows it">
            "Prepare for a course"
        </button>
        <span class="course-said" role="status" data-course-said=move || said.get().unwrap_or_default()>
            {move || said.get()}
        </span>
    }
}

/// Zips `bundle` for `view` and hands the archive over as a download; what to say.
fn pack(bundle: &ModelBundle, view: &View) -> LabResult<String> {
    let archive = course_archive(bundle, view, &app_folder(), now())?;
    download_files(&[(&archive.file_name, &archive.bytes, "application/zip")])?;
    Ok(format!(
        "Downloaded {} ({}): put its folder {}/ beside Attention Lab's folder on your course site, as its README.txt says.",
        archive.file_name,
        format_bytes(archive.bytes.len() as u64),
        archive.folder
    ))
}

/// The name of the folder Attention Lab's page is in ("attention-lab" of
/// "/courses/attention-lab/"), "" at a site's root.
fn app_folder() -> String {
    let path = web_sys::window()
        .and_then(|w| w.location().pathname().ok())
        .unwrap_or_default();
    let folder = match path.rsplit_once('/') {
        Some((folder, _file)) => folder,
        None => "",
    };
    folder.rsplit('/').next().unwrap_or_default().to_string()
}

/// The local time now, as the zip keeps it.
fn now() -> DosTime {
    let d = js_sys::Date::new_0();
    DosTime::new(
        d.get_full_year(),
        d.get_month() + 1,
        d.get_date(),
        d.get_hours(),
        d.get_minutes(),
        d.get_seconds(),
    )
}
