//! The classroom exercises (`shared/run/exercise.rs`, every step's `exercises.rs`).
//!
//! Without a GPU (CI): every exercise's edits match the current kernel exactly once (the test names
//! the exercise whose edit no longer does), and every starter made from them compiles with NVRTC, and
//! assembles with ptxas, for each architecture its step's kernel claims, except the fill-the-gap
//! starters whose gap is a compile error on purpose: those must fail to compile, and NVRTC's log must
//! name the student's file and a line at the gap. No file under tests/ repeats a step's kernel, and
//! the book names every exercise's file and command. The `exercise` binary itself, on a temporary
//! student folder: `start` (with and without an id) writes the starter, `reset` writes it again and
//! keeps the student's version, `check` reports a gap with file:line and exit code 5 and refuses a
//! file not started, a prediction is required on a non-terminal stdin, hints are counted.
//!
//! On a GPU (reported as ignored without one): `exercise check` on every untouched starter fails (verification,
//! exit 1; hung, exit 3; or, for a fill-the-gap, the compile error, exit 5), except the
//! predict-then-measure starters, which are correct variants and pass and are measured; every
//! solution (the step's kernel, or the predict-then-measure variant) passes. Each check is a child
//! process of the `exercise` binary with a short hang deadline.

mod common;

use common::Ran;

use gemm_ladder::device::arch::Arch;
use gemm_ladder::device::nvrtc::{self, Output};
use gemm_ladder::error::Error;
use gemm_ladder::run::edit::Edit;
use gemm_ladder::run::exercise::{self, Exercise, Kind};
use gemm_ladder::run::registry::{KernelFile, Targets};
use gemm_ladder::run::steps;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output as ProcessOutput};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const EXERCISE: &str = env!("CARGO_BIN_EXE_exercise");

/// The hang deadline in the GPU checks' child processes.
const HANG_SECONDS: &str = "3";

/// A file repeats a kernel when it shares this many consecutive lines with it (blank lines aside).
const REPEATED_LINES: usize = 12;

fn starter(ex: &Exercise) -> String {
    ex.starter().unwrap_or_else(|e| panic!("{e}"))
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
    // Without ptxas nothing is assembled: the test says so at its end (common::assembled).
    nvrtc::assemble(&ptx.bytes, arch, file.path).unwrap_or_else(|e| panic!("{e}"));
    Ok(ptx.log)
}

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

fn every_exercise_s_edits_match_the_current_kernel_exactly_once() {
    let stale: Vec<String> = exercise::all()
        .filter_map(|ex| ex.starter().err())
        .map(|e| e.to_string())
        .collect();
    assert!(
        stale.is_empty(),
        "{} exercises no longer fit their step's kernel:\n{}",
        stale.len(),
        stale.join("\n")
    );
}

fn an_edit_that_does_not_match_once_is_an_error_naming_the_exercise() {
    let template = exercise::find("01.1").expect("exercise 01.1");
    let several = "const int";
    let count = template.kernel().source.matches(several).count();
    assert!(count > 1, "`{several}` occurs {count} times in step 01's kernel");
    for (find, found) in [("no such text in any kernel", 0), (several, count)] {
        let edits: &'static [Edit] = Box::leak(Box::new([Edit { find, replace: "x" }]));
        let stale = Exercise {
            id: "01.9",
            step: template.step,
            kind: template.kind,
            title: "A stale edit",
            name: "a_stale_edit",
            intro: "",
            edits,
            answer: Some(""),
            hints: &[],
            prediction: None,
        };
        let why = stale.starter().expect_err("a stale edit").to_string();
        assert!(
            why.contains("exercise 01.9") && why.contains(&format!("occurs {found} times")),
            "{why}"
        );
    }
}

