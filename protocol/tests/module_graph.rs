//! The module graph of the engine, this crate and the web app, read from their sources: every
//! `crate::…` and `super::…` path outside test code is an edge from the file's module to the
//! module it names. The invariant (ARCHITECTURE.md): no circles, and in the web app neither side
//! of the worker boundary imports the other's modules. `./dev modules` prints the graph.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `a/b.rs` and `a/b/mod.rs` are `a::b`; `lib.rs` is the root, "".
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts.join("::")
}

/// The source without its test code: everything from `#[cfg(test)]` on (tests sit at the end
/// of a file here, and may reach into any module).
fn without_tests(text: &str) -> &str {
    text.split("#[cfg(test)]").next().unwrap_or(text)
}

/// Paths after `crate::` or `super::`, including inside `use crate::{a::X, b}` groups.
fn referenced_paths(text: &str) -> Vec<(bool, Vec<String>)> {
    let mut found = Vec::new();
    for (prefix, is_super) in [("crate::", false), ("super::", true)] {
        for (at, _) in text.match_indices(prefix) {
            let before = text[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let rest = &text[at + prefix.len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let inner = &group[..group.find('}').unwrap_or(group.len())];
                for item in inner.split(',') {
                    found.push((is_super, segments(item.trim())));
                }
            } else {
                found.push((is_super, segments(rest)));
            }
        }
    }
    found
}

fn segments(path: &str) -> Vec<String> {
    path.split("::")
        .map(|s| {
            s.chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .take_while(|s| !s.is_empty())
        .collect()
}

/// Each module's outgoing edges, to modules of the same crate.
fn graph(src: &Path) -> Graph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(src, f)).collect();
    let mut graph = Graph::new();
    for file in &files {
        let from = module_of(src, file);
        let text = std::fs::read_to_string(file).unwrap();
        let edges = graph.entry(from.clone()).or_default();
        for (is_super, path) in referenced_paths(without_tests(&text)) {
            let mut full: Vec<String> = if is_super {
                let mut parent: Vec<String> = from.split("::").map(str::to_string).collect();
                // In `a/b.rs`, super is `a`; in `a/mod.rs` (module `a`), super is the root.
                parent.pop();
                parent
            } else {
                Vec::new()
            };
            full.extend(path);
            // The longest prefix that is a module file.
            let target = (0..=full.len())
                .rev()
                .map(|n| full[..n].join("::"))
                .find(|m| modules.contains(m))
                .unwrap_or_default();
            // A module's own parent (`mod.rs` declaring it) is not a dependency on it.
            let is_ancestor =
                target.is_empty() || from.starts_with(&format!("{target}::")) || target == from;
            if !is_ancestor {
                edges.insert(target);
            }
        }
    }
    graph
}

/// A circle in the graph, if there is one.
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    fn visit(
        node: &str,
        graph: &Graph,
        marks: &mut BTreeMap<String, Mark>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match marks.get(node).copied().unwrap_or(Mark::New) {
            Mark::Done => return None,
            Mark::Open => {
                let start = stack.iter().position(|n| n == node).unwrap_or(0);
                let mut cycle = stack[start..].to_vec();
                cycle.push(node.to_string());
                return Some(cycle);
            }
            Mark::New => {}
        }
        marks.insert(node.to_string(), Mark::Open);
        stack.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, graph, marks, stack) {
                return Some(cycle);
            }
        }
        stack.pop();
        marks.insert(node.to_string(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut marks, &mut Vec::new()))
}

fn print(name: &str, graph: &Graph) {
    println!("{name}:");
    for (from, to) in graph {
        let to: Vec<&str> = to.iter().map(String::as_str).collect();
        println!(
            "  {} -> {}",
            if from.is_empty() { "(root)" } else { from },
            to.join(", ")
        );
    }
}

fn crate_src(dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(dir)
}

#[test]
fn no_crate_has_an_import_circle() {
    for (name, dir) in [
        ("web app", "src"),
        ("engine", "engine/src"),
        ("protocol", "protocol/src"),
        ("web app", "src"),
    ] {
        let graph = graph(&crate_src(dir));
        print(name, &graph);
        assert!(graph.len() > 5, "{name}: too few modules read: {graph:?}");
        if let Some(cycle) = find_cycle(&graph) {
            panic!("{name} has an import circle: {}", cycle.join(" -> "));
        }
    }
}

#[test]
fn page_and_worker_do_not_import_each_other() {
    let graph = graph(&crate_src("src"));
    let worker = |m: &str| m == "worker" || m.starts_with("worker::");
    // Shared by both sides: the plumbing to the browser's storage, message channel and task
    // queue.
    let shared = ["storage", "worker_io", "tasks", "js", "testing"];
    for (from, to) in &graph {
        if from.is_empty() || shared.contains(&from.as_str()) || from.starts_with("bin") {
            continue;
        }
        for target in to {
            if shared.contains(&target.as_str()) {
                continue;
            }
            assert_eq!(
                worker(from),
                worker(target),
                "{from} -> {target} crosses the worker boundary"
            );
        }
    }
}

#[test]
fn the_checker_sees_a_circle() {
    let mut g = Graph::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("c".into());
    g.entry("c".into()).or_default().insert("a".into());
    assert_eq!(
        find_cycle(&g),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    g.get_mut("c").unwrap().clear();
    assert_eq!(find_cycle(&g), None);
    assert_eq!(
        referenced_paths("use crate::{lab::X, live};\nlet y = super::stage::Stage;"),
        vec![
            (false, vec!["lab".to_string(), "X".into()]),
            (false, vec!["live".into()]),
            (true, vec!["stage".into(), "Stage".into()])
        ]
    );
}
