//! build.rs's revision logic, run on throw-away repositories: it tells a clean tree from a dirty one
//! by the compiled-in files alone (the kernels are compared at run time), without writing
//! `.git/index`; the index is no input (`git status` rewrites it), and every git file it asks cargo to
//! watch exists, in a repository and in a worktree (a missing one would make cargo rebuild on every
//! command). It hashes the committed kernels as the binaries hash what they run. The tests need git
//! and are reported as ignored without it.

mod common;

#[allow(dead_code)]
#[path = "../build.rs"]
mod build_script;

use common::{Ran, Skip};
use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .expect("running git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn have_git() -> Ran {
    match Command::new("git").arg("--version").output() {
        Ok(out) if out.status.success() => Ok(()),
        _ => Err(Skip("needs git, not found here".into())),
    }
}

/// A repository with one commit of a Rust file (`shared/lib.rs`), a kernel
/// (`steps/step01_naive/kernel.cu`) and a header (`shared/cuda/common.cuh`).
fn repository() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    git(tmp.path(), &["init", "--quiet"]);
    for (file, text) in [
        ("shared/lib.rs", "// one\n"),
        ("steps/step01_naive/kernel.cu", "// kernel\n"),
        ("shared/cuda/common.cuh", "// header\n"),
    ] {
        std::fs::create_dir_all(tmp.path().join(file).parent().unwrap()).unwrap();
        std::fs::write(tmp.path().join(file), text).unwrap();
        git(tmp.path(), &["add", file]);
    }
    git(tmp.path(), &["commit", "--quiet", "-m", "one"]);
    tmp
}

/// The index's bytes and modification time.
fn index(dir: &Path) -> (Vec<u8>, std::time::SystemTime) {
    let path = dir.join(".git/index");
    let bytes = std::fs::read(&path).unwrap();
    (bytes, std::fs::metadata(&path).unwrap().modified().unwrap())
}

/// Sets `file`'s modification time `seconds` into the future, leaving its content alone: the index's
/// stamp for it is then stale, which a refreshing command (`git describe --dirty`) rewrites.
fn restamp(file: &Path, seconds: u64) {
    let f = std::fs::File::options().write(true).open(file).unwrap();
    f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(seconds))
        .unwrap();
}

fn the_revision_tells_clean_from_dirty_without_writing_the_index() -> Ran {
    have_git()?;
    let repo = repository();
    let dir = repo.path();
    let kernel = dir.join("shared/lib.rs");
    restamp(&kernel, 5);
    let before = index(dir);

    let clean = build_script::revision(dir);
    assert!(
        clean.len() == 10 && clean.chars().all(|c| c.is_ascii_hexdigit()),
        "{clean}"
    );
    assert_eq!(index(dir), before, "reading a clean revision wrote .git/index");

    std::fs::write(&kernel, "// two\n").unwrap();
    restamp(&kernel, 10);
    assert_eq!(build_script::revision(dir), format!("{clean}-dirty"));
    assert_eq!(index(dir), before, "reading a dirty revision wrote .git/index");

    // Untracked files do not make a tree dirty (as for `git describe --dirty`); a staged change does.
    git(dir, &["checkout", "--quiet", "shared/lib.rs"]);
    std::fs::write(dir.join("shared/notes.txt"), "mine\n").unwrap();
    assert_eq!(build_script::revision(dir), clean);
    std::fs::write(&kernel, "// three\n").unwrap();
    git(dir, &["add", "shared/lib.rs"]);
    assert_eq!(build_script::revision(dir), format!("{clean}-dirty"));
    git(dir, &["checkout", "--quiet", "HEAD", "shared/lib.rs"]);

    // Kernels and headers are compared at run time: the build's revision leaves them out, and
    // outside the compiled-in folders nothing counts.
    std::fs::write(dir.join("steps/step01_naive/kernel.cu"), "// edited\n").unwrap();
    std::fs::write(dir.join("shared/cuda/common.cuh"), "// edited\n").unwrap();
    std::fs::write(dir.join("README.md"), "# edited\n").unwrap();
    assert_eq!(build_script::revision(dir), clean);

    let outside = tempfile::tempdir().unwrap();
    assert_eq!(build_script::revision(outside.path()), "unknown");
    assert!(build_script::git_inputs(outside.path()).is_empty());
    Ok(())
}

