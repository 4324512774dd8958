//! Records in the binary which commit it was built from, and what of it the build had changed.
//!
//! Two kinds of source go into a binary:
//! - The Rust code (and the two kernels the library embeds itself: the MX dequantizer and the
//!   `mma.sync` ceiling) is compiled in. The revision gets `-dirty` when any of it differs from the
//!   commit, and this script reruns when any of it changes.
//! - The kernels the steps run (`steps/**/*.cu`) and their headers (`shared/cuda/*.cuh`) are read at
//!   run time: from the source tree the binary was built from, where it is there, else from the copy
//!   every binary embeds (`embed_kernel_sources!`, which cargo re-embeds when a kernel changes). This
//!   script does not rerun for them, so a kernel edit costs no rebuild of the library. It records the
//!   hash of each as committed, and the binary compares what it runs with it (`device::sources`).
//!
//! The revision is read without writing to the repository: `git describe --dirty` refreshes
//! `.git/index` as it runs. The index is no input either (`git status` rewrites it), so a change that
//! touches only the index (`git reset` of a staged file) is seen at the next build that reruns this
//! script. `tests/revision.rs` runs these functions.
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The folders and files of the crate whose contents go into a binary (the results and the book
/// under book/ are left out on purpose: recording writes them).
const BUILD_INPUTS: &[&str] = &["shared", "steps", "Cargo.toml", "Cargo.lock", "build.rs"];

fn main() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| ".".into()));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    println!("cargo:rustc-env=GEMM_LADDER_GIT_REVISION={}", revision(&root));
    for input in compiled_inputs(&root).iter().chain(&git_inputs(&root)) {
        println!("cargo:rerun-if-changed={}", input.display());
    }
    write_if_changed(&out.join("embedded_kernel_sources.rs"), &embedded_table(&root));
    write_if_changed(&out.join("committed_kernel_sources.rs"), &committed_table(&root));
}

/// A kernel or header the binaries read at run time (a path from the crate root, with `/`).
pub fn is_kernel_source(path: &str) -> bool {
    (path.starts_with("steps/") && path.ends_with(".cu"))
        || (path.starts_with("shared/cuda/") && path.ends_with(".cuh"))
}

/// FNV-1a, 64 bits, of `bytes`: the committed text's hash here, the run's text's in `device::sources`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
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
/// compiled-in file differs from it (see [`BUILD_INPUTS`]; the kernels read at run time are compared
/// at run time; untracked files do not count, as for `describe --dirty`); `unknown` outside a git
/// repository. Leaves `.git/index` as it found it.
pub fn revision(dir: &Path) -> String {
    let Some(commit) = git(dir, &["describe", "--always", "--abbrev=10"]) else {
        return "unknown".to_string();
    };
    // `status` compares contents where the index's file stamps are stale, so it is right without
    // refreshing the index on disk (which `--no-optional-locks` forbids it; `git diff` would write it).
    let mut args = vec!["status", "--porcelain", "--untracked-files=no", "--"];
    args.extend(BUILD_INPUTS);
    args.extend([":(exclude,glob)steps/**/*.cu", ":(exclude,glob)shared/cuda/*.cuh"]);
    match git(dir, &args) {
        Some(list) if list.is_empty() => commit,
        _ => format!("{commit}-dirty"),
    }
}

/// Every file of [`BUILD_INPUTS`] in `dir` but the kernels read at run time, so that cargo reruns
/// this script when compiled-in code changes, and only then. A new Rust file always comes with an
/// edit of one that names it (`mod`), so listing the files there are now is enough.
pub fn compiled_inputs(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for input in BUILD_INPUTS {
        collect_files(dir, Path::new(input), &mut found);
    }
    found.retain(|relative| !is_kernel_source(&slashed(relative)));
    found.into_iter().map(|relative| dir.join(relative)).collect()
}

/// The kernels and headers under `dir` that the binaries read at run time, sorted.
pub fn kernel_sources(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    collect_files(dir, Path::new("steps"), &mut found);
    collect_files(dir, Path::new("shared/cuda"), &mut found);
    let mut paths: Vec<String> = found
        .iter()
        .map(|p| slashed(p))
        .filter(|p| is_kernel_source(p))
        .collect();
    paths.sort();
    paths
}

