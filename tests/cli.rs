//! The command lines of the binaries, run as a user runs them: `--help` fits a 100-column terminal
//! and ends with the exit statuses (which the README lists too), `--version`, bad values refused in
//! one line with status 2, `--emit --arch` for the portable steps' arch-specific targets, and a
//! reader closing the pipe (`stepNN --emit ptx | head`) ending the program quietly. The `--emit`
//! tests need NVRTC and are reported as ignored without it.

mod common;

use common::Ran;
use gemm_ladder::error::{EXIT_CODES, PREPROCESSOR_EXIT_CODES};
use std::io::Read;
use std::process::{Command, Output, Stdio};

/// Every binary with its path, as cargo built it for the tests.
const BINARIES: &[(&str, &str)] = &[
    ("step01", env!("CARGO_BIN_EXE_step01")),
    ("step03", env!("CARGO_BIN_EXE_step03")),
    ("step05", env!("CARGO_BIN_EXE_step05")),
    ("step11", env!("CARGO_BIN_EXE_step11")),
    ("ladder", env!("CARGO_BIN_EXE_ladder")),
    ("exercise", env!("CARGO_BIN_EXE_exercise")),
    ("mdbook-ladder", env!("CARGO_BIN_EXE_mdbook-ladder")),
];

fn binary(name: &str) -> &'static str {
    BINARIES.iter().find(|(n, _)| *n == name).expect("a binary").1
}

fn run(name: &str, args: &[&str]) -> Output {
    Command::new(binary(name))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("running the binary")
}

fn said(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn help_fits_a_100_column_terminal_and_ends_with_the_exit_statuses() {
    for (name, _) in BINARIES {
        let out = run(name, &["--help"]);
        assert!(out.status.success(), "{name}: {}", said(&out));
        let help = String::from_utf8_lossy(&out.stdout);
        let widest = help.lines().map(|l| l.chars().count()).max().unwrap_or(0);
        assert!(widest <= 100, "{name} --help is {widest} columns wide:\n{help}");
        // `exercise` states its own loop after the options (steps/exercise/main.rs).
        if *name != "exercise" {
            let statuses = help
                .split("Exit status:")
                .nth(1)
                .unwrap_or_else(|| panic!("{name}:\n{help}"));
            let statuses = statuses.split_whitespace().collect::<Vec<_>>().join(" ");
            // The preprocessor runs no kernel: it lists only the statuses it can exit with.
            let codes = match *name {
                "mdbook-ladder" => &PREPROCESSOR_EXIT_CODES[..],
                _ => &EXIT_CODES[..],
            };
            for (code, meaning) in codes {
                assert!(
                    statuses.contains(&format!("{code} {meaning}")),
                    "{name}: {code} {meaning}"
                );
            }
            if *name == "mdbook-ladder" {
                assert!(!statuses.contains("hung"), "{name}: {statuses}");
            }
        }
        // One line: the program, the crate's version and the revision it was built from.
        let version = run(name, &["--version"]);
        let text = String::from_utf8_lossy(&version.stdout);
        assert!(
            version.status.success()
                && text.lines().count() == 1
                && text.contains(&format!(" {} (", env!("CARGO_PKG_VERSION"))),
            "{name}: {}",
            said(&version)
        );
    }
}

fn the_readme_lists_every_exit_status() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).expect("README.md");
    for (code, meaning) in EXIT_CODES {
        assert!(
            readme.contains(&format!("| {code} | {meaning} |")),
            "README.md has no row `| {code} | {meaning} |`"
        );
    }
}

/// One line on standard error, status 2, nothing run.
fn refused(out: &Output, words: &[&str]) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}", said(out));
    let first = stderr.lines().next().unwrap_or_default();
    assert!(first.starts_with("error: "), "{}", said(out));
    for word in words {
        assert!(first.contains(word), "`{word}` not in the first line: {}", said(out));
    }
}

