//! The page's PyTorch: the stepper's code view (`code_view`), the module and template it fetches
//! (`files`), and "Open in PyTorch", which asks the worker for the model's files and hands the
//! user a notebook (`notebook`).

pub mod code_view;
pub mod files;
pub mod notebook;

use crate::live::Live;
use crate::training::checkpoint::download::download_files;
use engine::inspect::Inspection;
use files::PytorchFiles;
use leptos::prelude::*;
use protocol::figure::FigureName;
use protocol::messages::FilesFor;
use protocol::stage::Stage;
use protocol::view::{Selection, Showing};
use protocol::{LabResult, LabSettings, ModelBundle, ProbeInput};
use std::sync::Arc;

/// The figure a stage's code is about, among its figures' names: the projections' and the
/// feature maps' first (Q), every other stage's last (the scaled scores after the raw ones, the
/// weights after the mask, the layer's output after its parts).
pub fn main_figure(stage: Stage, names: &[FigureName]) -> Option<FigureName> {
    match stage {
        Stage::Projections | Stage::FeatureMaps => names.first().copied(),
        _ => names.last().copied(),
    }
}

/// What the whole page holds for a notebook: the worker, the probe, the run's settings and
/// corpus, and the page's address. The app provides it; an embed has none, so no button.
#[derive(Clone, Copy)]
pub struct NotebookSource {
    pub live: Live,
    pub probe: RwSignal<ProbeInput>,
    pub settings: RwSignal<LabSettings>,
    pub corpus: RwSignal<String>,
    pub link: Memo<String>,
}

/// "Open in PyTorch" for one code view: its model (A or B), stage, figure and selection.
#[derive(Clone, Copy)]
pub struct OpenInPytorch {
    source: NotebookSource,
    which: Signal<Showing>,
    stage: Memo<Stage>,
    figure: Memo<Option<FigureName>>,
    selection: Memo<Selection>,
    /// A notebook is being made.
    pub busy: RwSignal<bool>,
}

impl OpenInPytorch {
    /// For the view showing model `which`, where the page provides a `NotebookSource`.
    pub fn in_context(
        which: Signal<Showing>,
        stage: Memo<Stage>,
        figure: Memo<Option<FigureName>>,
        selection: Memo<Selection>,
    ) -> Option<OpenInPytorch> {
        let source = use_context::<NotebookSource>()?;
        Some(OpenInPytorch {
            source,
            which,
            stage,
            figure,
            selection,
            busy: RwSignal::new(false),
        })
    }

    /// The training step of the weights the figures were read with (Compare's B is read
    /// beside A, at the same step).
    pub fn inspected_step(self) -> Option<u64> {
        self.source.live.inspected_step.get()
    }

    /// Gather what is shown now, ask the worker for the model's files, and download the
    /// notebook when they arrive; `status` says how it went.
    pub fn start(self, status: RwSignal<Option<String>>) {
        let b = self.which.get_untracked() == Showing::B;
        let live = self.source.live;
        let (info, shown) = if b {
            (live.info_b, live.inspection_b)
        } else {
            (live.info, live.inspection)
        };
        let ins: Option<Arc<Inspection>> =
            shown.with_untracked(|s| s.as_ref().and_then(|r| r.as_ref().ok().cloned()));
        let (Some(info), Some(ins)) = (info.get_untracked(), ins) else {
            status.set(Some("No model to open yet.".into()));
            return;
        };
        let Some(Ok(fetched)) = PytorchFiles::in_context().fetched.get_untracked() else {
            status.set(Some("The module has not arrived yet.".into()));
            return;
        };
        let stage = self.stage.get_untracked();
        let (probe, settings, corpus) = (
            self.source.probe.get_untracked(),
            self.source.settings.get_untracked(),
            self.source.corpus.get_untracked(),
        );
        let link = absolute(&self.source.link.get_untracked());
        let figure = self
            .figure
            .get_untracked()
            .map(FigureName::name)
            .unwrap_or_default();
        let data = notebook::data(&notebook::Shown {
            info: &info,
            ins: &ins,
            selection: self.selection.get_untracked(),
            stage: stage.slug(),
            figure: &figure,
            probe: &probe,
            settings: &settings,
            corpus: &corpus,
            link: &link,
        });
        self.busy.set(true);
        status.set(Some("Preparing the notebook…".into()));
        let busy = self.busy;
        live.files_for(
            FilesFor::Notebook,
            move |files: LabResult<(ModelBundle, Option<ModelBundle>)>| {
                let made = files.and_then(|(a, compare)| {
                    let bundle = match (b, compare) {
                        (true, Some(b)) => b,
                        _ => a,
                    };
                    let (name, json) = notebook::build(&fetched, data, &bundle, stage.slug())?;
                    download_files(&[(&name, json.as_bytes(), "application/x-ipynb+json")])?;
                    Ok(name)
                });
                busy.set(false);
                status.set(Some(match made {
                    Ok(name) => format!("Downloaded {name}."),
                    Err(e) => format!("Could not make the notebook: {e}"),
                }));
            },
        );
    }
}

/// The page's address for a view, whole: the notebook is opened far from the page.
fn absolute(href: &str) -> String {
    let base = web_sys::window().and_then(|w| w.location().href().ok());
    base.and_then(|base| web_sys::Url::new_with_base(href, &base).ok())
        .map(|u| u.href())
        .unwrap_or_else(|| href.to_string())
}
