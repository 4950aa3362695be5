//! Heatmaps from a list of `Figure`s, one `HeatmapFigure` each, keyed by (group, index): within
//! a group (a stage) a figure redraws in place as its data changes; a new group mounts anew.

use super::figure_name::FigureName;
use super::figures::Figure;
use crate::components::heatmap_figure::{HeatmapData, HeatmapFigure, HeatmapOptions};
use leptos::prelude::*;
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
        let name = Memo::new(move |_| {
            figures.with(|f| pick(f).and_then(|f| f.name).map(FigureName::name))
        });
        let max_grid = figures.with_untracked(|f| pick(f).map_or(300, |f| f.max_grid));
        view! { <HeatmapFigure data=data options=options max_grid=max_grid name=name/> }
    };
    view! { <For each=keys key=|k| *k children=figure/> }
}
