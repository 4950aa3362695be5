//! Functions a reader can hold in mind, and files of one job: in every crate that ships (engine,
//! protocol, worker-core, the CLI and the web app), no function of non-test code runs over
//! `MOST_FN_LINES` lines and no file holds over `MOST_FILE_LINES` lines of non-test code, blank
//! and comment lines not counted. Test code (`#[cfg(test)]` items, and the files of modules declared so) is
//! left out. Read with `syn`, spans giving the lines; a Leptos component's `view!` is part of its
//! function, so a long view is a long function.
//!
//! `cargo test -p attention-lab-protocol --test code_size -- --nocapture` prints the longest.

mod common;
use common::{is_cfg_test, rust_files};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use syn::spanned::Spanned;
use syn::visit::Visit;

const MOST_FN_LINES: usize = 120;
const MOST_FILE_LINES: usize = 600;

/// The crates' source folders, from the workspace root.
const SOURCES: [&str; 5] = [
    "engine/src",
    "protocol/src",
    "worker-core/src",
    "cli/src",
    "src",
];

/// Lines `first..=last` (1-based) of `lines` that hold code: neither blank nor only a comment.
fn code_lines(lines: &[&str], first: usize, last: usize) -> usize {
    lines[first - 1..last]
        .iter()
        .filter(|l| {
            let l = l.trim();
            !l.is_empty() && !l.starts_with("//")
        })
        .count()
}

/// One function: where it is and how long.
struct Function {
    file: PathBuf,
    name: String,
    line: usize,
    lines: usize,
}

/// What one file holds: its functions (not test code), the line ranges of its test code, and
/// the test modules it declares without a body (their files are test code).
struct Read<'a> {
    file: &'a Path,
    lines: &'a [&'a str],
    functions: Vec<Function>,
    test_ranges: Vec<(usize, usize)>,
    test_children: Vec<String>,
}

impl Read<'_> {
    fn function(&mut self, name: String, span: proc_macro2::Span) {
        let (first, last) = (span.start().line, span.end().line);
        self.functions.push(Function {
            file: self.file.to_path_buf(),
            name,
            line: first,
            lines: code_lines(self.lines, first, last),
        });
    }

    /// A test item: its lines are not counted, and nothing inside it is read.
    fn test_item(&mut self, span: proc_macro2::Span) {
        self.test_ranges.push((span.start().line, span.end().line));
    }
}

impl<'ast> Visit<'ast> for Read<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Fn(i) => &i.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Mod(i) => &i.attrs,
            syn::Item::Const(i) => &i.attrs,
            syn::Item::Static(i) => &i.attrs,
            syn::Item::Struct(i) => &i.attrs,
            syn::Item::Enum(i) => &i.attrs,
            syn::Item::Trait(i) => &i.attrs,
            syn::Item::Use(i) => &i.attrs,
            syn::Item::Macro(i) => &i.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if is_cfg_test(attrs) {
            if let syn::Item::Mod(m) = item {
                if m.content.is_none() {
                    self.test_children.push(m.ident.to_string());
                }
            }
            self.test_item(item.span());
            return;
        }
        syn::visit::visit_item(self, item);
    }
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.function(f.sig.ident.to_string(), f.span());
        syn::visit::visit_item_fn(self, f);
    }
    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if is_cfg_test(&f.attrs) {
            self.test_item(f.span());
            return;
        }
        self.function(f.sig.ident.to_string(), f.span());
        syn::visit::visit_impl_item_fn(self, f);
    }
    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if f.default.is_some() {
            self.function(f.sig.ident.to_string(), f.span());
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}

