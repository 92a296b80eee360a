//! The crates' shape, checked: in each of [`CHECKED`] the top-level modules import each
//! other without a cycle, and in each of [`SIZED`] no source file is over
//! `MAX_FILE_LINES` lines unless its opening lines say why ([`LONGER_BECAUSE`]).
//! (Functions over 80 lines are clippy's `too_many_lines`, turned on in each crate root.)

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Longest a source file of the library may be.
const MAX_FILE_LINES: usize = 600;

/// The crates (folders under `crates/`) whose modules import each other without a cycle:
/// every library crate.
const CHECKED: [&str; 7] = [
    "gatehouse",
    "gateway",
    "http",
    "servers",
    "conformance",
    "contract",
    "bench",
];

/// The crates whose files are held to [`MAX_FILE_LINES`]: every one.
const SIZED: [&str; 8] = [
    "gatehouse",
    "gateway",
    "http",
    "servers",
    "cli",
    "conformance",
    "contract",
    "bench",
];

/// What a longer file says in its opening lines, with the reason after it.
const LONGER_BECAUSE: &str = "Longer than 600 lines because";

fn source_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("the source folder reads") {
        let path = entry.expect("a folder entry reads").path();
        if path.is_dir() {
            source_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The sources of the crate in `crates/NAME`.
fn src(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(name)
        .join("src")
}

/// The top-level module a file belongs to (`catalog/live.rs` → `catalog`), `None` for the
/// crate root.
fn module_of(root: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(root).expect("a file under src");
    let first = rel.components().next()?.as_os_str().to_str()?.to_owned();
    let name = first.strip_suffix(".rs").unwrap_or(&first).to_owned();
    (name != "lib").then_some(name)
}

/// A test file, or a module's tests: their imports do not count (a test may use anything).
fn is_test_file(root: &Path, file: &Path) -> bool {
    let rel = file.strip_prefix(root).expect("a file under src");
    let name = rel.file_stem().and_then(|s| s.to_str()).unwrap_or("");
    name == "tests"
        || name.ends_with("_tests")
        || rel.components().any(|c| c.as_os_str() == "tests")
}

/// The code of a file without comments and literals (a `"image/*"` or a `"crate::x"` in a
/// string is neither a comment nor a path), cut where its tests module starts. Each
/// comment or literal becomes one space.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests {") {
        Some(at) => &text[..at],
        None => text,
    };
    let b = text.as_bytes();
    let mut code = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        let skip_to = if rest.starts_with(b"//") {
            rest.iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |n| i + n)
        } else if rest.starts_with(b"/*") {
            // Block comments nest in Rust.
            let (mut depth, mut j) = (0usize, i);
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            j
        } else if let Some(hashes) = raw_string_start(rest) {
            // r"…", r#"…"#, br"…": ends at the quote followed by as many #s.
            let open = i + rest.iter().position(|&c| c == b'"').unwrap_or(0) + 1;
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            b[open..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(b.len(), |n| open + n + close.len())
        } else if rest[0] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            j + 1
        } else if rest[0] == b'\'' && (rest.get(2) == Some(&b'\'') || rest.get(1) == Some(&b'\\')) {
            // A char literal ('"', '\'', '\u{7f}'), not a lifetime ('a): past an escape's
            // backslash and the character after it, to the closing quote.
            let from = if rest[1] == b'\\' { 3 } else { 2 };
            rest.get(from..)
                .and_then(|r| r.iter().position(|&c| c == b'\''))
                .map_or(b.len(), |n| i + from + n + 1)
        } else {
            code.push(b[i]);
            i += 1;
            continue;
        };
        code.push(b' ');
        i = skip_to.min(b.len()).max(i + 1);
    }
    String::from_utf8_lossy(&code).into_owned()
}

/// How many `#`s a raw string starting here has, if one starts here.
fn raw_string_start(rest: &[u8]) -> Option<usize> {
    let after_b = rest.strip_prefix(b"b").unwrap_or(rest);
    let after_r = after_b.strip_prefix(b"r")?;
    let hashes = after_r.iter().take_while(|&&c| c == b'#').count();
    (after_r.get(hashes) == Some(&b'"')).then_some(hashes)
}

