//! The text of the kernels the steps run (`steps/**/*.cu`) and of their headers (`shared/cuda/*.cuh`).
//!
//! Where the source tree the binary was built from is still there, a kernel is read from it, so an
//! edited kernel runs at once, with no Rust rebuild. Elsewhere (a binary carried to another machine)
//! it is the copy the binary embeds: every `main` calls [`embed_kernel_sources!`](crate::embed_kernel_sources),
//! and cargo re-embeds a kernel whenever it changes. Each text is read once per process, so what is
//! hashed for a record is what was compiled. A text that differs from the commit the binary names
//! makes the run a dirty build ([`crate::revision`]): it records nothing unless `--allow-dirty`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

/// Every kernel source's path and text, as this binary embeds them (set once, by `main`).
static EMBEDDED: OnceLock<&'static [(&'static str, &'static str)]> = OnceLock::new();

/// The texts read so far, by path: one text per path for the whole process.
static READ: Mutex<Option<HashMap<String, &'static str>>> = Mutex::new(None);

/// Each kernel source's FNV-1a 64 hash as committed in the revision the binary names (build.rs);
/// `None` where the binary was built outside a git repository.
const COMMITTED: Option<&[(&str, u64)]> = include!(concat!(env!("OUT_DIR"), "/committed_kernel_sources.rs"));

/// Embeds every kernel source in the calling binary and hands them to [`text`]: the first line of
/// every `main`. Cargo re-embeds a kernel when it changes, which recompiles only the binary crates.
#[macro_export]
macro_rules! embed_kernel_sources {
    () => {
        $crate::device::sources::embed(include!(concat!(env!("OUT_DIR"), "/embedded_kernel_sources.rs")))
    };
}

/// Hands the binary's embedded kernel sources to [`text`] (through [`embed_kernel_sources!`](crate::embed_kernel_sources)).
pub fn embed(table: &'static [(&'static str, &'static str)]) {
    let _ = EMBEDDED.set(table);
}

/// Names another folder to read the kernel sources from (a copy of the tree), or `none` to run the
/// embedded copies, as a binary carried elsewhere does.
pub const TREE_ENV: &str = "GEMM_LADDER_SOURCE_TREE";

/// The folder the kernel sources are read from: the source tree the binary was built from, if it is
/// still there (or the one [`TREE_ENV`] names).
pub fn tree() -> Option<&'static Path> {
    static TREE: OnceLock<Option<std::path::PathBuf>> = OnceLock::new();
    TREE.get_or_init(|| match std::env::var_os(TREE_ENV) {
        Some(dir) if dir == "none" => None,
        Some(dir) => Some(dir.into()),
        None => {
            let root = Path::new(env!("CARGO_MANIFEST_DIR"));
            root.join("Cargo.toml").is_file().then(|| root.to_path_buf())
        }
    })
    .as_deref()
}

/// The text of the kernel source at `path` (from the crate root): the file in the source tree, where
/// the tree is there; else the embedded copy; else empty, which NVRTC refuses with the path in its
/// message and which differs from any committed text.
pub fn text(path: &str) -> &'static str {
    let mut read = READ.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let read = read.get_or_insert_with(HashMap::new);
    if let Some(text) = read.get(path) {
        return text;
    }
    let on_disk = tree().and_then(|root| std::fs::read_to_string(root.join(path)).ok());
    let text: &'static str = match on_disk {
        Some(text) => text.leak(),
        None => EMBEDDED
            .get()
            .and_then(|table| table.iter().find(|(p, _)| *p == path))
            .map_or("", |(_, text)| *text),
    };
    read.insert(path.to_string(), text);
    text
}

/// FNV-1a, 64 bits, as build.rs hashes the committed texts.
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Whether the text at `path` this process runs is the committed one (`None`: nothing to compare
/// with, the binary was built outside a git repository).
pub fn matches_commit(path: &str) -> Option<bool> {
    let committed = COMMITTED?;
    let hash = committed.iter().find(|(p, _)| *p == path).map(|(_, h)| *h);
    Some(hash == Some(fnv1a64(text(path).as_bytes())))
}

/// The kernel sources this binary can run whose text here differs from the commit it names: edited
/// or new files in the tree, or an embedded copy from an edit that was never committed.
pub fn differing_from_commit() -> Vec<String> {
    let mut paths: Vec<&str> = COMMITTED.unwrap_or_default().iter().map(|(p, _)| *p).collect();
    for (path, _) in EMBEDDED.get().copied().unwrap_or_default() {
        if !paths.contains(path) {
            paths.push(path);
        }
    }
    paths.sort();
    paths
        .into_iter()
        .filter(|p| matches_commit(p) == Some(false))
        .map(String::from)
        .collect()
}

/// Says once, on standard error, that `path` (a kernel about to be compiled), or a header, is
/// compiled as edited in the source tree: the student sees that the edit was picked up without a
/// rebuild, and why the run records nothing. Files that are no kernel source of the crate (an
/// exercise's) are not compared.
pub fn note_if_edited(path: &str) {
    static NOTED: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let edited: Vec<String> = differing_from_commit()
        .into_iter()
        .filter(|p| p == path || p.starts_with("shared/cuda/"))
        .collect();
    let mut noted = NOTED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let new: Vec<String> = edited.into_iter().filter(|p| !noted.contains(p)).collect();
    if !new.is_empty() {
        eprintln!(
            "note: compiling {} as edited in the source tree, not as committed in {}: a dirty build \
             (it records nothing unless --allow-dirty)",
            new.join(", "),
            crate::GIT_REVISION.trim_end_matches("-dirty")
        );
        noted.extend(new);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_fnv1a_64() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn in_the_crate_s_tree_a_header_is_read_from_disk() {
        if std::env::var_os(TREE_ENV).is_some() {
            return;
        }
        let on_disk = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/shared/cuda/common.cuh")).unwrap();
        assert_eq!(text("shared/cuda/common.cuh"), on_disk);
        assert_eq!(text("shared/cuda/no_such.cuh"), "");
    }
}
