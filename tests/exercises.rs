//! The classroom exercises (`shared/run/exercise.rs`, every step's `exercises/exercises.rs`).
//!
//! Without a GPU (CI): every starter and every reference solution compiles with NVRTC, and assembles
//! with ptxas, for each architecture its step's kernel claims, except the fill-the-gap starters whose
//! gap is a compile error on purpose: those must fail to compile, and NVRTC's log must name the
//! student's file and a line at the gap. Every solution and every starter differs from the step's
//! kernel, every starter carries its exercise's marker, the embedded starters are the files on disk,
//! and no file in the exercise folders belongs to no exercise. The `exercise` binary itself: a gap
//! reported with file:line and exit code 5, a prediction required on a non-terminal stdin, hints
//! counted in the progress file.
//!
//! On a GPU (skipped without one): `exercise check` on every untouched starter fails (verification,
//! exit 1; hung, exit 3; or, for a fill-the-gap, the compile error, exit 5), except the
//! predict-then-measure starters, which are correct variants and pass and are measured; every
//! solution passes. Each check is a child process of the `exercise` binary with a short hang deadline.

mod common;

use gemm_ladder::device::arch::Arch;
use gemm_ladder::device::nvrtc::{self, Output};
use gemm_ladder::error::Error;
use gemm_ladder::run::exercise::{self, Exercise, Kind};
use gemm_ladder::run::registry::{KernelFile, Targets};
use std::path::{Path, PathBuf};
use std::process::{Command, Output as ProcessOutput};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const EXERCISE: &str = env!("CARGO_BIN_EXE_exercise");

/// The hang deadline in the GPU checks' child processes.
const HANG_SECONDS: &str = "3";

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn solution(ex: &Exercise) -> KernelFile {
    ex.kernel_file(ex.solution_path, &read(ex.solution_path))
}

/// 1-based line of the first line containing `needle`.
fn line_of(text: &str, needle: &str) -> Option<usize> {
    text.lines().position(|l| l.contains(needle)).map(|i| i + 1)
}

/// The line numbers of `path:LINE: error` in an NVRTC log.
fn error_lines(log: &str, path: &str) -> Vec<usize> {
    let prefix = format!("{path}:");
    log.lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .filter(|rest| rest.contains("error"))
        .filter_map(|rest| rest.split(':').next()?.parse().ok())
        .collect()
}

fn ptxas_required() -> bool {
    std::env::var_os("GEMM_LADDER_REQUIRE_PTXAS").is_some()
}

/// Compiles (PTX and cubin) and assembles with ptxas; `Err` is NVRTC's compile error.
fn compile_and_assemble(file: &KernelFile, arch: Arch) -> Result<String, Error> {
    let ptx = nvrtc::compile(file, arch, Output::Ptx)?;
    let text = String::from_utf8_lossy(&ptx.bytes);
    assert!(
        text.contains(&format!(".entry {}(", file.entry)),
        "{}: no entry {} in the PTX",
        file.path,
        file.entry
    );
    let cubin = nvrtc::compile(file, arch, Output::Cubin).unwrap_or_else(|e| panic!("{e}"));
    assert!(cubin.bytes.starts_with(b"\x7fELF"), "{} for {arch}: no ELF", file.path);
    match nvrtc::assemble(&ptx.bytes, arch, file.path).unwrap_or_else(|e| panic!("{e}")) {
        Some(report) => println!("{} {arch}: {}", file.path, report.info.replace('\n', " | ")),
        None => {
            assert!(
                !ptxas_required(),
                "ptxas not found, and GEMM_LADDER_REQUIRE_PTXAS is set"
            );
            eprintln!("{}: assembly skipped (ptxas not found)", file.path);
        }
    }
    Ok(ptx.log)
}

#[test]
fn there_are_exercises_of_every_kind_in_steps_01_to_05() {
    for step in 1..=5u8 {
        let count = exercise::all().filter(|e| e.step == step).count();
        assert!(count >= 2, "step {step:02} has {count} exercises, at least 2 expected");
    }
    for kind in [Kind::FillTheGap, Kind::FindTheBug, Kind::PredictThenMeasure] {
        assert!(
            exercise::all().any(|e| e.step <= 5 && e.kind == kind),
            "no {kind:?} in steps 01-05"
        );
    }
}