/// The first-level names of a `{…}` group that starts just after its opening brace.
fn group_names(group: &str, names: &mut BTreeSet<String>) {
    let mut depth = 1usize;
    let mut expect_name = true;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            ',' if depth == 1 => expect_name = true,
            c if expect_name && depth == 1 && !c.is_whitespace() => {
                let name = ident(&group[i..]);
                if !name.is_empty() && name != "self" {
                    names.insert(name);
                }
                expect_name = false;
            }
            _ => {}
        }
    }
}

fn ident(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// The top-level modules a piece of code names through `crate::`: paths
/// (`crate::catalog::ToolSpec`) and groups (`use crate::{catalog::ToolSpec, trace}`).
fn named_modules(code: &str) -> BTreeSet<String> {
    named_modules_from(code, &[])
}

/// As [`named_modules`], for the code of the module at `path` (`["call", "held"]` for
/// `call/held.rs`): its `super::` paths too, resolved from there (`super::super::tasks`
/// in `call/held.rs` names `tasks`; `super::next` names `call`, its own).
fn named_modules_from(code: &str, path: &[String]) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let after_root = |after: &str, names: &mut BTreeSet<String>| {
        if let Some(group) = after.strip_prefix('{') {
            group_names(group, names);
        } else {
            let name = ident(after);
            if !name.is_empty() {
                names.insert(name);
            }
        }
    };
    for (at, _) in code.match_indices("crate::") {
        after_root(&code[at + "crate::".len()..], &mut names);
    }
    let bytes = code.as_bytes();
    let mut at = 0;
    while let Some(found) = code[at..].find("super::") {
        let start = at + found;
        // Only the first `super::` of a run (not the second of `super::super::`), and not
        // the end of a longer name.
        let prev = start.checked_sub(1).map(|i| bytes[i]);
        let mut end = start;
        let mut ups = 0;
        while code[end..].starts_with("super::") {
            ups += 1;
            end += "super::".len();
        }
        at = end;
        if prev.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b':') {
            continue;
        }
        match path.len().checked_sub(ups) {
            Some(0) => after_root(&code[end..], &mut names),
            Some(_) => {
                names.insert(path[0].clone());
            }
            None => {}
        }
    }
    names
}

/// The module path of `file` under `root`: `call/held.rs` and `call/held/mod.rs` are
/// `["call", "held"]`; `lib.rs` is `[]`.
fn module_path(root: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(root).expect("a file under src");
    let mut path: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_owned())
        .collect();
    if path.last().is_some_and(|l| l == "mod" || l == "lib") {
        path.pop();
    }
    path
}

/// Each top-level module of crate `name` and the other top-level modules its non-test
/// code names.
fn import_graph(name: &str) -> BTreeMap<String, BTreeSet<String>> {
    let root = src(name);
    let mut files = Vec::new();
    source_files(&root, &mut files);
    let modules: BTreeSet<String> = files.iter().filter_map(|f| module_of(&root, f)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let Some(module) = module_of(&root, file) else {
            continue;
        };
        let edges = graph.entry(module.clone()).or_default();
        if is_test_file(&root, file) {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("a source file reads");
        let path = module_path(&root, file);
        for name in named_modules_from(&code_of(&text), &path) {
            if name != module && modules.contains(&name) {
                edges.insert(name);
            }
        }
    }
    graph
}

/// The module paths a piece of code at `path` names, resolved: `crate::a::b` is `[a, b]`,
/// `super::x` from `call/held.rs` is `[call, x]`, and each name of a group
/// (`super::{a, b::c}`) one path; only lowercase names (modules, not their items).
fn resolved_paths(code: &str, path: &[String]) -> Vec<Vec<String>> {
    let chain = |s: &str| -> Vec<String> {
        let mut out = Vec::new();
        let mut rest = s;
        loop {
            let name = ident(rest);
            if name.is_empty() || !name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_') {
                break;
            }
            rest = &rest[name.len()..];
            out.push(name);
            match rest.strip_prefix("::") {
                Some(r) if !r.starts_with('{') => rest = r,
                _ => break,
            }
        }
        out
    };
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(i) = code[at..].find(['c', 's']) {
        let start = at + i;
        at = start + 1;
        let prev = start.checked_sub(1).map(|p| code.as_bytes()[p]);
        if prev.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b':') {
            continue;
        }
        let rest = &code[start..];
        let (base, mut tail): (Vec<String>, &str) = if let Some(r) = rest.strip_prefix("crate::") {
            (Vec::new(), r)
        } else if rest.starts_with("super::") {
            let mut ups = 0;
            let mut r = rest;
            while let Some(next) = r.strip_prefix("super::") {
                ups += 1;
                r = next;
            }
            match path.len().checked_sub(ups) {
                Some(n) => (path[..n].to_vec(), r),
                None => continue,
            }
        } else {
            continue;
        };
        if let Some(group) = tail.strip_prefix('{') {
            // Each first-level item of the group, with its own path.
            let (mut depth, mut item_start) = (0usize, 0usize);
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        let item = chain(group[item_start..i].trim_start());
                        found.push([base.clone(), item].concat());
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        let item = chain(group[item_start..i].trim_start());
                        found.push([base.clone(), item].concat());
                        item_start = i + 1;
                    }
                    _ => {}
                }
            }
        } else {
            tail = tail.trim_start();
            found.push([base, chain(tail)].concat());
        }
    }
    found
}