fn bad_values_are_refused_in_one_line_with_status_2() {
    // No timed round is no measurement.
    refused(&run("step05", &["--iters", "0"]), &["--iters", "0"]);
    refused(&run("ladder", &["--iters", "0", "--no-book"]), &["--iters", "0"]);
    refused(&run("exercise", &["check", "01.1", "--iters", "0"]), &["--iters", "0"]);
    // An architecture none of the step's kernels is for: which ones they are for. Step 05's Hopper
    // twin, asked for by --twin, is not for sm_80 either.
    let out = run("step11", &["--emit", "ptx", "--arch", "sm75"]);
    refused(
        &out,
        &["step11 has no kernel for --arch sm_75", "sm_90a", "sm_100a", "sm_80+"],
    );
    let twin = run("step05", &["--emit", "ptx", "--twin", "hopper", "--arch", "sm80"]);
    refused(&twin, &["step05 has no kernel for --arch sm_80", "sm_90a"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).lines().count(),
        1,
        "{}",
        said(&out)
    );
    // Steps 01–03 compile for the T4 (sm_75), not for Volta; the sm80 twins need 8.0.
    let out = run("step01", &["--emit", "ptx", "--arch", "sm70"]);
    refused(&out, &["step01 has no kernel for --arch sm_70", "sm_75+ (kernel.cu)"]);
    let out = run("step05", &["--emit", "ptx", "--twin", "sm80", "--arch", "sm75"]);
    refused(&out, &["step05 has no kernel for --arch sm_75", "sm_80+ (sm80.cu)"]);
    assert!(run("step01", &["--emit", "ptx", "--arch", "sm75"]).status.success());
    // The refusal lists each file with its architectures, briefly.
    let out = run("step05", &["--emit", "ptx", "--arch", "sm75"]);
    refused(&out, &["sm_90a (sm90.cu), sm_100a (sm100.cu), sm_80+ (sm80.cu)"]);
    // A step without alternatives says so; --timeline on a step without stamps is a usage error
    // found before any GPU is looked for.
    refused(
        &run("step05", &["--emit", "ptx", "--alternative", "promote"]),
        &["step05 has no alternatives"],
    );
    refused(
        &run("step03", &["--timeline"]),
        &["step03 --timeline", "no timeline stamps"],
    );
}

/// `ladder` refuses a shape outside the contract, `--no-book` with `--book-only`, and a `--book` that
/// is not a book, with status 2, before anything runs or is written: GPU or not.
fn the_ladder_refuses_bad_shapes_and_folders_with_status_2() {
    refused(
        &run("ladder", &["--size", "0"]),
        &["shape 0x0x0 refused by ladder", "at least 1"],
    );
    refused(
        &run("ladder", &["--m", "3", "--n", "5", "--k", "7"]),
        &["refused by ladder", "K = 7"],
    );
    refused(
        &run("ladder", &["--size", "99999992", "--check"]),
        &["refused by ladder", "2^20"],
    );
    let out = run("ladder", &["--no-book", "--book-only"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    let tmp = tempfile::tempdir().unwrap();
    let nowhere = tmp.path().join("nowhere");
    for dir in [&nowhere, tmp.path()] {
        let dir = dir.to_str().unwrap();
        refused(&run("ladder", &["--book", dir]), &["--book", "not a book"]);
        refused(&run("ladder", &["--book", dir, "--book-only"]), &["not a book"]);
    }
    assert!(!nowhere.exists(), "a refused --book was created");
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        0,
        "a refused --book was written to"
    );
}

/// Without a GPU, a ladder run that asked to verify or time cannot: it builds the book (not with
/// `--no-book`), says what works without a GPU, and exits 4; `--book-only` exits 0. Where there is
/// a GPU driver the ladder would run, so the test is reported as ignored there.
fn without_a_gpu_the_ladder_builds_the_book_and_exits_4() -> Ran {
    if gemm_ladder::device::libs::driver_present() {
        return Err(common::Skip(
            "needs a machine without a GPU driver (here the ladder would run its steps)".into(),
        ));
    }
    let tmp = tempfile::tempdir().unwrap();
    let built = tmp.path().join("book");
    let ladder = |args: &[&str]| {
        Command::new(binary("ladder"))
            .args(args)
            .env("MDBOOK_BUILD__BUILD_DIR", &built)
            .stdin(Stdio::null())
            .output()
            .expect("running ladder")
    };
    for args in [&[][..], &["--check"], &["--sweep"], &["--profile", "--size", "1024"]] {
        let out = ladder(args);
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(4), "{args:?}: {}", said(&out));
        assert!(built.join("index.html").is_file(), "{args:?}: no book: {}", said(&out));
        assert!(
            stdout.contains("building the book") && stdout.contains("--emit") && stdout.contains("--bin exercise"),
            "{args:?}: {}",
            said(&out)
        );
        assert!(
            stderr.lines().count() == 1 && stderr.starts_with("error: the ladder needs a GPU"),
            "{args:?}: {}",
            said(&out)
        );
        std::fs::remove_dir_all(&built).unwrap();
    }
    let out = ladder(&["--no-book", "--check"]);
    assert_eq!(out.status.code(), Some(4), "{}", said(&out));
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("building the book"),
        "{}",
        said(&out)
    );
    assert!(!built.exists(), "--no-book built a book");
    let out = ladder(&["--book-only"]);
    assert_eq!(out.status.code(), Some(0), "{}", said(&out));
    assert!(built.join("index.html").is_file(), "{}", said(&out));
    Ok(())
}

