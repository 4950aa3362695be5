//! Checkpoint files in the browser: recognising the picked or dropped files, reading them with a
//! progress bar, the load and download controls, handing files back as downloads, and a model
//! from a web address (`remote`).

pub mod download;
pub mod read;
pub mod recognise;
pub mod remote;
pub mod view;
