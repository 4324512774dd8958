//! Records the git revision in the binary, so the results it writes say which code produced them.
//!
//! The revision is read without writing to the repository: `git describe --dirty` refreshes
//! `.git/index` as it runs, and the index is one of this script's inputs, so every build would make
//! the next one run the script, and rebuild the crate, again. `tests/revision.rs` runs these functions.
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| ".".into()));
    println!("cargo:rustc-env=GEMM_LADDER_GIT_REVISION={}", revision(&root));
    // `-dirty` must describe the code compiled in, so the script also reruns when a source changes:
    // editing a kernel touches neither HEAD nor the index, and a binary built after such an edit
    // would otherwise call itself clean (`cli` refuses to record from a dirty build). The results
    // and the book under book/ are left out on purpose: recording writes them.
    for source in ["shared", "steps", "Cargo.toml", "Cargo.lock", "build.rs"] {
        println!("cargo:rerun-if-changed={source}");
    }
    for input in git_inputs(&root) {
        println!("cargo:rerun-if-changed={}", input.display());
    }
}

/// `git ARGS` in `dir`, allowed no optional write (no index refresh); its trimmed output, if it ran.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("--no-optional-locks")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The commit checked out in `dir` (`git describe --always --abbrev=10`), with `-dirty` when a
/// tracked file differs from it (staged or not; untracked files do not count, as for `describe
/// --dirty`); `unknown` outside a git repository. Leaves `.git/index` as it found it.
pub fn revision(dir: &Path) -> String {
    let Some(commit) = git(dir, &["describe", "--always", "--abbrev=10"]) else {
        return "unknown".to_string();
    };
    // `status` compares contents where the index's file stamps are stale, so it is right without
    // refreshing the index on disk (which `--no-optional-locks` forbids it).
    let changed = git(dir, &["status", "--porcelain", "--untracked-files=no"]);
    match changed {
        Some(list) if list.is_empty() => commit,
        _ => format!("{commit}-dirty"),
    }
}

/// The files git changes when the commit checked out in `dir`, or the tracked state of its tree,
/// does: HEAD, the index, HEAD's log (every commit, checkout or reset here appends to it), the
/// branch's own ref, and packed-refs, wherever they are (in `.git/`, or for a worktree, in its own
/// git folder and the main repository's). Not the whole refs/ folder, which a commit on any other
/// branch (from another worktree) changes. Only files that exist: a missing one would make cargo
/// run the script on every build.
pub fn git_inputs(dir: &Path) -> Vec<PathBuf> {
    let mut names = vec![
        "HEAD".to_string(),
        "index".into(),
        "logs/HEAD".into(),
        "packed-refs".into(),
    ];
    // Detached, HEAD holds the commit itself.
    if let Some(branch) = git(dir, &["symbolic-ref", "--quiet", "HEAD"]) {
        names.push(branch);
    }
    let mut args = vec!["rev-parse".to_string()];
    for name in names {
        args.extend(["--git-path".to_string(), name]);
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let Some(paths) = git(dir, &args) else {
        return Vec::new();
    };
    paths.lines().map(|p| dir.join(p)).filter(|p| p.is_file()).collect()
}