/// The portable steps (01–03) emit for the arch-specific targets too: the README's `--arch sm90a`.
fn portable_steps_emit_for_sm90a_and_sm100a() -> Ran {
    common::nvrtc()?;
    for (arch, target) in [
        ("sm90a", ".target sm_90a"),
        ("sm100a", ".target sm_100a"),
        ("sm80", ".target sm_80"),
    ] {
        let out = run("step03", &["--emit", "ptx", "--arch", arch]);
        assert!(out.status.success(), "{}", said(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(target),
            "{arch}: {}",
            said(&out)
        );
    }
    // A step's sm80 twin, for a student's GPU: mma.sync, nothing of Hopper's; without --twin the
    // first of the step's files that compiles for the arch is the twin too.
    for args in [&["--twin", "sm80", "--arch", "sm86"][..], &["--arch", "sm86"]] {
        let out = run("step05", &[&["--emit", "ptx"][..], args].concat());
        let ptx = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{}", said(&out));
        assert!(
            ptx.contains(".target sm_86") && ptx.contains("mma.sync.aligned.m16n8k16") && !ptx.contains("wgmma"),
            "{args:?}: {}",
            said(&out)
        );
    }
    Ok(())
}

/// `step05 --emit ptx | head`: the reader stops after a few lines; the program ends as `cat` would
/// (SIGPIPE), without a panic or status 101.
fn a_closed_pipe_ends_the_program_quietly() -> Ran {
    use std::os::unix::process::ExitStatusExt;
    common::nvrtc()?;
    let mut child = Command::new(binary("step05"))
        .args(["--emit", "ptx", "--arch", "sm90a"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running step05");
    let mut head = [0u8; 256];
    child
        .stdout
        .take()
        .expect("stdout")
        .read_exact(&mut head)
        .expect("the PTX's first bytes");
    // The pipe is closed here, long before the PTX (over 64 KiB) is all written.
    let out = child.wait_with_output().expect("step05 ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{}", said(&out));
    assert!(
        out.status.signal() == Some(libc::SIGPIPE) || out.status.success(),
        "{}",
        said(&out)
    );
    Ok(())
}

/// A copy of the crate's kernel sources (`steps/**/*.cu`, `shared/cuda/*.cuh`) in a new folder.
fn copy_of_the_kernel_sources() -> tempfile::TempDir {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let copy = tempfile::tempdir().unwrap();
    for folder in ["steps", "shared/cuda"] {
        for entry in walk(&root.join(folder)) {
            let relative = entry.strip_prefix(root).unwrap();
            let name = relative.to_string_lossy();
            if name.ends_with(".cu") || name.ends_with(".cuh") {
                std::fs::create_dir_all(copy.path().join(relative).parent().unwrap()).unwrap();
                std::fs::copy(&entry, copy.path().join(relative)).unwrap();
            }
        }
    }
    copy
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// A kernel edited in the source tree runs without a Rust rebuild, and makes the run a dirty build:
/// recording is refused (before any GPU is needed) unless `--allow-dirty`, and compiling it says so. The
/// binary reads the kernels from the folder `GEMM_LADDER_SOURCE_TREE` names, a copy of the tree here.
fn an_edited_kernel_runs_without_a_rebuild_as_a_dirty_build() -> Ran {
    let tree = copy_of_the_kernel_sources();
    let kernel = tree.path().join("steps/step01_naive/kernel.cu");
    let edited = std::fs::read_to_string(&kernel).unwrap() + "__device__ int edited_by_the_test;\n";
    std::fs::write(&kernel, edited).unwrap();
    let with_tree = |args: &[&str]| {
        Command::new(binary("step01"))
            .args(args)
            .env(gemm_ladder::device::sources::TREE_ENV, tree.path())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    refused(
        &with_tree(&["--size", "64"]),
        &[
            "steps/step01_naive/kernel.cu",
            "differ from the commit",
            "--allow-dirty",
        ],
    );
    common::nvrtc()?;
    let out = with_tree(&["--emit", "ptx"]);
    assert!(out.status.success(), "{}", said(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("edited_by_the_test"),
        "{}",
        said(&out)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("steps/step01_naive/kernel.cu as edited in the source tree"),
        "{}",
        said(&out)
    );
    // The copy the binary embeds runs where there is no tree; it is the file as it is on disk.
    let embedded = Command::new(binary("step01"))
        .args(["--emit", "ptx"])
        .env(gemm_ladder::device::sources::TREE_ENV, "none")
        .output()
        .unwrap();
    assert!(embedded.status.success(), "{}", said(&embedded));
    assert!(!String::from_utf8_lossy(&embedded.stdout).contains("edited_by_the_test"));
    Ok(())
}

common::harness::tests!(
    help_fits_a_100_column_terminal_and_ends_with_the_exit_statuses,
    an_edited_kernel_runs_without_a_rebuild_as_a_dirty_build,
    the_readme_lists_every_exit_status,
    bad_values_are_refused_in_one_line_with_status_2,
    the_ladder_refuses_bad_shapes_and_folders_with_status_2,
    without_a_gpu_the_ladder_builds_the_book_and_exits_4,
    portable_steps_emit_for_sm90a_and_sm100a,
    a_closed_pipe_ends_the_program_quietly,
);
