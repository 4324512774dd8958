//! The layers of `shared/` read top to bottom: a top-level module uses only the modules listed before
//! it in `shared/lib.rs`'s "Layers, bottom to top". This test reads that list, then every source file
//! of each module (the files `#[path]` pulls in too, such as `steps/*/step.rs` under `run::steps`), and
//! fails, naming file and line, on a `crate::` path from a module to one listed after it.
//!
//! The same holds one level down: the files of a folder module (`shared/run/*.rs`, each with its own
//! subfolder and `#[path]` files) use only the files listed before them in the folder's `mod.rs`
//! ("Layers, bottom to top"), through `crate::<folder>::` or `super::` paths. A file's own unit tests
//! (`#[cfg(test)] mod …`) are left out of that check: their fixtures may use any file of the folder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The layer order as `shared/lib.rs` (or a folder's `mod.rs`) states it: the module of each
/// `//! N. [`name`]…` line (`//! N. `name`…` for a private one, which a doc link cannot name), in order.
fn layer_order(lib_rs: &str) -> Vec<String> {
    lib_rs
        .lines()
        .filter_map(|line| {
            let item = line.strip_prefix("//! ")?;
            let (number, rest) = item.split_once(". ")?;
            number.parse::<u32>().ok()?;
            let rest = rest.strip_prefix('[').unwrap_or(rest).strip_prefix('`')?;
            Some(rest.split_once('`')?.0.to_string())
        })
        .collect()
}

/// The top-level modules `shared/lib.rs` declares.
fn declared_modules(lib_rs: &str) -> Vec<String> {
    lib_rs
        .lines()
        .filter_map(|line| {
            let rest = line
                .trim()
                .strip_prefix("pub mod ")
                .or(line.trim().strip_prefix("mod "))?;
            Some(rest.strip_suffix(';')?.to_string())
        })
        .collect()
}

/// `text` with comments and the contents of string and character literals blanked out (newlines
/// kept, so offsets still give line numbers): a `crate::` in a doc comment or a message is no use.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !ident_char(chars.get(i.wrapping_sub(1))) {
            // A raw string r"…" or r#"…"#: its end is a quote followed by as many #s.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let closing: String = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
            let body_start = j + 1;
            let rest: String = chars[body_start..].iter().collect();
            let body_len = rest
                .find(&closing)
                .map(|b| rest[..b].chars().count())
                .unwrap_or(rest.chars().count());
            out.extend(chars[i..body_start].iter());
            out.extend(chars[body_start..body_start + body_len].iter().map(|&c| blank(c)));
            let end = (body_start + body_len + closing.len()).min(chars.len());
            out.extend(chars[body_start + body_len..end].iter());
            i = end;
        } else if c == '"' {
            out.push('"');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < chars.len() {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
            if i < chars.len() {
                out.push('"');
                i += 1;
            }
        } else if c == '\'' && (chars.get(i + 2) == Some(&'\'') || next == Some('\\')) {
            // A character literal ('x', '\n', '\'', '\u{..}'); a lifetime ('a) has no closing quote.
            let end = match next {
                Some('\\') => (i + 3..chars.len()).find(|&j| chars[j] == '\'').unwrap_or(i),
                _ => i + 2,
            };
            out.extend(chars[i..=end].iter().map(|&c| blank(c)));
            i = end + 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_char(c: Option<&char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || *c == '_')
}

/// Every top-level module a `crate::` path in `code` names, with the byte offset of the path: the
/// first segment after `crate::`, or of each entry of a `crate::{…}` group.
fn crate_paths(code: &str) -> Vec<(usize, String)> {
    paths_under(code, "crate::")
}

/// The first segment of every path in `code` that starts with `prefix` (`crate::`, `crate::run::`,
/// `super::`), or of each entry of a `prefix{…}` group, with the byte offset of the path.
fn paths_under(code: &str, prefix: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (at, _) in code.match_indices(prefix) {
        if ident_char(code[..at].chars().last().as_ref()) || code[..at].ends_with("::") {
            continue; // `other_crate::…`, `a::super::…`
        }
        let rest = &code[at + prefix.len()..];
        let first_ident = |s: &str| -> String {
            s.trim_start()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect()
        };
        if let Some(group) = rest.trim_start().strip_prefix('{') {
            let mut depth = 0;
            let mut entry_start = 0;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        found.push((at, first_ident(&group[entry_start..i])));
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        found.push((at, first_ident(&group[entry_start..i])));
                        entry_start = i + 1;
                    }
                    _ => {}
                }
            }
        } else {
            found.push((at, first_ident(rest)));
        }
    }
    found.retain(|(_, name)| !name.is_empty());
    found
}