/// For each folder module of crate `name` (`connect`, `connect/auth`, …), its child
/// modules and the sibling children each one's non-test code names.
fn folder_graphs(name: &str) -> BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> {
    let root = src(name);
    let mut files = Vec::new();
    source_files(&root, &mut files);
    let modules: BTreeSet<Vec<String>> = files.iter().map(|f| module_path(&root, f)).collect();
    let mut graphs: BTreeMap<Vec<String>, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for file in &files {
        let path = module_path(&root, file);
        if is_test_file(&root, file) || path.is_empty() {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("a source file reads");
        let code = code_of(&text);
        for depth in 1..path.len() {
            let (folder, child) = (&path[..depth], &path[depth]);
            graphs
                .entry(folder.to_vec())
                .or_default()
                .entry(child.clone())
                .or_default();
        }
        for target in resolved_paths(&code, &path) {
            for depth in 1..path.len() {
                let (folder, child) = (&path[..depth], &path[depth]);
                let Some(other) = target.get(depth) else {
                    continue;
                };
                let sibling = [folder, std::slice::from_ref(other)].concat();
                if target[..depth] == *folder && other != child && modules.contains(&sibling) {
                    graphs
                        .entry(folder.to_vec())
                        .or_default()
                        .entry(child.clone())
                        .or_default()
                        .insert(other.clone());
                }
            }
        }
    }
    graphs
}

/// A cycle in the graph, as the modules on it (the first repeated at the end), if any.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    fn visit<'a>(
        node: &'a str,
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        marks: &mut BTreeMap<&'a str, Mark>,
        path: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        marks.insert(node, Mark::Open);
        path.push(node);
        for next in graph.get(node).into_iter().flatten() {
            match marks.get(next.as_str()).copied().unwrap_or(Mark::New) {
                Mark::Open => {
                    let start = path.iter().position(|n| *n == next).unwrap_or(0);
                    let mut cycle: Vec<String> =
                        path[start..].iter().map(|s| s.to_string()).collect();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                Mark::New => {
                    if let Some(cycle) = visit(next, graph, marks, path) {
                        return Some(cycle);
                    }
                }
                Mark::Done => {}
            }
        }
        path.pop();
        marks.insert(node, Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    for node in graph.keys() {
        if marks.get(node.as_str()).copied().unwrap_or(Mark::New) == Mark::New
            && let Some(cycle) = visit(node, graph, &mut marks, &mut Vec::new())
        {
            return Some(cycle);
        }
    }
    None
}

#[test]
fn each_library_s_modules_import_each_other_without_a_cycle() {
    let graph = import_graph("gatehouse");
    // The graph is read at all: the stages named in lib.rs are there, with their edges.
    assert!(graph["turn"].contains("gate"), "{graph:?}");
    assert!(graph["gate"].contains("policy"), "{graph:?}");
    let gateway = import_graph("gateway");
    assert!(gateway["call"].contains("confirm"), "{gateway:?}");
    for name in CHECKED {
        let graph = import_graph(name);
        assert_eq!(find_cycle(&graph), None, "crates/{name}: {graph:?}");
    }
}

#[test]
fn inside_each_folder_the_modules_import_each_other_without_a_cycle() {
    let graphs = folder_graphs("gatehouse");
    // Read at all: a connection restarts through `restart`, which makes `session`s.
    let connect = &graphs[&vec!["connect".to_owned()]];
    assert!(connect["connection"].contains("restart"), "{connect:?}");
    assert!(connect["restart"].contains("session"), "{connect:?}");
    for name in CHECKED {
        for (folder, graph) in folder_graphs(name) {
            assert_eq!(
                find_cycle(&graph),
                None,
                "crates/{name}/src/{}: {graph:?}",
                folder.join("/")
            );
        }
    }
}

#[test]
fn a_path_is_resolved_from_where_it_is_written() {
    let held = ["call".to_owned(), "held".to_owned()];
    let code = "use super::{holder::Holder, next}; use crate::store::Closed;\n\
                fn f() { super::super::tasks::start(); Gateway::x(); }";
    assert_eq!(
        resolved_paths(code, &held),
        [
            vec!["call", "holder"],
            vec!["call", "next"],
            vec!["store", "Closed"][..1].to_vec(),
            vec!["tasks", "start"],
        ]
        .map(|p| p.into_iter().map(str::to_owned).collect::<Vec<_>>())
    );
}

#[test]
fn a_cycle_is_found_where_there_is_one() {
    let code = code_of(
        "use crate::{\n    catalog::ToolSpec, // crate::host\n    trace::{Trace, Who},\n};\n\
         /* crate::person /* nested */ crate::gate */ fn f() { crate::policy::decide(); }\n\
         const MIME: &str = \"image/*\"; fn g() { crate::result::shape(); }\n\
         const S: &str = \"crate::model\"; const R: &str = r#\"crate::dialect \"*/\" \"#;\n\
         const Q: char = '\"'; const E: char = '\\''; fn h<'a>(x: &'a str) { crate::text::visible(x); }\n\
         #[cfg(test)]\nmod tests {\n    use crate::turn;\n}\n",
    );
    assert_eq!(
        named_modules(&code).into_iter().collect::<Vec<_>>(),
        ["catalog", "policy", "result", "text", "trace"]
    );
    // A module's `super::` paths, resolved from where it is: `call/held.rs` names `tasks`
    // through `super::super::`, its own `call` through `super::`, the root's items and
    // `relay` through `super::super::{…}`; `a_super::x` is no `super::`.
    let held = ["call".to_owned(), "held".to_owned()];
    let code = "use super::super::tasks::Started; use super::next::Next;\n\
                use super::super::{Gateway, relay::{self, ToCaller}}; fn f() { a_super::x(); }";
    assert_eq!(
        named_modules_from(code, &held)
            .into_iter()
            .collect::<Vec<_>>(),
        ["Gateway", "call", "relay", "tasks"]
    );
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    graph.entry("a".into()).or_default().insert("b".into());
    graph.entry("b".into()).or_default().insert("c".into());
    graph.entry("c".into()).or_default();
    assert_eq!(find_cycle(&graph), None);
    graph.get_mut("c").unwrap().insert("a".into());
    assert_eq!(
        find_cycle(&graph),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
}

#[test]
fn no_source_file_is_over_600_lines_without_a_reason_at_its_top() {
    let mut files = Vec::new();
    for name in SIZED {
        let before = files.len();
        source_files(&src(name), &mut files);
        assert!(files.len() > before, "crates/{name}'s sources are read");
    }
    assert!(files.len() > 200, "every sized crate's sources are read");
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).ok()?;
            let lines = text.lines().count();
            let opening: String = text.lines().take(12).collect::<Vec<_>>().join(" ");
            let said = opening.contains(LONGER_BECAUSE);
            (lines > MAX_FILE_LINES && !said).then(|| format!("{} ({lines} lines)", f.display()))
        })
        .collect();
    assert!(long.is_empty(), "over {MAX_FILE_LINES} lines: {long:?}");
}
