//! The module graph of every crate (engine, protocol, the web app, the CLI, the fuzzer), read
//! from their sources with `syn`: every path a module's code names (`use` trees with their
//! nested groups, and paths in types and expressions), resolved through `crate::`, `super::`,
//! `self::` and child modules, is an edge from that module to the module it reaches. Test code
//! (`#[cfg(test)]` items, and the files of modules declared so) is left out: tests may reach
//! into any module. The invariant (ARCHITECTURE.md): no circles, and in the web app neither
//! side of the worker boundary imports the other's modules. `./dev modules` prints the graph.

mod common;
use common::{is_cfg_test, rust_files};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// A module as a path of names from its crate's root ([] is the root).
type Module = Vec<String>;

/// `a/b.rs` and `a/b/mod.rs` are `a::b`; `lib.rs` and `main.rs` are the root.
fn module_of(src: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Module = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// What one module's code names: every path, as written, and the child modules it declares.
#[derive(Default)]
struct Names {
    paths: Vec<Vec<String>>,
    children: BTreeSet<String>,
    /// Child modules declared `#[cfg(test)]`: their files are test code.
    test_children: BTreeSet<String>,
    /// Inline modules (`mod x { … }`), read as modules of their own.
    inline: Vec<(String, Names)>,
}

impl Names {
    fn of_items(items: &[syn::Item]) -> Names {
        let mut names = Names::default();
        for item in items {
            if let syn::Item::Mod(m) = item {
                let name = m.ident.to_string();
                if is_cfg_test(&m.attrs) {
                    names.test_children.insert(name);
                    continue;
                }
                names.children.insert(name.clone());
                if let Some((_, inner)) = &m.content {
                    names.inline.push((name, Names::of_items(inner)));
                }
                continue;
            }
            if item_attrs(item).is_some_and(is_cfg_test) {
                continue;
            }
            let mut collect = Collect(&mut names.paths);
            collect.visit_item(item);
        }
        names
    }
}

fn item_attrs(item: &syn::Item) -> Option<&[syn::Attribute]> {
    use syn::Item::*;
    Some(match item {
        Const(i) => &i.attrs,
        Enum(i) => &i.attrs,
        Fn(i) => &i.attrs,
        Impl(i) => &i.attrs,
        Macro(i) => &i.attrs,
        Static(i) => &i.attrs,
        Struct(i) => &i.attrs,
        Trait(i) => &i.attrs,
        Type(i) => &i.attrs,
        Union(i) => &i.attrs,
        Use(i) => &i.attrs,
        _ => return None,
    })
}

/// Collects every path: `use` trees expanded (`a::{b, c::{d}}` is `a::b` and `a::c::d`), and
/// the paths of types, expressions and patterns. Test items inside impls are skipped.
struct Collect<'a>(&'a mut Vec<Vec<String>>);

impl Collect<'_> {
    fn use_tree(&mut self, prefix: &[String], tree: &syn::UseTree) {
        let with = |name: &syn::Ident| {
            let mut p = prefix.to_vec();
            p.push(name.to_string());
            p
        };
        match tree {
            syn::UseTree::Path(p) => self.use_tree(&with(&p.ident), &p.tree),
            syn::UseTree::Name(n) => self.0.push(with(&n.ident)),
            syn::UseTree::Rename(r) => self.0.push(with(&r.ident)),
            syn::UseTree::Glob(_) => self.0.push(prefix.to_vec()),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| self.use_tree(prefix, t)),
        }
    }
}

impl<'ast> Visit<'ast> for Collect<'_> {
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&[], &u.tree);
    }
    fn visit_path(&mut self, path: &'ast syn::Path) {
        self.0
            .push(path.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, path);
    }
    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_cfg_test(&f.attrs) {
            syn::visit::visit_impl_item_fn(self, f);
        }
    }
    fn visit_item_mod(&mut self, _: &'ast syn::ItemMod) {
        // Read by `Names::of_items` as modules of their own.
    }
}

/// Every module of a crate's source folder and what it names; test modules left out.
fn read_crate(src: &Path) -> BTreeMap<Module, Names> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut modules = BTreeMap::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let names = Names::of_items(&parsed.items);
        fn add(module: Module, mut names: Names, modules: &mut BTreeMap<Module, Names>) {
            for (child, inner) in std::mem::take(&mut names.inline) {
                let mut path = module.clone();
                path.push(child);
                add(path, inner, modules);
            }
            modules.insert(module, names);
        }
        add(module_of(src, file), names, &mut modules);
    }
    // The files of modules declared `#[cfg(test)]`, and everything below them, are test code.
    let tests: Vec<Module> = modules
        .iter()
        .flat_map(|(m, n)| {
            n.test_children.iter().map(move |c| {
                let mut t = m.clone();
                t.push(c.clone());
                t
            })
        })
        .collect();
    modules.retain(|m, _| !tests.iter().any(|t| m.starts_with(t)));
    modules
}