/// The uses in `text` (a file of module `module`) of modules listed after it in `order`, as
/// `(line, used module, the path's first line)`.
fn upward_uses(text: &str, module: &str, order: &[String]) -> Vec<(usize, String, String)> {
    let rank = |m: &str| order.iter().position(|o| o == m);
    let Some(own) = rank(module) else {
        return Vec::new();
    };
    let code = code_only(text);
    crate_paths(&code)
        .into_iter()
        .filter(|(_, used)| rank(used).is_some_and(|r| r > own))
        .map(|(at, used)| {
            let line = code[..at].matches('\n').count() + 1;
            (line, used, text.lines().nth(line - 1).unwrap_or("").trim().to_string())
        })
        .collect()
}

/// The source files of a top-level module: `shared/<m>.rs` or everything under `shared/<m>/`, and
/// any file a `#[path = "…"]` in one of them pulls in (relative to the including file's folder).
fn module_files(shared: &Path, module: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let single = shared.join(format!("{module}.rs"));
    if single.is_file() {
        files.push(single);
    }
    let mut dirs = vec![shared.join(module)];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    let mut i = 0;
    while i < files.len() {
        let text = std::fs::read_to_string(&files[i]).unwrap();
        let folder = files[i].parent().unwrap().to_path_buf();
        for line in text.lines() {
            if let Some(rest) = line.trim().strip_prefix("#[path = \"") {
                if let Some((relative, _)) = rest.split_once('"') {
                    let included = folder.join(relative);
                    let included = included.canonicalize().unwrap_or(included);
                    if !files.contains(&included) {
                        files.push(included);
                    }
                }
            }
        }
        i += 1;
    }
    files
}

/// `code` (already [`code_only`]) with every `#[cfg(test)] mod name { … }` blanked out, newlines kept.
fn without_test_modules(code: &str) -> String {
    let mut out = code.to_string();
    let mut from = 0;
    while let Some(found) = out[from..].find("#[cfg(test)]") {
        let at = from + found;
        let after = &out[at + "#[cfg(test)]".len()..];
        // `mod`, `pub mod`, `pub(crate) mod` …
        let item = after.trim_start();
        let item = item.strip_prefix("pub").map_or(item, |rest| {
            let rest = rest.trim_start();
            rest.strip_prefix('(')
                .and_then(|r| r.split_once(')'))
                .map_or(rest, |(_, r)| r)
                .trim_start()
        });
        let is_module = item.starts_with("mod ");
        let open = after.find('{').map(|o| at + "#[cfg(test)]".len() + o);
        let (true, Some(open)) = (is_module, open) else {
            from = at + 1;
            continue;
        };
        let mut depth = 0;
        let mut end = out.len();
        for (i, c) in out[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        let blanked: String = out[at..end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        out.replace_range(at..end, &blanked);
        from = end;
    }
    out
}

/// The files of folder module `folder` that use one listed after them in `order`: `(line, user, used,
/// the path's line)` for each path to a sibling, through `crate::<folder>::` anywhere in the module's
/// files or `super::` in its own file `shared/<folder>/<module>.rs`.
fn upward_uses_in_folder(
    text: &str,
    own_file: bool,
    folder: &str,
    module: &str,
    order: &[String],
) -> Vec<(usize, String)> {
    let rank = |m: &str| order.iter().position(|o| o == m);
    let Some(own) = rank(module) else {
        return Vec::new();
    };
    let code = without_test_modules(&code_only(text));
    let mut paths = paths_under(&code, &format!("crate::{folder}::"));
    if own_file {
        paths.extend(paths_under(&code, "super::"));
    }
    paths
        .into_iter()
        .filter(|(_, used)| rank(used).is_some_and(|r| r > own))
        .map(|(at, used)| (code[..at].matches('\n').count() + 1, used))
        .collect()
}

#[test]
fn no_file_of_a_folder_module_uses_one_listed_after_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let shared = root.join("shared");
    let mut violations = BTreeMap::new();
    let mut folders: Vec<PathBuf> = std::fs::read_dir(&shared)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("mod.rs").is_file())
        .collect();
    folders.sort();
    assert!(
        folders.iter().any(|f| f.ends_with("run")),
        "shared/run/mod.rs not found"
    );
    for folder in folders {
        let name = folder.file_name().unwrap().to_str().unwrap().to_string();
        let mod_rs = std::fs::read_to_string(folder.join("mod.rs")).unwrap();
        let mut declared = declared_modules(&mod_rs);
        if declared.len() < 2 {
            continue;
        }
        let order = layer_order(&mod_rs);
        let mut listed = order.clone();
        declared.sort();
        listed.sort();
        assert_eq!(
            listed, declared,
            "shared/{name}/mod.rs: the layer list (`//! N. [`file`]`) must name every file of the folder once"
        );
        for module in &order {
            let own_file = folder.join(format!("{module}.rs"));
            for file in module_files(&folder, module) {
                let text = std::fs::read_to_string(&file).unwrap();
                let shown = file.strip_prefix(root).unwrap_or(&file).display().to_string();
                let own = file == own_file;
                for (line, used) in upward_uses_in_folder(&text, own, &name, module, &order) {
                    let source = text.lines().nth(line - 1).unwrap_or("").trim();
                    violations.insert(
                        (shown.clone(), line),
                        format!("{shown}:{line}: `{name}::{module}` uses `{name}::{used}`, a layer above it: {source}"),
                    );
                }
            }
        }
    }
    let report: Vec<String> = violations.into_values().collect();
    assert!(
        report.is_empty(),
        "upward uses between the files of a folder of shared/ (order in its mod.rs):\n{}",
        report.join("\n")
    );
}

