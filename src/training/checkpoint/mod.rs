//! Checkpoint files in the browser: recognising the picked or dropped files, reading them with a
//! progress bar, the load and download controls, and handing files back as downloads.

pub mod download;
pub mod read;
pub mod recognise;
pub mod view;
