//! The built book's images and local file links all resolve: an `<img src>` or a link to a figure or
//! a trace that points at nothing would show as a broken picture or a dead link. So do its links
//! between pages and their `#anchors`: each names an `id` of the page it points at (a heading's id,
//! as mdBook makes it from the heading's text, or an explicit one), which a moved section breaks.

use gemm_ladder::book;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The book, built once for every test of this file: the folder it is in, and its pages.
fn built() -> &'static Path {
    static BUILT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    let (_, out) = BUILT.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let book_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("book");
        let out = book::build(&book_dir, Some(tmp.path())).unwrap();
        (tmp, out)
    });
    out
}

fn html_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|e| e == "html") {
                found.push(p);
            }
        }
    }
    found.sort();
    found
}

/// Every value of `attribute="…"` in `html`.
fn attribute_values<'a>(html: &'a str, attribute: &str) -> Vec<&'a str> {
    let key = format!("{attribute}=\"");
    html.match_indices(&key)
        .filter_map(|(at, _)| {
            let rest = &html[at + key.len()..];
            rest.find('"').map(|end| &rest[..end])
        })
        .collect()
}

#[test]
fn every_image_and_local_figure_or_trace_link_resolves() {
    let out = built();
    let mut checked = 0;
    for page in html_files(out) {
        let html = std::fs::read_to_string(&page).unwrap();
        let images = attribute_values(&html, "src").into_iter().filter(|s| {
            let s = s.to_ascii_lowercase();
            s.ends_with(".svg") || s.ends_with(".png") || s.ends_with(".jpg")
        });
        let files = attribute_values(&html, "href")
            .into_iter()
            .filter(|h| h.ends_with(".svg") || h.ends_with(".json"));
        for link in images.chain(files) {
            if link.contains("://") || link.starts_with('#') || link.starts_with("data:") {
                continue;
            }
            let target = page.parent().unwrap().join(link.split('#').next().unwrap());
            assert!(
                target.is_file(),
                "{}: {link} points at nothing ({})",
                page.display(),
                target.display()
            );
            checked += 1;
        }
    }
    assert!(
        checked > 0,
        "no image in the whole book: the ladder figure at least should be there"
    );
}

/// Every `id` of a page: heading ids and explicit ones.
fn ids(html: &str) -> HashSet<String> {
    let mut found: HashSet<String> = attribute_values(html, "id").into_iter().map(String::from).collect();
    found.extend(attribute_values(html, "name").into_iter().map(String::from));
    found
}

/// A link as its text says it: `&amp;` back to `&`, `%20` and the like decoded.
fn unescaped(link: &str) -> String {
    let link = link.replace("&amp;", "&");
    let bytes = link.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match (
            bytes[i],
            link.get(i + 1..i + 3).and_then(|h| u8::from_str_radix(h, 16).ok()),
        ) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn every_link_between_pages_and_every_anchor_resolves() {
    let out = built();
    let pages: HashMap<PathBuf, String> = html_files(out)
        .into_iter()
        .map(|p| {
            let html = std::fs::read_to_string(&p).unwrap();
            (p, html)
        })
        .collect();
    let ids: HashMap<&PathBuf, HashSet<String>> = pages.iter().map(|(p, html)| (p, ids(html))).collect();
    let mut broken = Vec::new();
    let mut anchors = 0;
    for (page, html) in &pages {
        for link in attribute_values(html, "href") {
            let link = unescaped(link);
            if link.contains("://") || link.starts_with("mailto:") || link.starts_with("javascript:") {
                continue;
            }
            let (file, anchor) = link.split_once('#').unwrap_or((link.as_str(), ""));
            let target = match file {
                "" => page.clone(),
                file => page.parent().unwrap().join(file.split('?').next().unwrap()),
            };
            let target = normalized(&target);
            if !file.is_empty() && !target.exists() {
                broken.push(format!("{}: {link} points at no file", name(out, page)));
                continue;
            }
            if anchor.is_empty() || target.extension().is_none_or(|e| e != "html") {
                continue;
            }
            anchors += 1;
            if !ids.get(&target).is_some_and(|found| found.contains(anchor)) {
                broken.push(format!(
                    "{}: {link}: {} has no id \"{anchor}\" (a heading of that text, or an explicit id)",
                    name(out, page),
                    name(out, &target)
                ));
            }
        }
    }
    broken.sort();
    assert!(broken.is_empty(), "broken links in the book:\n{}", broken.join("\n"));
    assert!(anchors > 0, "no #anchor in the whole book: is the check looking?");
}

/// `path` without `.` and `..` parts (the target of a relative link may not exist, so no
/// `canonicalize`).
fn normalized(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// A page's path in the built book, for messages.
fn name(out: &Path, page: &Path) -> String {
    page.strip_prefix(out).unwrap_or(page).display().to_string()
}