fn slashed(relative: &Path) -> String {
    relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// Every file at or under `relative` (from `dir`), as paths from `dir`.
fn collect_files(dir: &Path, relative: &Path, found: &mut Vec<PathBuf>) {
    let full = dir.join(relative);
    if full.is_file() {
        found.push(relative.to_path_buf());
    } else if let Ok(entries) = std::fs::read_dir(&full) {
        for entry in entries.flatten() {
            collect_files(dir, &relative.join(entry.file_name()), found);
        }
    }
}

/// Each kernel source as HEAD has it, with [`fnv1a64`] of its text; `None` outside a git repository.
pub fn committed_kernel_hashes(dir: &Path) -> Option<Vec<(String, u64)>> {
    let listed = git(
        dir,
        &["ls-tree", "-r", "--name-only", "HEAD", "--", "steps", "shared/cuda"],
    )?;
    let paths: Vec<&str> = listed.lines().filter(|p| is_kernel_source(p)).collect();
    let mut child = Command::new("git")
        .args(["--no-optional-locks", "-C"])
        .arg(dir)
        .args(["cat-file", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .ok()?;
    let requests: String = paths.iter().map(|p| format!("HEAD:{p}\n")).collect();
    let mut stdin = child.stdin.take()?;
    // Written from a thread: git answers while it reads, and a full pipe would stop both.
    let writer = std::thread::spawn(move || stdin.write_all(requests.as_bytes()));
    let out = child.wait_with_output().ok()?;
    writer.join().ok()?.ok()?;
    // Each answer is `<oid> blob <size>\n<content>\n`.
    let mut rest = out.stdout.as_slice();
    let mut hashes = Vec::new();
    for path in paths {
        let header_end = rest.iter().position(|&b| b == b'\n')?;
        let size: usize = std::str::from_utf8(&rest[..header_end])
            .ok()?
            .split(' ')
            .nth(2)?
            .parse()
            .ok()?;
        let content = rest.get(header_end + 1..header_end + 1 + size)?;
        hashes.push((path.to_string(), fnv1a64(content)));
        rest = rest.get(header_end + 2 + size..)?;
    }
    Some(hashes)
}

/// The Rust expression the binaries embed: every kernel source's path and text (`include_str!`, so
/// that cargo re-embeds a kernel when it changes, rebuilding only the small binary crates).
fn embedded_table(dir: &Path) -> String {
    let mut table = String::from("&[\n");
    for path in kernel_sources(dir) {
        let full = dir.join(&path);
        table += &format!("    ({path:?}, include_str!({:?})),\n", full.display().to_string());
    }
    table + "]\n"
}

/// The Rust expression the library holds: each kernel source's hash as committed, or `None` where
/// the tree is no git repository (then nothing can be compared).
fn committed_table(dir: &Path) -> String {
    let Some(hashes) = committed_kernel_hashes(dir) else {
        return "None\n".to_string();
    };
    let mut table = String::from("Some(&[\n");
    for (path, hash) in hashes {
        table += &format!("    ({path:?}, 0x{hash:016x}),\n");
    }
    table + "])\n"
}

/// Writes `text` to `path` unless it is there already (a rewrite would make cargo rebuild what
/// includes it).
fn write_if_changed(path: &Path, text: &str) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).expect("writing to OUT_DIR");
    }
}

/// The files git changes when the commit checked out in `dir` does: HEAD, HEAD's log (every commit,
/// checkout or reset here appends to it), the branch's own ref, and packed-refs, wherever they are
/// (in `.git/`, or for a worktree, in its own git folder and the main repository's). Not the index:
/// `git status` and editors that poll git rewrite it, and what is staged does not decide the
/// revision. Not the whole refs/ folder, which a commit on any other branch (from another worktree)
/// changes. Only files that exist: a missing one would make cargo run the script on every build.
pub fn git_inputs(dir: &Path) -> Vec<PathBuf> {
    let mut names = vec!["HEAD".to_string(), "logs/HEAD".into(), "packed-refs".into()];
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