/// `path`, named in `module`, as a path from the crate root; None for another crate's.
fn resolve(
    module: &Module,
    path: &[String],
    modules: &BTreeMap<Module, Names>,
) -> Option<Vec<String>> {
    let (first, rest) = path.split_first()?;
    let mut base = match first.as_str() {
        "crate" => Vec::new(),
        "self" => module.clone(),
        "super" => {
            let mut m = module.clone();
            m.pop();
            m
        }
        // A child module (or, for a `use`, a module of the same name in scope).
        name if modules
            .get(module)
            .is_some_and(|n| n.children.contains(name)) =>
        {
            let mut m = module.clone();
            m.push(name.to_string());
            m
        }
        _ => return None,
    };
    let mut rest = rest;
    while let Some((s, tail)) = rest.split_first() {
        if s != "super" {
            break;
        }
        base.pop();
        rest = tail;
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// Each module's outgoing edges, to other modules of the same crate.
fn graph(src: &Path) -> Graph {
    let modules = read_crate(src);
    let name = |m: &Module| m.join("::");
    let mut graph = Graph::new();
    for (from, names) in &modules {
        let edges = graph.entry(name(from)).or_default();
        for path in &names.paths {
            let Some(full) = resolve(from, path, &modules) else {
                continue;
            };
            // The longest prefix that is a module.
            let Some(target) = (0..=full.len())
                .rev()
                .map(|n| full[..n].to_vec())
                .find(|m| modules.contains_key(m))
            else {
                continue;
            };
            // A module's own ancestors (the root, the `mod.rs` declaring it) declare it: naming
            // their items is no import of a sibling.
            if !from.starts_with(&target) {
                edges.insert(name(&target));
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

const CRATES: [(&str, &str); 6] = [
    ("engine", "engine/src"),
    ("protocol", "protocol/src"),
    ("worker core", "worker-core/src"),
    ("web app", "src"),
    ("cli", "cli/src"),
    ("fuzz", "fuzz/src"),
];

#[test]
fn no_crate_has_an_import_circle() {
    let mut circles = Vec::new();
    for (name, dir) in CRATES {
        let graph = graph(&crate_src(dir));
        print(name, &graph);
        assert!(graph.len() >= 2, "{name}: too few modules read: {graph:?}");
        if let Some(cycle) = find_cycle(&graph) {
            circles.push(format!("{name}: {}", cycle.join(" -> ")));
        }
    }
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}

#[test]
fn page_and_worker_do_not_import_each_other() {
    let graph = graph(&crate_src("src"));
    let worker = |m: &str| m == "worker" || m.starts_with("worker::");
    // Shared by both sides: the plumbing to the browser's storage, message channel, task
    // queue, and the starting of a worker (the page starts the training worker, which starts
    // its gradient workers).
    let shared = [
        "storage",
        "worker_io",
        "worker_client",
        "tasks",
        "js",
        "testing",
    ];
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

/// The engine, the protocol and the worker core know nothing of the web: they build, test and
/// fuzz natively, and the app's glue is the only code that touches the browser's types.
#[test]
fn the_crates_under_the_app_name_nothing_of_the_web() {
    for dir in ["engine/src", "protocol/src", "worker-core/src"] {
        let mut files = Vec::new();
        rust_files(&crate_src(dir), &mut files);
        assert!(files.len() >= 5, "{dir}: too few files read");
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for web in ["js_sys", "web_sys", "wasm_bindgen"] {
                assert!(!text.contains(web), "{} names {web}", file.display());
            }
        }
    }
}

/// A crate written to a temporary folder: (file, text) pairs.
fn planted(files: &[(&str, &str)]) -> Graph {
    let dir = std::env::temp_dir().join(format!(
        "module-graph-{}-{}",
        std::process::id(),
        files.len()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    for (file, text) in files {
        let path = dir.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let g = graph(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    g
}

#[test]
fn the_checker_sees_circles_between_siblings_through_groups_super_and_child_paths() {
    // Siblings a and b: a names b through a nested group, b names a through super.
    let g = planted(&[
        ("lib.rs", "mod ops;\n"),
        ("ops/mod.rs", "pub mod a;\npub mod b;\n"),
        (
            "ops/a.rs",
            "use crate::ops::{b::{B}, self as o};\npub struct A;\n",
        ),
        ("ops/b.rs", "pub fn f() -> super::a::A { super::a::A }\n"),
    ]);
    assert_eq!(
        find_cycle(&g),
        Some(vec!["ops::a".into(), "ops::b".into(), "ops::a".into()]),
        "{g:?}"
    );
    // The same without b's edge: no circle; a test module's edge does not count.
    let g = planted(&[
        ("lib.rs", "mod ops;\n"),
        ("ops/mod.rs", "pub mod a;\npub mod b;\n"),
        ("ops/a.rs", "use crate::ops::{b::{B}};\npub struct A;\n"),
        (
            "ops/b.rs",
            "pub struct B;\n#[cfg(test)]\nmod tests { use super::super::a::A; }\n",
        ),
    ]);
    assert_eq!(find_cycle(&g), None, "{g:?}");
    assert_eq!(g["ops::a"], BTreeSet::from(["ops::b".to_string()]));
    // A circle through a type path, not a `use`.
    let g = planted(&[
        ("main.rs", "mod x;\nmod y;\n"),
        ("x.rs", "pub struct X(crate::y::Y);\n"),
        ("y.rs", "pub struct Y(Box<crate::x::X>);\n"),
    ]);
    assert!(find_cycle(&g).is_some(), "{g:?}");
}
