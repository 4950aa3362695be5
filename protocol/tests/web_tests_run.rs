//! Every test of the web app runs. Its crate (`src/`, `tests/`) is tested only on wasm32, where
//! wasm-bindgen-test's runner runs `#[wasm_bindgen_test]` functions and nothing else: a plain
//! `#[test]` there compiles and never runs. So each module of the web crate that has a
//! `#[test]` function makes `test` wasm-bindgen-test's
//! (`use wasm_bindgen_test::wasm_bindgen_test as test;`). Read with `syn`.

mod common;
use common::rust_files;
use std::path::Path;

/// `use wasm_bindgen_test::wasm_bindgen_test as test;`
fn makes_test_wasm_bindgen_test(item: &syn::Item) -> bool {
    let syn::Item::Use(u) = item else {
        return false;
    };
    let syn::UseTree::Path(path) = &u.tree else {
        return false;
    };
    matches!(&*path.tree, syn::UseTree::Rename(r)
        if path.ident == "wasm_bindgen_test" && r.ident == "wasm_bindgen_test" && r.rename == "test")
}

/// The `#[test]` functions among `items` (the module at `place`, and the modules inside it)
/// whose module does not make `test` wasm-bindgen-test's.
fn plain_tests(items: &[syn::Item], place: &str, found: &mut Vec<String>) {
    let runs = items.iter().any(makes_test_wasm_bindgen_test);
    for item in items {
        match item {
            syn::Item::Fn(f) if !runs && f.attrs.iter().any(|a| a.path().is_ident("test")) => {
                found.push(format!("{place}::{}", f.sig.ident));
            }
            syn::Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    plain_tests(inner, &format!("{place}::{}", m.ident), found);
                }
            }
            _ => {}
        }
    }
}

fn plain_tests_in(text: &str, place: &str) -> Vec<String> {
    let file = syn::parse_file(text).unwrap_or_else(|e| panic!("{place}: {e}"));
    let mut found = Vec::new();
    plain_tests(&file.items, place, &mut found);
    found
}

#[test]
fn every_test_of_the_web_crate_is_a_wasm_bindgen_test() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut paths = Vec::new();
    rust_files(&root.join("src"), &mut paths);
    rust_files(&root.join("tests"), &mut paths);
    paths.sort();
    let mut found = Vec::new();
    for path in &paths {
        let text = std::fs::read_to_string(path).unwrap();
        let place = path.strip_prefix(root).unwrap().display().to_string();
        found.extend(plain_tests_in(&text, &place));
    }
    assert!(
        found.is_empty(),
        "tests that never run (the web crate is tested only on wasm32): add \
         `use wasm_bindgen_test::wasm_bindgen_test as test;` to their module:\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn the_check_finds_a_plain_test_and_passes_a_wasm_bindgen_one() {
    let plain = "#[cfg(test)] mod tests { use super::*; #[test] fn a() {} }";
    assert_eq!(plain_tests_in(plain, "x.rs"), ["x.rs::tests::a"]);
    let wasm = "mod tests { use wasm_bindgen_test::wasm_bindgen_test as test; #[test] fn a() {} \
                mod inner { #[test] fn b() {} } }";
    assert_eq!(plain_tests_in(wasm, "x.rs"), ["x.rs::tests::inner::b"]);
    let direct = "use wasm_bindgen_test::*; #[wasm_bindgen_test] fn c() {}";
    assert!(plain_tests_in(direct, "x.rs").is_empty());
}