#[test]
fn embedded_starters_are_the_files_on_disk_and_every_file_has_its_exercise() {
    let mut starters = Vec::new();
    let mut solutions = Vec::new();
    for ex in exercise::all() {
        assert_eq!(
            read(ex.starter_path),
            ex.starter,
            "{}: the embedded starter differs from the file",
            ex.id
        );
        assert!(
            Path::new(ROOT).join(ex.solution_path).is_file(),
            "{}: no {}",
            ex.id,
            ex.solution_path
        );
        starters.push(PathBuf::from(ROOT).join(ex.starter_path));
        solutions.push(PathBuf::from(ROOT).join(ex.solution_path));
    }
    let cu_files = |dir: PathBuf| -> Vec<PathBuf> {
        std::fs::read_dir(&dir)
            .map(|d| {
                d.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "cu"))
                    .collect()
            })
            .unwrap_or_default()
    };
    for step in gemm_ladder::run::steps::ALL {
        let dir = Path::new(ROOT).join(format!("steps/step{:02}_{}/exercises", step.id, step.name));
        for file in cu_files(dir) {
            assert!(starters.contains(&file), "{} belongs to no exercise", file.display());
        }
    }
    for file in cu_files(Path::new(ROOT).join("tests/exercises")) {
        assert!(
            solutions.contains(&file),
            "{} is no exercise's solution",
            file.display()
        );
    }
}

#[test]
fn starters_and_solutions_differ_from_the_step_s_kernel_and_starters_are_marked() {
    for ex in exercise::all() {
        let kernel = ex.kernel();
        assert!(
            kernel.targets == Targets::Hopper || kernel.targets == Targets::AnyGpu,
            "{}: the exercise replaces {}",
            ex.id,
            kernel.path
        );
        assert_ne!(
            read(ex.solution_path),
            kernel.source,
            "{}: the solution is the step's kernel",
            ex.id
        );
        assert_ne!(ex.starter, kernel.source, "{}: the starter is the step's kernel", ex.id);
        assert!(
            ex.starter.contains(&ex.marker()) || ex.starter.contains(&format!("Exercise {}", ex.id)),
            "{}: the starter does not name its exercise",
            ex.id
        );
        if ex.kind == Kind::FillTheGap {
            assert!(
                ex.starter.contains(&format!("TODO(exercise {})", ex.id)),
                "{}: a fill-the-gap starter marks its gap with TODO(exercise {})",
                ex.id,
                ex.id
            );
        }
    }
}

#[test]
fn every_solution_and_starter_compiles_and_assembles_or_the_gap_is_a_compile_error_at_file_and_line() {
    if !common::nvrtc_or_skip("exercises_compile") {
        return;
    }
    let mut gaps = Vec::new();
    for ex in exercise::all() {
        let kernel = ex.kernel();
        for &arch in kernel.targets.claimed_archs() {
            let file = solution(ex);
            let log = compile_and_assemble(&file, arch).unwrap_or_else(|e| panic!("{}'s solution: {e}", ex.id));
            assert!(
                log.is_empty(),
                "{}'s solution for {arch}: NVRTC warnings:\n{log}",
                ex.id
            );
            let starter = ex.starter_file();
            match compile_and_assemble(&starter, arch) {
                Ok(_) => {}
                Err(Error::Compile { file, log, .. }) => {
                    assert_eq!(
                        ex.kind,
                        Kind::FillTheGap,
                        "{}: the starter does not compile:\n{log}",
                        ex.id
                    );
                    assert_eq!(file, ex.starter_path);
                    let todo = line_of(ex.starter, "TODO(exercise").expect("marked, as checked above");
                    let lines = error_lines(&log, ex.starter_path);
                    assert!(
                        lines.iter().any(|&l| (todo..=todo + 10).contains(&l)),
                        "{}: NVRTC's errors {lines:?} are not at the gap (line {todo}) of {}:\n{log}",
                        ex.id,
                        ex.starter_path
                    );
                    gaps.push(ex.id);
                }
                Err(other) => panic!("{}'s starter: {other}", ex.id),
            }
        }
    }
    gaps.dedup();
    println!("fill-the-gap starters whose gap is a compile error: {gaps:?}");
}

fn exercise_binary(args: &[&str], progress: &Path) -> ProcessOutput {
    Command::new(EXERCISE)
        .args(args)
        .current_dir(ROOT)
        .env("GEMM_LADDER_EXERCISE_PROGRESS", progress)
        .env("GEMM_LADDER_HANG_SECONDS", HANG_SECONDS)
        .output()
        .expect("running the exercise binary")
}