fn starters_change_the_kernel_and_mark_where_the_work_is() {
    for ex in exercise::all() {
        let kernel = ex.kernel();
        assert!(
            kernel.targets == Targets::Hopper || kernel.targets == Targets::AnyGpu,
            "{}: the exercise replaces {}",
            ex.id,
            kernel.path
        );
        for edit in ex.edits {
            assert_ne!(edit.find, edit.replace, "{}: an edit that changes nothing", ex.id);
        }
        assert!(
            !starter(ex).ends_with(kernel.source),
            "{}: the starter is the step's kernel under a comment",
            ex.id
        );
        let body = ex.edits.iter().map(|e| e.replace).collect::<String>();
        let marker = match ex.kind {
            Kind::FillTheGap => Some(format!("TODO(exercise {})", ex.id)),
            Kind::PredictThenMeasure => Some(format!("exercise {}", ex.id)),
            // A planted bug is not pointed at.
            Kind::FindTheBug => None,
        };
        if let Some(marker) = marker {
            assert!(
                body.contains(&marker),
                "{}: the edits do not mark the change with {marker}",
                ex.id
            );
        }
        if ex.kind == Kind::FillTheGap {
            assert!(body.contains("____"), "{}: a gap is `____`", ex.id);
        }
    }
}

fn every_starter_compiles_and_assembles_or_the_gap_is_a_compile_error_at_file_and_line() -> Ran {
    common::nvrtc()?;
    let mut gaps = Vec::new();
    for ex in exercise::all() {
        let text = starter(ex);
        let file = ex.kernel_file(&ex.student_path(), &text);
        for &arch in file.targets.claimed_archs() {
            match compile_and_assemble(&file, arch) {
                // A predict-then-measure starter is also the solution: as clean as the kernels.
                Ok(log) if ex.kind == Kind::PredictThenMeasure => {
                    assert!(log.is_empty(), "{} for {arch}: NVRTC warnings:\n{log}", ex.id)
                }
                Ok(_) => {}
                Err(Error::Compile { file, log, .. }) => {
                    assert_eq!(
                        ex.kind,
                        Kind::FillTheGap,
                        "{}: the starter does not compile:\n{log}",
                        ex.id
                    );
                    assert_eq!(file, ex.student_path());
                    let todo = line_of(&text, "TODO(exercise").expect("marked, as checked above");
                    let lines = error_lines(&log, &file);
                    assert!(
                        lines.iter().any(|&l| (todo..=todo + 10).contains(&l)),
                        "{}: NVRTC's errors {lines:?} are not at the gap (line {todo}) of {file}:\n{log}",
                        ex.id
                    );
                    gaps.push(ex.id);
                }
                Err(other) => panic!("{}'s starter: {other}", ex.id),
            }
        }
    }
    gaps.dedup();
    println!("fill-the-gap starters whose gap is a compile error: {gaps:?}");
    common::assembled(gemm_ladder::device::libs::find_tool("ptxas").is_some())
}

/// Lines of `text` without their indentation, blank ones left out.
fn code_lines(text: &str) -> Vec<&str> {
    text.lines().map(str::trim).filter(|l| !l.is_empty()).collect()
}

/// Every `.cu` file under `folder`, at any depth.
fn cu_files(folder: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(folder).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(cu_files(&path));
        } else if path.extension().is_some_and(|x| x == "cu") {
            found.push(path);
        }
    }
    found
}

fn no_file_under_tests_or_a_step_s_exercises_repeats_a_kernel() {
    let mut runs = HashSet::new();
    for step in steps::ALL {
        let kernels = step.kernels.iter().chain(step.alternatives.iter().map(|a| &a.kernel));
        for kernel in kernels {
            for run in code_lines(kernel.source).windows(REPEATED_LINES) {
                runs.insert(run.join("\n"));
            }
        }
    }
    let mut folders = vec![PathBuf::from(ROOT).join("tests")];
    folders.extend(
        steps::ALL
            .iter()
            .map(|s| Path::new(ROOT).join(format!("steps/step{:02}_{}/exercises", s.id, s.name))),
    );
    for file in folders.iter().flat_map(|f| cu_files(f)) {
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let lines = code_lines(&text);
        if let Some(at) = lines
            .windows(REPEATED_LINES)
            .position(|run| runs.contains(&run.join("\n")))
        {
            panic!(
                "{} repeats {REPEATED_LINES} lines of a step's kernel from `{}` on: make it an edit of \
                 the kernel (shared/run/edit.rs) instead of a copy",
                file.display(),
                lines[at]
            );
        }
    }
}