/// Every function and file size of the shipped crates' non-test code.
fn measure() -> (Vec<Function>, Vec<(PathBuf, usize)>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut functions = Vec::new();
    let mut files = Vec::new();
    for source in SOURCES {
        let mut paths = Vec::new();
        rust_files(&root.join(source), &mut paths);
        paths.sort();
        // Files of modules declared `#[cfg(test)] mod x;`: x.rs or x/mod.rs beside, and below.
        let mut test_dirs: BTreeSet<PathBuf> = BTreeSet::new();
        let mut read_files = Vec::new();
        for path in &paths {
            let text = std::fs::read_to_string(path).unwrap();
            let parsed =
                syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let lines: Vec<&str> = text.lines().collect();
            let mut read = Read {
                file: path,
                lines: &lines,
                functions: Vec::new(),
                test_ranges: Vec::new(),
                test_children: Vec::new(),
            };
            read.visit_file(&parsed);
            // A module's children live in a folder named after it (`a.rs` → `a/`), or beside
            // it for `mod.rs`, `lib.rs` and `main.rs`.
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            let folder = match stem.as_str() {
                "mod" | "lib" | "main" => path.parent().unwrap().to_path_buf(),
                _ => path.with_extension(""),
            };
            for child in &read.test_children {
                test_dirs.insert(folder.join(child));
            }
            let test_lines: usize = read
                .test_ranges
                .iter()
                .map(|&(a, b)| code_lines(&lines, a, b))
                .sum();
            let code = code_lines(&lines, 1, lines.len()) - test_lines;
            read_files.push((path.clone(), code, read.functions));
        }
        for (path, code, fns) in read_files {
            let is_test = test_dirs
                .iter()
                .any(|t| path.starts_with(t) || path.with_extension("") == *t);
            if is_test {
                continue;
            }
            let shown = path.strip_prefix(root).unwrap().to_path_buf();
            files.push((shown.clone(), code));
            functions.extend(fns.into_iter().map(|f| Function {
                file: shown.clone(),
                ..f
            }));
        }
    }
    (functions, files)
}

#[test]
fn no_function_or_file_is_over_its_size() {
    let (mut functions, mut files) = measure();
    functions.sort_by_key(|f| std::cmp::Reverse(f.lines));
    files.sort_by_key(|f| std::cmp::Reverse(f.1));
    println!("longest functions (lines of code):");
    for f in functions.iter().take(12) {
        println!(
            "  {:4}  {}:{} {}",
            f.lines,
            f.file.display(),
            f.line,
            f.name
        );
    }
    println!("largest files (lines of non-test code):");
    for (file, lines) in files.iter().take(8) {
        println!("  {lines:4}  {}", file.display());
    }
    let long: Vec<String> = functions
        .iter()
        .filter(|f| f.lines > MOST_FN_LINES)
        .map(|f| {
            format!(
                "{}:{} {} ({} lines)",
                f.file.display(),
                f.line,
                f.name,
                f.lines
            )
        })
        .collect();
    let large: Vec<String> = files
        .iter()
        .filter(|f| f.1 > MOST_FILE_LINES)
        .map(|(file, lines)| format!("{} ({lines} lines)", file.display()))
        .collect();
    println!(
        "{} functions over {MOST_FN_LINES} lines, {} files over {MOST_FILE_LINES}",
        long.len(),
        large.len()
    );
    assert!(
        long.is_empty() && large.is_empty(),
        "over {MOST_FN_LINES} lines:\n  {}\nover {MOST_FILE_LINES} lines of non-test code:\n  {}",
        long.join("\n  "),
        large.join("\n  ")
    );
}

/// The measure itself, on a planted source: a function's lines of code, test code left out.
#[test]
fn the_measure_counts_lines_of_code_outside_tests() {
    let text = "fn a() {\n\n    // why\n    let x = 1;\n}\n#[cfg(test)]\nmod tests {\n    fn b() {}\n}\nimpl S {\n    #[cfg(test)]\n    fn c() {}\n    fn d() { }\n}\n";
    let parsed = syn::parse_file(text).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut read = Read {
        file: Path::new("x.rs"),
        lines: &lines,
        functions: Vec::new(),
        test_ranges: Vec::new(),
        test_children: Vec::new(),
    };
    read.visit_file(&parsed);
    let found: Vec<(String, usize)> = read
        .functions
        .iter()
        .map(|f| (f.name.clone(), f.lines))
        .collect();
    assert_eq!(found, vec![("a".into(), 3), ("d".into(), 1)]);
    assert_eq!(read.test_ranges, vec![(6, 9), (11, 12)]);
}
