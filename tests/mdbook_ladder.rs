//! `mdbook-ladder`, the `{{#ladder-…}}` pass as an mdBook preprocessor: it speaks mdBook's protocol
//! (the book as JSON on standard input, the expanded book on standard output, one error line and a
//! non-zero status when a directive is wrong), and a plain mdBook build through it renders the same
//! book as the crate's own build. No GPU needed.

use gemm_ladder::book;
use mdbook_driver::MDBook;
use mdbook_preprocessor::PreprocessorContext;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const MDBOOK_LADDER: &str = env!("CARGO_BIN_EXE_mdbook-ladder");

fn book_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("book")
}

/// Runs `mdbook-ladder` with `input` on its standard input.
fn run(args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(MDBOOK_LADDER)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

/// A one-chapter book in `root`, as mdBook hands it to a preprocessor: `[context, book]` in JSON.
fn protocol_input(root: &Path, chapter: &str) -> Vec<u8> {
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("book.toml"), "[book]\ntitle = \"t\"\n").unwrap();
    std::fs::write(root.join("src/SUMMARY.md"), "# Summary\n\n[One](one.md)\n").unwrap();
    std::fs::write(
        root.join("k.cu"),
        "void f() {\n    // ANCHOR: body\n    int x;\n    // ANCHOR_END: body\n}\n",
    )
    .unwrap();
    std::fs::write(root.join("src/one.md"), chapter).unwrap();
    let loaded = MDBook::load(root).unwrap();
    let ctx = PreprocessorContext::new(root.to_path_buf(), loaded.config.clone(), "html".into());
    serde_json::to_vec(&(&ctx, &loaded.book)).unwrap()
}

fn chapter_text(book: &mdbook_preprocessor::book::Book) -> String {
    book.chapters().map(|c| c.content.clone()).collect()
}

#[test]
fn speaks_the_preprocessor_protocol() {
    // mdBook asks first whether the renderer is supported: yes, with status 0 and nothing else.
    let supports = run(&["supports", "html"], b"");
    assert!(supports.status.success() && supports.stdout.is_empty(), "{supports:?}");

    // A book in, the same book out with the directives expanded and the anchored include cut,
    // dedented, for mdBook's `links` pass.
    let dir = tempfile::tempdir().unwrap();
    let input = protocol_input(
        dir.path(),
        "# One\n\n{{#ladder-table}}\n\n```cpp\n{{#include ../k.cu:body}}\n```\n\n\\{{#ladder-figure}}\n",
    );
    let out = run(&[], &input);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let expanded: mdbook_preprocessor::book::Book = serde_json::from_slice(&out.stdout).unwrap();
    let text = chapter_text(&expanded);
    assert!(text.contains("Nothing has been recorded on a GPU yet"), "{text}");
    assert!(text.contains("```cpp\nint x;\n```"), "{text}");
    assert!(
        text.contains("\\{{#ladder-figure}}") && !text.contains("{{#ladder-table"),
        "{text}"
    );

    // A wrong directive: nothing on standard output, one error line naming the chapter, status 5.
    let dir = tempfile::tempdir().unwrap();
    let out = run(&[], &protocol_input(dir.path(), "{{#ladder-tabel}}\n"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(out.stdout.is_empty());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("error: ") && stderr.contains("one.md") && stderr.contains("unknown directive"),
        "{stderr}"
    );

    // Not mdBook's JSON (another mdBook's, or none): one line that names the crate's own build.
    let out = run(&[], b"{\"not\": \"a book\"}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("cannot read the book") && stderr.contains("ladder -- --book-only"),
        "{stderr}"
    );
}

/// Every `.html` file under `dir`, by its path below `dir`, with its text.
fn html_pages(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "html") {
                let text = std::fs::read_to_string(&path).unwrap();
                found.push((path.strip_prefix(dir).unwrap().to_path_buf(), text));
            }
        }
    }
    found.sort();
    found
}

/// `book/book.toml` registers the pass for a plain `mdbook build book`, and mdBook's own build
/// through that command (the binary in place of `cargo run`) writes the same pages as the crate's
/// in-process build, which has the search index a plain mdBook build has.
#[test]
fn plain_mdbook_renders_the_same_book_as_the_crates_build() {
    let config = mdbook_driver::config::Config::from_disk(book_dir().join("book.toml")).unwrap();
    let key = |field: &str| format!("preprocessor.{}.{field}", book::PASS_NAME);
    let command: String = config
        .get(&key("command"))
        .unwrap()
        .expect("book.toml registers the pass");
    assert!(command.contains("--bin mdbook-ladder"), "{command}");
    let before: Vec<String> = config.get(&key("before")).unwrap().unwrap_or_default();
    assert_eq!(before, ["links"]);

    let out = tempfile::tempdir().unwrap();
    let mut plain = config.clone();
    plain.set(key("command"), MDBOOK_LADDER).unwrap();
    plain.build.build_dir = out.path().join("plain");
    let plain_book = MDBook::load_with_config(book_dir(), plain).unwrap();
    plain_book.build().unwrap_or_else(|e| panic!("{e:#}"));
    let crate_build = book::build(&book_dir(), Some(&out.path().join("crate"))).unwrap();

    let plain_pages = html_pages(&plain_book.build_dir_for("html"));
    let crate_pages = html_pages(&crate_build);
    assert!(plain_pages.len() > 10, "{}", plain_pages.len());
    assert_eq!(
        plain_pages.iter().map(|(p, _)| p).collect::<Vec<_>>(),
        crate_pages.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
    for ((page, plain_text), (_, crate_text)) in plain_pages.iter().zip(&crate_pages) {
        assert!(
            !plain_text.contains("{{#ladder"),
            "{}: a directive is left",
            page.display()
        );
        assert!(plain_text == crate_text, "{}: the two builds differ", page.display());
    }
    // mdBook names it `searchindex-<hash>.js`.
    let search_index = std::fs::read_dir(&crate_build)
        .unwrap()
        .any(|e| e.unwrap().file_name().to_string_lossy().starts_with("searchindex"));
    assert!(search_index, "the crate's build has no search index");
}
