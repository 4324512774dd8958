//! Anchored includes, dedented. mdBook's `{{#include file.cu:anchor}}` copies the anchor's lines as
//! they are, so a region cut from inside a function keeps its eight or twelve spaces of indentation
//! and the listing starts far to the right. Before mdBook's own `links` pass, the book build replaces
//! every anchored `{{#include}}` with the region's lines (the marker lines of any anchor dropped, as
//! mdBook drops them) less the indentation they all share. Whole-file and line-range includes are
//! left to mdBook.
//!
//! The timeline stamps of the warp-specialised kernels (`TIMELINE_STAMP(...)`, `TIMELINE_INIT()`,
//! shared/cuda/timeline.cuh) sit at the ends of the lines whose events they mark and expand to nothing
//! in the timed build; a listing shows the kernel without them (the timeline sections say where they
//! are).

use std::path::Path;

/// Whether `line` holds `marker` followed by the anchor `name` (and nothing that continues a name).
fn marks(line: &str, marker: &str, name: &str) -> bool {
    line.match_indices(marker).any(|(at, _)| {
        line[at + marker.len()..]
            .trim_start()
            .strip_prefix(name)
            .is_some_and(|after| !after.starts_with(|c: char| c.is_alphanumeric() || c == '_' || c == '-'))
    })
}

/// The lines of anchor `name` in `text`, without marker lines, or `None` when it is not there.
pub fn anchored<'a>(text: &'a str, name: &str) -> Option<Vec<&'a str>> {
    let mut inside = false;
    let mut lines = Vec::new();
    for line in text.lines() {
        if inside && marks(line, "ANCHOR_END:", name) {
            return Some(lines);
        }
        if inside {
            if !line.contains("ANCHOR:") && !line.contains("ANCHOR_END:") {
                lines.push(line);
            }
        } else if marks(line, "ANCHOR:", name) {
            inside = true;
        }
    }
    None
}

/// `line` without the timeline stamps at its end (see the module comment).
pub fn without_stamps(line: &str) -> String {
    let mut out = line.to_string();
    for macro_name in ["TIMELINE_STAMP(", "TIMELINE_INIT("] {
        while let Some(at) = out.find(macro_name) {
            let Some(close) = out[at..].find(");") else { break };
            out.replace_range(at..at + close + 2, "");
        }
    }
    out.trim_end().to_string()
}

/// `lines` less the leading whitespace every non-blank one of them has.
pub fn dedent(lines: &[&str]) -> String {
    let indent = lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out = String::new();
    for line in lines {
        out.push_str(line.get(indent..).unwrap_or("").trim_end());
        out.push('\n');
    }
    out.trim_end_matches('\n').to_string()
}

/// `text` (a chapter in folder `base`) with every anchored include replaced by its dedented lines.
/// An include that cannot be resolved is left for mdBook (the build checks includes beforehand).
pub fn dedent_anchor_includes(text: &str, base: &Path) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{#include ") {
        let Some(close) = rest[start..].find("}}") else { break };
        let end = start + close + 2;
        let escaped = rest[..start].ends_with('\\');
        let target = rest[start + "{{#include ".len()..start + close].trim();
        let replacement = target.split_once(':').and_then(|(file, anchor)| {
            let anchored_name = !anchor.is_empty() && !anchor.starts_with(|c: char| c.is_ascii_digit() || c == ':');
            if escaped || !anchored_name {
                return None;
            }
            let source = std::fs::read_to_string(base.join(file)).ok()?;
            anchored(&source, anchor).map(|lines| {
                let clean: Vec<String> = lines.iter().map(|l| without_stamps(l)).collect();
                dedent(&clean.iter().map(String::as_str).collect::<Vec<_>>())
            })
        });
        out.push_str(&rest[..start]);
        match replacement {
            Some(lines) => out.push_str(&lines),
            None => out.push_str(&rest[start..end]),
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "int f() {\n    // ANCHOR: body\n    if (x) {\n        y();\n        // ANCHOR: inner\n        z();\n        // ANCHOR_END: inner\n    }\n\n    // ANCHOR_END: body\n}\n// ANCHOR: bodyguard\nw();\n// ANCHOR_END: bodyguard\n";

    #[test]
    fn timeline_stamps_leave_the_listings() {
        assert_eq!(
            without_stamps("    origin(index, m0, n0); TIMELINE_STAMP(TL_TILE_START);"),
            "    origin(index, m0, n0);"
        );
        assert_eq!(
            without_stamps("const int tid = threadIdx.x; TIMELINE_INIT();"),
            "const int tid = threadIdx.x;"
        );
        assert_eq!(without_stamps("a(); // no stamp"), "a(); // no stamp");
    }

    #[test]
    fn anchored_regions_are_cut_and_dedented() {
        let lines = anchored(SOURCE, "body").unwrap();
        assert_eq!(lines, ["    if (x) {", "        y();", "        z();", "    }", ""]);
        assert_eq!(dedent(&lines), "if (x) {\n    y();\n    z();\n}");
        assert_eq!(anchored(SOURCE, "inner").unwrap(), ["        z();"]);
        assert_eq!(anchored(SOURCE, "bodyguard").unwrap(), ["w();"]);
        assert!(anchored(SOURCE, "missing").is_none());
    }

    #[test]
    fn chapters_get_dedented_includes_and_keep_the_others() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("k.cu"), SOURCE).unwrap();
        let chapter = "```cuda\n{{#include k.cu:inner}}\n```\n{{#include k.cu}} {{#include k.cu:2:3}} \\{{#include k.cu:body}} {{#include nope.cu:x}}";
        let out = dedent_anchor_includes(chapter, dir.path());
        assert_eq!(
            out,
            "```cuda\nz();\n```\n{{#include k.cu}} {{#include k.cu:2:3}} \\{{#include k.cu:body}} {{#include nope.cu:x}}"
        );
    }

    /// Every anchored include of the real book resolves to lines of which at least one starts at the
    /// left margin.
    #[test]
    fn the_book_s_listings_start_at_the_left_margin() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("book/src");
        for entry in std::fs::read_dir(&src).unwrap().flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "md") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let out = dedent_anchor_includes(&text, &src);
            let left = out.lines().find(|l| l.starts_with("{{#include ") && l.contains(".cu:"));
            assert!(left.is_none(), "{}: {left:?} was not expanded", path.display());
        }
    }
}