fn the_book_names_every_exercise_s_file_and_commands() {
    let mut book = String::new();
    for entry in std::fs::read_dir(Path::new(ROOT).join("book/src")).expect("book/src") {
        let path = entry.expect("a chapter").path();
        if path.extension().is_some_and(|x| x == "md") {
            book += &std::fs::read_to_string(&path).expect("a chapter");
        }
    }
    for ex in exercise::all() {
        for text in [
            ex.student_path(),
            format!("exercise -- start {}", ex.id),
            format!("exercise -- check {}", ex.id),
        ] {
            assert!(
                book.contains(&text),
                "the book does not say `{text}` (exercise {})",
                ex.id
            );
        }
    }
}

/// A temporary student folder and progress file, for the `exercise` binary's child processes.
struct Classroom {
    folder: tempfile::TempDir,
}

impl Classroom {
    fn new() -> Classroom {
        Classroom {
            folder: tempfile::tempdir().expect("a temporary folder"),
        }
    }

    fn exercises(&self) -> PathBuf {
        self.folder.path().join("exercises")
    }

    fn file(&self, ex: &Exercise) -> PathBuf {
        self.exercises().join(ex.file_name())
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(EXERCISE);
        command
            .args(args)
            .current_dir(ROOT)
            .env("GEMM_LADDER_EXERCISES", self.exercises())
            .env(
                "GEMM_LADDER_EXERCISE_PROGRESS",
                self.folder.path().join("progress.json"),
            )
            .env("GEMM_LADDER_HANG_SECONDS", HANG_SECONDS);
        command
    }

    fn run(&self, args: &[&str]) -> ProcessOutput {
        self.command(args).output().expect("running the exercise binary")
    }
}

fn said(out: &ProcessOutput) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn start_and_reset_write_the_starter_made_from_the_current_kernel() {
    let class = Classroom::new();
    let first = exercise::all().next().expect("an exercise");
    // Without a command: the first exercise not yet passed, here the first of all.
    let out = class.run(&[]);
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains(&format!("exercise {}", first.id)),
        "{}",
        said(&out)
    );
    assert_eq!(std::fs::read_to_string(class.file(first)).ok(), Some(starter(first)));

    let ex = exercise::all().nth(1).expect("a second exercise");
    let out = class.run(&["check", ex.id, "--no-time", "--predict", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&format!("start {}", ex.id)),
        "{}",
        said(&out)
    );

    assert!(class.run(&["start", ex.id]).status.success());
    let path = class.file(ex);
    let edited = starter(ex) + "// my work\n";
    std::fs::write(&path, &edited).expect("an edit");
    // `start` keeps the student's work; `reset` writes the starter again and keeps it as .bak.
    let out = class.run(&["start", ex.id]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("there already"),
        "{}",
        said(&out)
    );
    assert_eq!(std::fs::read_to_string(&path).ok().as_ref(), Some(&edited));
    let out = class.run(&["reset", ex.id]);
    assert!(out.status.success(), "{}", said(&out));
    assert_eq!(std::fs::read_to_string(&path).ok(), Some(starter(ex)));
    let backup = PathBuf::from(format!("{}.bak", path.display()));
    assert_eq!(std::fs::read_to_string(backup).ok(), Some(edited));
    let out = class.run(&["reset", ex.id]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("already the starter"),
        "{}",
        said(&out)
    );
    let out = class.run(&["list"]);
    assert!(out.status.success(), "{}", said(&out));
}