#[test]
fn no_module_of_shared_uses_one_listed_after_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let shared = root.join("shared");
    let lib_rs = std::fs::read_to_string(shared.join("lib.rs")).unwrap();
    let order = layer_order(&lib_rs);
    let mut declared = declared_modules(&lib_rs);
    let mut listed = order.clone();
    declared.sort();
    listed.sort();
    assert_eq!(
        listed, declared,
        "shared/lib.rs: the layer list (`//! N. [`name`]`) must name every top-level module once"
    );

    let mut violations = BTreeMap::new();
    for module in &order {
        let files = module_files(&shared, module);
        assert!(!files.is_empty(), "no source files for module `{module}`");
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let shown = file.strip_prefix(root).unwrap_or(&file).display().to_string();
            for (line, used, source) in upward_uses(&text, module, &order) {
                violations.insert(
                    (shown.clone(), line),
                    format!("{shown}:{line}: `{module}` uses `{used}`, a layer above it: {source}"),
                );
            }
        }
    }
    let report: Vec<String> = violations.into_values().collect();
    assert!(
        report.is_empty(),
        "upward uses between the layers of shared/ (order in shared/lib.rs):\n{}",
        report.join("\n")
    );
}

#[test]
fn the_checker_finds_upward_paths_and_ignores_comments_and_strings() {
    let order: Vec<String> = ["error", "device", "run", "book"].map(String::from).to_vec();
    let text = r##"//! Mentions [`crate::book`] in a comment.
use crate::error::Result;
use crate::{device::gpu, run::results};
fn f() -> &'static str {
    let _c = '"';
    let _ = crate::book::regenerate_all; // and crate::book here is a comment
    /* crate::run in a block comment */
    "crate::book in a string"
}
const RAW: &str = r#"crate::run in a raw string"#;
use crate::{
    error,
    book::svg::{FONT, INK},
};
"##;
    let found: Vec<(usize, String)> = upward_uses(text, "device", &order)
        .into_iter()
        .map(|(line, used, _)| (line, used))
        .collect();
    assert_eq!(
        found,
        [
            (3, "run".to_string()),
            (6, "book".to_string()),
            (11, "book".to_string())
        ]
    );
    assert!(upward_uses(text, "book", &order).is_empty());
    assert_eq!(
        layer_order("//! 1. [`error`]: errors\n//! 2. `private`: one\n//! 10. [`cli`]: the end\n//! - [`x`]\n"),
        ["error", "private", "cli"]
    );
}

#[test]
fn the_folder_checker_reads_sibling_paths_and_leaves_out_unit_tests() {
    let order: Vec<String> = ["registry", "results", "session"].map(String::from).to_vec();
    let text = r#"use crate::run::registry::Step;
use crate::run::{registry, session::Session};
use super::results::StepRecord;
fn f() { let _ = "crate::run::session"; crate::run::session::go(); }
#[cfg(test)]
pub(crate) mod tests {
    use crate::run::session::Session;
}
"#;
    let found = upward_uses_in_folder(text, true, "run", "results", &order);
    assert_eq!(found, [(2, "session".to_string()), (4, "session".to_string())]);
    // `super::` names a sibling only in the module's own file, not in its subfolder's files.
    let sub = "use super::session::x;\n";
    assert_eq!(upward_uses_in_folder(sub, true, "run", "registry", &order).len(), 1);
    assert!(upward_uses_in_folder(sub, false, "run", "registry", &order).is_empty());
    assert!(upward_uses_in_folder(text, true, "run", "session", &order).is_empty());
}
