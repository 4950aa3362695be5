pub mod export;
pub mod heatmap_figure;
pub mod heatmap_thumb;
pub mod painted;
