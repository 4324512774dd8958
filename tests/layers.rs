//! The layers of `shared/` read top to bottom: a top-level module uses only the modules listed before
//! it in `shared/lib.rs`'s "Layers, bottom to top". This test reads that list, then every source file
//! of each module (the files `#[path]` pulls in too, such as `steps/*/step.rs` under `run::steps`), and
//! fails, naming file and line, on a `crate::` path from a module to one listed after it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The layer order as `shared/lib.rs` states it: the module of each `//! N. [`name`]…` line, in order.
fn layer_order(lib_rs: &str) -> Vec<String> {
    lib_rs
        .lines()
        .filter_map(|line| {
            let item = line.strip_prefix("//! ")?;
            let (number, rest) = item.split_once(". [`")?;
            number.parse::<u32>().ok()?;
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
    let mut found = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        if ident_char(code[..at].chars().last().as_ref()) {
            continue; // `other_crate::…`
        }
        let rest = &code[at + "crate::".len()..];
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
        layer_order("//! 1. [`error`]: errors\n//! 10. [`cli`]: the end\n//! - [`x`]\n"),
        ["error", "cli"]
    );
}