/// Each watched file with its modification time.
fn stamps(inputs: &[std::path::PathBuf]) -> Vec<(std::path::PathBuf, std::time::SystemTime)> {
    inputs
        .iter()
        .map(|p| (p.clone(), std::fs::metadata(p).unwrap().modified().unwrap()))
        .collect()
}

fn the_git_files_cargo_watches_exist_in_a_repository_and_a_worktree() -> Ran {
    have_git()?;
    let repo = repository();
    let inputs = build_script::git_inputs(repo.path());
    let git_dir = repo.path().join(".git");
    let names: Vec<String> = inputs
        .iter()
        .map(|p| p.strip_prefix(&git_dir).unwrap().display().to_string())
        .collect();
    // Not the index: `git status` rewrites it, and a rebuild after every `git status` is what the
    // index as an input cost.
    assert_eq!(names[..2], ["HEAD", "logs/HEAD"], "{inputs:?}");
    assert!(names[2].starts_with("refs/heads/"), "{inputs:?}");
    assert!(!names.iter().any(|n| n == "index"), "{inputs:?}");

    let tree = tempfile::tempdir().unwrap();
    let worktree = tree.path().join("wt");
    git(
        repo.path(),
        &["worktree", "add", "--quiet", "-b", "wip", worktree.to_str().unwrap()],
    );
    // A worktree's `.git` is a file: `.git/HEAD` does not exist there.
    assert!(worktree.join(".git").is_file());
    let inputs = build_script::git_inputs(&worktree);
    assert_eq!(inputs.len(), 3, "{inputs:?}");
    assert!(inputs[2].ends_with("refs/heads/wip"), "{inputs:?}");
    for input in &inputs {
        assert!(input.is_file(), "{}", input.display());
    }
    assert!(!build_script::revision(&worktree).ends_with("-dirty"));

    // A commit on another branch, from the main repository, leaves the worktree's inputs alone; a
    // commit in the worktree changes them.
    let before = stamps(&inputs);
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(repo.path().join("shared/lib.rs"), "// elsewhere\n").unwrap();
    git(repo.path(), &["commit", "--quiet", "-am", "elsewhere"]);
    assert_eq!(stamps(&build_script::git_inputs(&worktree)), before);
    std::fs::write(worktree.join("shared/lib.rs"), "// here\n").unwrap();
    git(&worktree, &["commit", "--quiet", "-am", "here"]);
    assert_ne!(stamps(&build_script::git_inputs(&worktree)), before);
    Ok(())
}

/// The script watches the compiled-in files and not the kernels, lists the kernels for the binaries
/// to embed, and hashes each as committed the way `device::sources` hashes what a binary runs.
fn kernels_are_listed_and_hashed_as_committed_and_not_watched() -> Ran {
    have_git()?;
    let repo = repository();
    let dir = repo.path();
    let watched = build_script::compiled_inputs(dir);
    assert_eq!(watched, vec![dir.join("shared/lib.rs")]);
    assert_eq!(
        build_script::kernel_sources(dir),
        ["shared/cuda/common.cuh", "steps/step01_naive/kernel.cu"]
    );
    std::fs::write(dir.join("steps/step01_naive/kernel.cu"), "// edited, not committed\n").unwrap();
    let committed = build_script::committed_kernel_hashes(dir).unwrap();
    assert_eq!(
        committed,
        [
            (
                "shared/cuda/common.cuh".to_string(),
                build_script::fnv1a64(b"// header\n")
            ),
            (
                "steps/step01_naive/kernel.cu".to_string(),
                build_script::fnv1a64(b"// kernel\n")
            ),
        ]
    );
    // FNV-1a 64 of "a", as `device::sources` checks it too.
    assert_eq!(build_script::fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    assert!(build_script::committed_kernel_hashes(tempfile::tempdir().unwrap().path()).is_none());
    Ok(())
}

common::harness::tests!(
    kernels_are_listed_and_hashed_as_committed_and_not_watched,
    the_revision_tells_clean_from_dirty_without_writing_the_index,
    the_git_files_cargo_watches_exist_in_a_repository_and_a_worktree,
);
