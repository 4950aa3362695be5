//! Heatmaps from a list of `Figure`s, one `HeatmapFigure` each, keyed by (group, index): within
//! a group (a stage) a figure redraws in place as its data changes; a new group mounts anew.

use super::figures::Figure;
use crate::components::heatmap_figure::{HeatmapData, HeatmapFigure, HeatmapOptions};
use leptos::prelude::*;
use protocol::figure::{FigureName, HeadMatrix};
use std::hash::Hash;

#[component]
pub fn FigureList<K>(figures: Memo<Vec<Figure>>, group: Memo<K>) -> impl IntoView
where
    K: Copy + Eq + Hash + Send + Sync + 'static,
{
    let keys = move || {
        let g = group.get();
        (0..figures.with(Vec::len))
            .map(|i| (g, i))
            .collect::<Vec<_>>()
    };
    let figure = move |(_, i): (K, usize)| {
        let pick = move |f: &Vec<Figure>| f.get(i).cloned();
        let data = Memo::new(move |_| {
            figures
                .with(|f| pick(f).map(|f| f.data))
                .unwrap_or_else(HeatmapData::default)
        });
        let options = Memo::new(move |_| {
            figures
                .with(|f| pick(f).map(|f| f.options))
                .unwrap_or_else(HeatmapOptions::default)
        });
        // A figure past the list's end is on its way out: it keeps the name it had.
        let name = Memo::new(move |was: Option<&FigureName>| {
            figures
                .with(|f| pick(f).map(|f| f.name))
                .or(was.copied())
                .unwrap_or(FigureName::Head(HeadMatrix::Weights))
        });
        let max_grid = figures.with_untracked(|f| pick(f).map_or(300, |f| f.max_grid));
        view! { <HeatmapFigure data=data figure=name options=options max_grid=max_grid/> }
    };
    view! { <For each=keys key=|k| *k children=figure/> }
}