fn said(out: &ProcessOutput) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn the_binary_reports_a_gap_at_file_and_line_and_counts_hints() {
    if !common::nvrtc_or_skip("exercise_binary") {
        return;
    }
    let dir = tempfile::tempdir().expect("a temporary folder");
    let progress = dir.path().join("progress.json");
    let gap = exercise::all()
        .find(|e| {
            e.kind == Kind::FillTheGap
                && nvrtc::compile(&e.starter_file(), e.kernel().targets.claimed_archs()[0], Output::Ptx).is_err()
        })
        .expect("a fill-the-gap starter whose gap is a compile error");
    let out = exercise_binary(&["check", gap.id, "--no-time", "--file", gap.starter_path], &progress);
    assert_eq!(out.status.code(), Some(5), "{}", said(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{}:", gap.starter_path)) && stderr.contains("error"),
        "{}",
        said(&out)
    );

    // Twice a hint: the second is hint 2, and the progress file remembers both.
    let out = exercise_binary(&["hint", gap.id], &progress);
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("hint 1 of"),
        "{}",
        said(&out)
    );
    let out = exercise_binary(&["hint", gap.id], &progress);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("hint 2 of"),
        "{}",
        said(&out)
    );
    let text = std::fs::read_to_string(&progress).expect("the progress file");
    assert!(text.contains("\"hints_shown\": 2"), "{text}");
    let out = exercise_binary(&["report"], &progress);
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains(gap.id),
        "{}",
        said(&out)
    );
    let out = exercise_binary(&["list"], &progress);
    assert!(out.status.success(), "{}", said(&out));

    // A predict-then-measure check with stdin not a terminal and no --predict is refused (exit 2).
    if let Some(predict) = exercise::all().find(|e| e.kind == Kind::PredictThenMeasure) {
        let out = Command::new(EXERCISE)
            .args(["check", predict.id, "--no-time"])
            .current_dir(ROOT)
            .env("GEMM_LADDER_EXERCISE_PROGRESS", &progress)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("running the exercise binary");
        assert_eq!(out.status.code(), Some(2), "{}", said(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--predict"),
            "{}",
            said(&out)
        );
    }
}

/// On a GPU: every untouched starter fails and every solution passes, each checked by the `exercise`
/// binary in a child process (a hang ends only that process, with exit code 3). Exercises whose step
/// runs only on Hopper are skipped on other GPUs, and said so.
#[test]
fn on_a_gpu_every_starter_fails_and_every_solution_passes() {
    let Some(gpu) = common::gpu_or_skip("exercises_on_the_gpu") else {
        return;
    };
    let (major, minor) = (gpu.major, gpu.minor);
    drop(gpu);
    let dir = tempfile::tempdir().expect("a temporary folder");
    let progress = dir.path().join("progress.json");
    let mut timed_one_prediction = false;
    for ex in exercise::all() {
        if !ex.kernel().targets.serves(major, minor) {
            eprintln!("exercise {}: skipped (needs {})", ex.id, ex.kernel().targets.describe());
            continue;
        }
        // The solution passes.
        let out = exercise_binary(
            &[
                "check",
                ex.id,
                "--no-time",
                "--predict",
                "1",
                "--file",
                ex.solution_path,
            ],
            &progress,
        );
        assert_eq!(out.status.code(), Some(0), "{}'s solution: {}", ex.id, said(&out));
        assert!(String::from_utf8_lossy(&out.stdout).contains("PASS"), "{}", said(&out));

        // The starter, untouched.
        let time = ex.kind == Kind::PredictThenMeasure && !timed_one_prediction;
        let mut args = vec!["check", ex.id, "--predict", "1", "--file", ex.starter_path];
        if time {
            args.extend(["--iters", "5"]);
        } else {
            args.push("--no-time");
        }
        let out = exercise_binary(&args, &progress);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        match (ex.kind, out.status.code()) {
            (Kind::PredictThenMeasure, Some(0)) => {
                assert!(stdout.contains("PASS"), "{}", said(&out));
                if time {
                    assert!(
                        stdout.contains("measured:") && !stdout.contains("nothing yet"),
                        "{}",
                        said(&out)
                    );
                    timed_one_prediction = true;
                }
            }
            (Kind::PredictThenMeasure, _) => {
                panic!("{}: a predict-then-measure starter must pass: {}", ex.id, said(&out))
            }
            (_, Some(1)) => assert!(stderr.contains("verification failed"), "{}", said(&out)),
            (_, Some(3)) => assert!(stderr.contains("reported as hung"), "{}", said(&out)),
            (Kind::FillTheGap, Some(5)) if stderr.contains("NVRTC could not compile") => {}
            _ => panic!(
                "{}: the untouched starter must fail verification or hang: {}",
                ex.id,
                said(&out)
            ),
        }
        println!(
            "exercise {}: solution passes; starter {}",
            ex.id,
            match out.status.code() {
                Some(0) => "passes (a variant to measure)",
                Some(1) => "fails verification",
                Some(3) => "hangs, reported as hung",
                _ => "does not compile (the gap)",
            }
        );
    }
}
