pub mod heatmap_figure;
