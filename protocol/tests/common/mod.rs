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

/// Whether `attrs` hold `#[cfg(test)]` (or a `cfg` naming `test`): the item is test code.
// web_tests_run reads no `cfg`.
#[allow(dead_code)]
pub fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta
                .require_list()
                .is_ok_and(|l| l.tokens.to_string().split_whitespace().any(|t| t == "test"))
    })
}
