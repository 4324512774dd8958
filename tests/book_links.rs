//! The built book's images and local file links all resolve: an `<img src>` or a link to a figure or
//! a trace that points at nothing would show as a broken picture or a dead link.

use gemm_ladder::book;
use std::path::{Path, PathBuf};

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
    let tmp = tempfile::tempdir().unwrap();
    let book_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("book");
    let out = book::build(&book_dir, Some(tmp.path())).unwrap();
    let mut checked = 0;
    for page in html_files(&out) {
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