fn the_binary_reports_a_gap_at_file_and_line_and_counts_hints() -> Ran {
    common::nvrtc()?;
    let class = Classroom::new();
    let gap = exercise::all()
        .find(|e| {
            let file = e.kernel_file(&e.student_path(), &starter(e));
            e.kind == Kind::FillTheGap && nvrtc::compile(&file, file.targets.claimed_archs()[0], Output::Ptx).is_err()
        })
        .expect("a fill-the-gap starter whose gap is a compile error");
    assert!(class.run(&["start", gap.id]).status.success());
    let out = class.run(&["check", gap.id, "--no-time"]);
    assert_eq!(out.status.code(), Some(5), "{}", said(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{}:", class.file(gap).display())) && stderr.contains("error"),
        "{}",
        said(&out)
    );

    // Twice a hint: the second is hint 2, and the progress file remembers both.
    let out = class.run(&["hint", gap.id]);
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("hint 1 of"),
        "{}",
        said(&out)
    );
    let out = class.run(&["hint", gap.id]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("hint 2 of"),
        "{}",
        said(&out)
    );
    let text = std::fs::read_to_string(class.folder.path().join("progress.json")).expect("the progress file");
    assert!(text.contains("\"hints_shown\": 2"), "{text}");
    let out = class.run(&["report"]);
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains(gap.id),
        "{}",
        said(&out)
    );

    // A predict-then-measure check with stdin not a terminal and no --predict is refused (exit 2).
    if let Some(predict) = exercise::all().find(|e| e.kind == Kind::PredictThenMeasure) {
        assert!(class.run(&["start", predict.id]).status.success());
        let out = class
            .command(&["check", predict.id, "--no-time"])
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
    Ok(())
}

/// On a GPU: every untouched starter (written by `exercise start`) fails and every solution passes,
/// each checked by the `exercise` binary in a child process (a hang ends only that process, with exit
/// code 3). Exercises whose step runs only on Hopper are skipped on other GPUs, and said so.
fn on_a_gpu_every_starter_fails_and_every_solution_passes() -> Ran {
    let gpu = common::gpu()?;
    let (major, minor) = (gpu.major, gpu.minor);
    drop(gpu);
    let class = Classroom::new();
    let solutions = class.folder.path().join("solutions");
    std::fs::create_dir_all(&solutions).expect("a folder for the solutions");
    let mut timed_one_prediction = false;
    for ex in exercise::all() {
        if !ex.kernel().targets.serves(major, minor) {
            println!(
                "exercise {}: not checked here (needs {})",
                ex.id,
                ex.kernel().targets.describe()
            );
            continue;
        }
        // The solution passes, and the check says why it is right.
        let solution = solutions.join(ex.file_name());
        std::fs::write(&solution, ex.solution().unwrap_or_else(|e| panic!("{e}"))).expect("the solution");
        let solution = solution.display().to_string();
        let out = class.run(&["check", ex.id, "--no-time", "--predict", "1", "--file", &solution]);
        assert_eq!(out.status.code(), Some(0), "{}'s solution: {}", ex.id, said(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("PASS"), "{}", said(&out));
        assert_eq!(stdout.contains("why: "), ex.answer.is_some(), "{}", said(&out));

        // The starter, untouched.
        let out = class.run(&["start", ex.id]);
        assert!(out.status.success(), "{}", said(&out));
        let time = ex.kind == Kind::PredictThenMeasure && !timed_one_prediction;
        let mut args = vec!["check", ex.id, "--predict", "1"];
        if time {
            args.extend(["--iters", "5"]);
        } else {
            args.push("--no-time");
        }
        let out = class.run(&args);
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
    Ok(())
}

common::harness::tests!(
    there_are_exercises_of_every_kind_in_steps_01_to_05,
    every_exercise_s_edits_match_the_current_kernel_exactly_once,
    an_edit_that_does_not_match_once_is_an_error_naming_the_exercise,
    starters_change_the_kernel_and_mark_where_the_work_is,
    every_starter_compiles_and_assembles_or_the_gap_is_a_compile_error_at_file_and_line,
    no_file_under_tests_or_a_step_s_exercises_repeats_a_kernel,
    the_book_names_every_exercise_s_file_and_commands,
    start_and_reset_write_the_starter_made_from_the_current_kernel,
    the_binary_reports_a_gap_at_file_and_line_and_counts_hints,
    on_a_gpu_every_starter_fails_and_every_solution_passes,
);
