//! What the source-reading tests share (code_size, module_graph, web_tests_run).

use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, depth first.
pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}
