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
//! file not started, a prediction is required on a non-terminal stdin, hints are counted. The
//! classroom loop: `list` fits 100 columns and marks the exercises a compiler can complete;
//! `solution` refuses with one line before a pass and shows each edit undone after; without a GPU,
//! `check` says what it did and what is left, with exit status 6, and a second check of an
//! unchanged file is not another attempt; `watch` starts at the first exercise not passed and moves
//! on when it passes; `check --all` grades a folder in one line per exercise (exit 1 for a half-done
//! student's tree given with --tree, recorded in its progress file; for every solution 0 on a GPU,
//! 6 without); `report --csv` parses back with as many
//! fields in every row as in its header, names the student (`--student`, git, login), and `report
//! --merge` gathers two students and refuses a file that is not a report.
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
use gemm_ladder::run::registry::{KernelFile, Targets, Twin};
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
    let count = template.kernel().source().matches(several).count();
    assert!(count > 1, "`{several}` occurs {count} times in step 01's kernel");
    for (find, found) in [("no such text in any kernel", 0), (several, count)] {
        let edits: &'static [Edit] = Box::leak(Box::new([Edit { find, replace: "x" }]));
        let stale = Exercise {
            id: "01.9",
            step: template.step,
            targets: template.targets,
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
            matches!(kernel.targets, Targets::Hopper | Targets::AnyGpu | Targets::Ampere),
            "{}: the exercise replaces {}",
            ex.id,
            kernel.path
        );
        for edit in ex.edits {
            assert_ne!(edit.find, edit.replace, "{}: an edit that changes nothing", ex.id);
        }
        assert!(
            !starter(ex).ends_with(kernel.source()),
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
                }
                Err(other) => panic!("{}'s starter: {other}", ex.id),
            }
        }
    }
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
            for run in code_lines(kernel.source()).windows(REPEATED_LINES) {
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

/// `--twin sm80` limits `list` and the choice of the next exercise to the sm80 twin's exercises and
/// steps 01–03's, which every twin shares; `list` names each exercise's twin.
fn twin_limits_the_list_and_the_next_exercise() {
    let class = Classroom::new();
    let out = class.run(&["list", "--twin", "sm80"]);
    assert!(out.status.success(), "{}", said(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let mut sm80 = 0;
    for ex in exercise::all() {
        let row = text.lines().find(|l| l.contains(&format!(" {} ", ex.id)));
        match ex.targets.twin() {
            None => assert!(row.is_some(), "{}: missing from\n{text}", ex.id),
            Some(Twin::Sm80) => {
                let row = row.unwrap_or_else(|| panic!("{}: missing from\n{text}", ex.id));
                assert!(row.contains(" sm80 ") && row.contains(" sm_80+ "), "{row}");
                sm80 += 1;
            }
            Some(_) => assert!(row.is_none(), "{}: listed under --twin sm80:\n{text}", ex.id),
        }
    }
    assert!(
        sm80 >= 17,
        "issue 26 adds two sm80 exercises to each of steps 04–07, issue 31 nine to steps 08–11: {sm80}"
    );
    let shared: Vec<&str> = exercise::all()
        .filter(|e| e.targets.twin().is_none())
        .map(|e| e.id)
        .collect();
    class.mark_passed(&shared);
    let first = exercise::all()
        .find(|e| e.targets == Targets::Ampere)
        .expect("an sm80 exercise");
    let out = class.run(&["--twin", "sm80"]);
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).starts_with(&format!("exercise {} ", first.id)),
        "{}",
        said(&out)
    );
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

/// On a GPU: every untouched starter of steps 01–03 and of the Hopper twin fails and every solution
/// passes ([`starters_fail_and_solutions_pass`]).
fn on_a_gpu_every_hopper_and_any_gpu_starter_fails_and_every_solution_passes() -> Ran {
    starters_fail_and_solutions_pass(|ex| ex.targets != Targets::Ampere)
}

/// On a GPU: every untouched starter of the sm80 twin fails and every solution passes
/// ([`starters_fail_and_solutions_pass`]); each runs at the ring depth the step's own launch takes
/// on this GPU (`run::ring::deeper`).
fn on_a_gpu_every_sm80_starter_fails_and_every_solution_passes() -> Ran {
    starters_fail_and_solutions_pass(|ex| ex.targets == Targets::Ampere)
}

/// Every untouched starter (written by `exercise start`) of the exercises `which` picks fails and
/// every solution passes, each checked by the `exercise` binary in a child process (a hang ends only
/// that process, with exit code 3). Exercises whose kernel this GPU cannot run are skipped, and said so.
fn starters_fail_and_solutions_pass(which: fn(&Exercise) -> bool) -> Ran {
    let gpu = common::gpu()?;
    let (major, minor) = (gpu.major, gpu.minor);
    drop(gpu);
    let class = Classroom::new();
    let solutions = class.folder.path().join("solutions");
    std::fs::create_dir_all(&solutions).expect("a folder for the solutions");
    let mut timed_one_prediction = false;
    for ex in exercise::all().filter(|ex| which(ex)) {
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
        // A prediction only where the exercise asks for one: elsewhere `--predict` is refused.
        let predict: &[&str] = if ex.kind == Kind::PredictThenMeasure {
            &["--predict", "1"]
        } else {
            &[]
        };
        let mut args = vec!["check", ex.id, "--no-time", "--file", &solution];
        args.extend(predict);
        let out = class.run(&args);
        assert_eq!(out.status.code(), Some(0), "{}'s solution: {}", ex.id, said(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("PASS"), "{}", said(&out));
        assert_eq!(stdout.contains("why: "), ex.answer.is_some(), "{}", said(&out));

        // The starter, untouched.
        let out = class.run(&["start", ex.id]);
        assert!(out.status.success(), "{}", said(&out));
        let time = ex.kind == Kind::PredictThenMeasure && !timed_one_prediction;
        let mut args = vec!["check", ex.id];
        args.extend(predict);
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
                Some(1) => "is caught by verification",
                Some(3) => "hangs and is reported as hung",
                _ => "does not compile (the gap)",
            }
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The classroom loop: list, solution, check without a GPU, attempts, watch, check --all, report
// ---------------------------------------------------------------------------------------------

/// The exit status of `exercise check` when the file compiles and assembles but no GPU can run it.
const NOT_VERIFIED: i32 = 6;

/// The widest line of `text`, in characters.
fn widest(text: &str) -> usize {
    text.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

/// True when a GPU can run the exercises' kernels here (the checks then verify instead of stopping
/// after the compile), false when there is no GPU at all; `None` for a GPU that is not a Hopper,
/// where the step 04–11 exercises cannot run either way.
fn hopper_here() -> Option<bool> {
    if !gemm_ladder::device::libs::driver_present() {
        return Some(false);
    }
    match gemm_ladder::device::gpu::Gpu::open() {
        Ok(gpu) if (gpu.major, gpu.minor) == (9, 0) => Some(true),
        Ok(_) => None,
        Err(_) => Some(false),
    }
}

impl Classroom {
    fn progress(&self) -> PathBuf {
        self.folder.path().join("progress.json")
    }

    /// Marks exercises as passed in the progress file, as earlier checks on a GPU would have.
    fn mark_passed(&self, ids: &[&str]) {
        let entries: Vec<String> = ids
            .iter()
            .map(|id| format!("\"{id}\": {{\"status\": \"pass\", \"prediction\": 1.0}}"))
            .collect();
        let text = format!("{{\"exercises\": {{{}}}}}", entries.join(", "));
        std::fs::write(self.progress(), text).expect("a progress file");
    }

    fn progress_json(&self) -> serde_json::Value {
        let text = std::fs::read_to_string(self.progress()).expect("the progress file");
        serde_json::from_str(&text).expect("JSON")
    }
}

fn list_fits_100_columns_and_marks_what_completes_without_a_gpu() -> Ran {
    let class = Classroom::new();
    let out = class.run(&["list"]);
    assert!(out.status.success(), "{}", said(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        widest(&text) <= 100,
        "`list` is {} columns wide:\n{text}",
        widest(&text)
    );
    assert!(
        exercise::all().any(|e| e.completes_without_gpu()),
        "no exercise can be completed without a GPU: say so in the legend instead"
    );
    for ex in exercise::all() {
        let row = text
            .lines()
            .find(|l| l.contains(&format!(" {} ", ex.id)))
            .unwrap_or_else(|| panic!("no row for {}:\n{text}", ex.id));
        assert_eq!(
            row.contains(" * "),
            ex.completes_without_gpu(),
            "{}: the \"runs on\" column: {row}",
            ex.id
        );
        let gpus = match ex.targets {
            Targets::AnyGpu => " sm_75+ ",
            Targets::Ampere => " sm_80+ ",
            _ => " sm_90a ",
        };
        assert!(row.contains(gpus), "{}: the \"runs on\" column: {row}", ex.id);
    }
    assert!(
        text.contains("Complete means passed") && text.contains("not verified: no GPU"),
        "{text}"
    );
    Ok(())
}

fn the_solution_is_the_lesson_diff_and_shows_only_after_a_pass() -> Ran {
    let class = Classroom::new();
    for ex in exercise::all() {
        let out = class.run(&["solution", ex.id]);
        assert_eq!(out.status.code(), Some(2), "{}", said(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.lines().count() == 1 && stderr.contains("has not passed yet") && out.stdout.is_empty(),
            "{}",
            said(&out)
        );
    }
    let ids: Vec<&str> = exercise::all().map(|e| e.id).collect();
    class.mark_passed(&ids);
    for ex in exercise::all() {
        let out = class.run(&["solution", ex.id]);
        assert!(out.status.success(), "{}", said(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("\n--- ") && text.contains("\n+++ ") && text.contains("\n@@ -"),
            "{text}"
        );
        // Each edit shows reversed: the kernel's lines come back (`+`) for a gap or a bug; for a
        // predict-then-measure, the change is shown as made (`-` the kernel's lines).
        let kernel_side = if ex.kind == Kind::PredictThenMeasure { '-' } else { '+' };
        for edit in ex.edits {
            for line in edit.find.lines().filter(|l| !l.trim().is_empty()) {
                assert!(
                    // A `find` may start and end inside a line.
                    text.lines()
                        .any(|l| l.starts_with([kernel_side, ' ']) && l.contains(line)),
                    "{}: `{line}` is not in the lesson:\n{text}",
                    ex.id
                );
            }
        }
        let closing = match (ex.answer, &ex.prediction) {
            (Some(answer), _) => answer,
            (None, Some(p)) => p.chapter_answer,
            (None, None) => "",
        };
        // Wrapped to the terminal: compared word by word.
        let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(words(&text).contains(&words(closing)), "{}: {text}", ex.id);
    }
    Ok(())
}

fn without_a_gpu_check_says_what_it_did_and_what_is_left_and_counts_changed_files_only() -> Ran {
    if hopper_here() != Some(false) {
        return Err(common::Skip(String::from(
            "check_without_a_gpu: skipped (a GPU is here: checks verify)",
        )));
    }
    common::nvrtc()?;
    let assembles = gemm_ladder::device::libs::find_tool("ptxas").is_some();
    let class = Classroom::new();
    let bug = exercise::find("08.1").expect("exercise 08.1");
    assert!(class.run(&["start", bug.id]).status.success());
    for attempt in 1..=2 {
        let out = class.run(&["check", bug.id]);
        assert_eq!(out.status.code(), Some(NOT_VERIFIED), "{}", said(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let done = if assembles {
            "compiles and assembles for sm_90a: "
        } else {
            "compiles for sm_90a"
        };
        assert!(
            stdout.contains("NOT VERIFIED")
                && stdout.contains(done)
                && stdout.contains("verification needs a GPU")
                && stdout.contains("run the same command on one")
                && out.stderr.is_empty(),
            "{}",
            said(&out)
        );
        let entry = &class.progress_json()["exercises"][bug.id];
        assert_eq!(entry["status"], "compiled", "{entry}");
        // Checking the same file again is not another attempt.
        assert_eq!(entry["attempts"], 1, "check {attempt}: {entry}");
    }
    // A find-the-bug exercise asks for no prediction: --predict is a usage error.
    let out = class.run(&["check", bug.id, "--predict", "1.1"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("asks for no prediction"));
    let path = class.file(bug);
    let edited = std::fs::read_to_string(&path).expect("the file") + "// a change\n";
    std::fs::write(&path, edited).expect("an edit");
    assert_eq!(class.run(&["check", bug.id]).status.code(), Some(NOT_VERIFIED));
    assert_eq!(class.progress_json()["exercises"][bug.id]["attempts"], 2);

    // The one exercise a compiler can complete: its unchanged starter passes, an edited one does not.
    if !assembles {
        eprintln!("check_without_a_gpu: the register count part skipped (ptxas not found)");
        return Ok(());
    }
    for ex in exercise::all().filter(|e| e.completes_without_gpu()) {
        assert!(class.run(&["start", ex.id]).status.success());
        let out = class.run(&["check", ex.id, "--predict", "80"]);
        assert_eq!(out.status.code(), Some(0), "{}", said(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("PASS without a GPU") && stdout.contains("measured:"),
            "{}",
            said(&out)
        );
        let path = class.file(ex);
        let edited = std::fs::read_to_string(&path).expect("the file") + "// a change\n";
        std::fs::write(&path, edited).expect("an edit");
        let out = class.run(&["check", ex.id, "--predict", "80"]);
        assert_eq!(out.status.code(), Some(NOT_VERIFIED), "{}", said(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("not the unchanged starter") && stdout.contains("stays passed"),
            "{}",
            said(&out)
        );
        // The earlier pass stands: a check that cannot run the kernel undoes nothing.
        assert_eq!(class.progress_json()["exercises"][ex.id]["status"], "pass");
        assert!(class.run(&["solution", ex.id]).status.success());
    }
    Ok(())
}

/// `watch` without an id starts at the first exercise not passed and, once its check passes, moves
/// on to the next. The exercise it starts at is one a check passes both with and without a GPU.
fn watch_starts_at_the_first_exercise_not_passed_and_moves_on_when_it_passes() -> Ran {
    use std::io::{BufRead, BufReader};
    common::nvrtc()?;
    let Some(gpu) = hopper_here() else {
        return Err(common::Skip(String::from(
            "watch_moves_on: skipped (a GPU that is not a Hopper)",
        )));
    };
    if !gpu && gemm_ladder::device::libs::find_tool("ptxas").is_none() {
        return Err(common::Skip(String::from(
            "watch_moves_on: skipped (no GPU and no ptxas: nothing can pass)",
        )));
    }
    let all: Vec<&Exercise> = exercise::all().collect();
    let at = all
        .iter()
        .position(|e| e.completes_without_gpu())
        .expect("an exercise that completes without a GPU");
    let (first, next) = (all[at], all[at + 1]);
    let class = Classroom::new();
    let before: Vec<&str> = all[..at].iter().map(|e| e.id).collect();
    class.mark_passed(&before);
    let mut child = class
        .command(&["watch", "--predict", "80", "--no-time"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("running exercise watch");
    // Read until the next exercise's file is written, on a thread, so that a watch that never moves
    // on fails the test after a while instead of blocking it.
    let stdout = child.stdout.take().expect("piped");
    let awaited = next.file_name();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let done = line.contains(&awaited);
            if sender.send(line).is_err() || done {
                break;
            }
        }
    });
    let mut lines = Vec::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    while let Ok(line) = receiver.recv_timeout(deadline.saturating_duration_since(std::time::Instant::now())) {
        let done = line.contains(&next.file_name());
        lines.push(line);
        if done {
            break;
        }
    }
    child.kill().ok();
    child.wait().ok();
    let text = lines.join("\n");
    assert!(
        text.starts_with(&format!("exercise {}", first.id)),
        "watch did not start at {}:\n{text}",
        first.id
    );
    assert!(
        text.contains(&format!("exercise {} passed: on to exercise {}", first.id, next.id))
            && text.contains(&next.file_name()),
        "watch did not move on:\n{text}"
    );
    assert_eq!(class.progress_json()["exercises"][first.id]["status"], "pass");
    Ok(())
}

fn check_all_grades_a_whole_folder_one_line_each_with_a_summary_and_exit_status() -> Ran {
    common::nvrtc()?;
    let Some(gpu) = hopper_here() else {
        return Err(common::Skip(String::from(
            "check_all: skipped (a GPU that is not a Hopper)",
        )));
    };
    // A student's copy of the crate half done, graded with --tree: one gap not filled (does not
    // compile), the rest not started; the checks are recorded in the student's progress file.
    let class = Classroom::new();
    let gap = exercise::all()
        .find(|e| {
            let file = e.kernel_file(&e.student_path(), &starter(e));
            e.kind == Kind::FillTheGap && nvrtc::compile(&file, file.targets.claimed_archs()[0], Output::Ptx).is_err()
        })
        .expect("a fill-the-gap starter whose gap is a compile error");
    assert!(class.run(&["start", gap.id]).status.success());
    let tree = class.folder.path().display().to_string();
    let out = class
        .command(&["check", "--all", "--no-time", "--tree", &tree])
        .env_remove("GEMM_LADDER_EXERCISES")
        .env_remove("GEMM_LADDER_EXERCISE_PROGRESS")
        .output()
        .expect("running the exercise binary");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{}", said(&out));
    let recorded = std::fs::read_to_string(class.folder.path().join(".exercise-progress.json"))
        .expect("the student's progress file");
    assert!(recorded.contains(&format!("\"{}\"", gap.id)), "{recorded}");
    // A teacher's grading records the result, and leaves the student's attempt count alone.
    let recorded: serde_json::Value = serde_json::from_str(&recorded).expect("JSON");
    assert_eq!(recorded["exercises"][gap.id]["status"], "fail", "{recorded}");
    assert_eq!(recorded["exercises"][gap.id]["attempts"], 0, "{recorded}");
    assert!(text.starts_with("Grading ") && text.contains("checked again"), "{text}");
    assert!(widest(&text) <= 100, "{text}");
    for ex in exercise::all() {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{}  ", ex.id)))
            .unwrap_or_else(|| panic!("no line for {}:\n{text}", ex.id));
        let word = if ex.id == gap.id { "FAIL" } else { "not done" };
        assert!(line.contains(word), "{line}");
    }
    assert!(
        text.contains(&format!("{} exercises: 0 passed, 1 failed", exercise::all().count())),
        "{text}"
    );

    // Every solution, with a prediction recorded: all pass on a GPU (0); without one, nothing
    // fails but what needs a run is not verified (6).
    let class = Classroom::new();
    let ids: Vec<&str> = exercise::all().map(|e| e.id).collect();
    class.mark_passed(&ids);
    std::fs::create_dir_all(class.exercises()).expect("the folder");
    for ex in exercise::all() {
        let text = match ex.kind {
            Kind::PredictThenMeasure => starter(ex),
            _ => ex.solution().unwrap_or_else(|e| panic!("{e}")),
        };
        std::fs::write(class.file(ex), text).expect("a solution");
    }
    let out = class.run(&["check", "--all", "--no-time"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let expected = if gpu { 0 } else { NOT_VERIFIED };
    assert_eq!(out.status.code(), Some(expected), "{}", said(&out));
    assert!(text.contains(" 0 failed, 0 not done"), "{text}");
    // One attempt each; a second check of the same file is not another.
    for ex in exercise::all() {
        assert_eq!(class.progress_json()["exercises"][ex.id]["attempts"], 1, "{}", ex.id);
    }
    let out = class.run(&["check", ids[0], "--no-time"]);
    assert_eq!(out.status.code(), Some(expected), "{}", said(&out));
    assert_eq!(class.progress_json()["exercises"][ids[0]]["attempts"], 1);
    Ok(())
}

/// The fields of every record of a CSV text, the header first, read by the `csv` crate.
fn csv_records(text: &str) -> Vec<Vec<String>> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes())
        .records()
        .map(|r| r.expect("a CSV record").iter().map(String::from).collect())
        .collect()
}

fn report_csv_parses_back_names_the_student_and_merges_a_class() -> Ran {
    let class = Classroom::new();
    class.mark_passed(&["01.1"]);
    let awkward = "Ada \"Byron\", L.";
    let out = class.run(&["report", "--csv", "--student", awkward]);
    assert!(out.status.success(), "{}", said(&out));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let records = csv_records(&text);
    assert_eq!(records.len(), 1 + exercise::all().count(), "{text}");
    let header = &records[0];
    for (n, record) in records.iter().enumerate() {
        assert_eq!(
            record.len(),
            header.len(),
            "row {n} has {} fields: {record:?}",
            record.len()
        );
    }
    let kind = header.iter().position(|h| h == "kind").expect("a kind column");
    assert!(
        records.iter().any(|r| r[kind] == Kind::PredictThenMeasure.describe()),
        "no row of a kind with a comma: {text}"
    );
    assert!(records[1..].iter().all(|r| r[0] == awkward), "{text}");

    // The table fits 100 columns (the line naming the progress file aside: a path).
    let out = class.run(&["report", "--student", awkward]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && table.contains(awkward), "{}", said(&out));
    let wide: Vec<&str> = table
        .lines()
        .filter(|l| !l.starts_with("progress file:") && l.chars().count() > 100)
        .collect();
    assert!(wide.is_empty(), "`report` is wider than 100 columns:\n{table}");

    // The name without --student: git's user.name, else the login name.
    let gitconfig = class.folder.path().join("gitconfig");
    std::fs::write(&gitconfig, "[user]\n\tname = Grace From Git\n").expect("a git config");
    let local = Command::new("git")
        .args(["config", "--local", "user.name"])
        .current_dir(ROOT)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let name_with = |global: &Path| {
        let out = class
            .command(&["report", "--csv"])
            .env("GIT_CONFIG_GLOBAL", global)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("USER")
            .env_remove("USERNAME")
            .env("LOGNAME", "grace_login")
            .output()
            .expect("running the exercise binary");
        csv_records(&String::from_utf8_lossy(&out.stdout))[1][0].clone()
    };
    match &local {
        Some(name) => eprintln!("report name: the repository sets user.name ({name}); fallbacks not checked"),
        None => {
            assert_eq!(name_with(&gitconfig), "Grace From Git");
            assert_eq!(name_with(Path::new("/dev/null")), "grace_login");
        }
    }

    // Two students merged: one header, every row, and tables that fit 100 columns.
    let ada = class.folder.path().join("ada.csv");
    let bob = class.folder.path().join("bob.csv");
    std::fs::write(&ada, &text).expect("a report");
    let out = class.run(&["report", "--csv", "--student", "Bob"]);
    std::fs::write(&bob, &out.stdout).expect("a report");
    let (ada, bob) = (ada.display().to_string(), bob.display().to_string());
    let out = class.run(&["report", "--merge", &ada, &bob, "--csv"]);
    assert!(out.status.success(), "{}", said(&out));
    let merged = csv_records(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(merged.len(), 1 + 2 * exercise::all().count());
    assert!(merged.iter().all(|r| r.len() == header.len()));
    let out = class.run(&["report", "--merge", &ada, &bob]);
    let tables = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && tables.contains(awkward) && tables.contains("Bob"),
        "{}",
        said(&out)
    );
    assert!(
        tables.contains(&format!("1 of {}", exercise::all().count())) && widest(&tables) <= 100,
        "{tables}"
    );

    // Not a report, or one student twice: one line, exit status 2.
    let progress = class.progress().display().to_string();
    for files in [vec![progress.as_str()], vec![ada.as_str(), ada.as_str()]] {
        let mut args = vec!["report", "--merge"];
        args.extend(files);
        let out = class.run(&args);
        assert_eq!(out.status.code(), Some(2), "{}", said(&out));
        assert_eq!(
            String::from_utf8_lossy(&out.stderr).lines().count(),
            1,
            "{}",
            said(&out)
        );
    }
    Ok(())
}
/// The first compute capability a README table row names (`sm_80` → 8.0, `sm_100a` → 10.0).
fn first_arch(cell: &str) -> Option<(u32, u32)> {
    let digits: String = cell
        .split("sm_")
        .nth(1)?
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let (major, minor) = digits.split_at(digits.len().checked_sub(1)?);
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// The README's exercise counts are the program's: in "What runs where", a row's "N of M" counts the
/// exercises whose kernel runs on the row's first architecture, of all M there are, and "all M" is
/// every exercise (and every one runs there). Edit the table's numbers when exercises are added.
fn the_readme_counts_the_exercises_as_the_program_does() {
    let readme = std::fs::read_to_string(Path::new(ROOT).join("README.md")).expect("README.md");
    let total = exercise::all().count();
    let mut rows = 0;
    let table = readme
        .split("What runs where")
        .nth(1)
        .expect("the README's \"What runs where\" table");
    let table = table
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'));
    for row in table {
        let cells: Vec<&str> = row.split(" | ").collect();
        let (Some(gpu), Some(last)) = (cells.first(), cells.last()) else {
            continue;
        };
        let number = |text: &str| -> usize {
            let digits: String = text.trim().chars().take_while(char::is_ascii_digit).collect();
            digits
                .parse()
                .unwrap_or_else(|_| panic!("no number in `{text}` of: {row}"))
        };
        let (counted, of) = if let Some((before, after)) = last.split_once(" of ") {
            (number(before.rsplit(' ').next().unwrap_or_default()), number(after))
        } else if let Some(after) = last.strip_prefix("all ") {
            (number(after), number(after))
        } else {
            continue;
        };
        let (major, minor) = first_arch(gpu).unwrap_or_else(|| panic!("no sm_XY in the row: {row}"));
        let runs = exercise::all().filter(|e| e.targets.serves(major, minor)).count();
        assert_eq!(of, total, "README says {of} exercises, the program has {total}: {row}");
        assert_eq!(
            counted, runs,
            "README says {counted} run on sm_{major}{minor}, the program {runs}: {row}"
        );
        rows += 1;
    }
    assert!(
        rows >= 3,
        "the README's \"What runs where\" rows with exercise counts were not found"
    );
}

common::harness::tests!(
    the_readme_counts_the_exercises_as_the_program_does,
    twin_limits_the_list_and_the_next_exercise,
    there_are_exercises_of_every_kind_in_steps_01_to_05,
    every_exercise_s_edits_match_the_current_kernel_exactly_once,
    an_edit_that_does_not_match_once_is_an_error_naming_the_exercise,
    starters_change_the_kernel_and_mark_where_the_work_is,
    every_starter_compiles_and_assembles_or_the_gap_is_a_compile_error_at_file_and_line,
    no_file_under_tests_or_a_step_s_exercises_repeats_a_kernel,
    the_book_names_every_exercise_s_file_and_commands,
    start_and_reset_write_the_starter_made_from_the_current_kernel,
    the_binary_reports_a_gap_at_file_and_line_and_counts_hints,
    on_a_gpu_every_hopper_and_any_gpu_starter_fails_and_every_solution_passes,
    on_a_gpu_every_sm80_starter_fails_and_every_solution_passes,
    list_fits_100_columns_and_marks_what_completes_without_a_gpu,
    the_solution_is_the_lesson_diff_and_shows_only_after_a_pass,
    without_a_gpu_check_says_what_it_did_and_what_is_left_and_counts_changed_files_only,
    watch_starts_at_the_first_exercise_not_passed_and_moves_on_when_it_passes,
    check_all_grades_a_whole_folder_one_line_each_with_a_summary_and_exit_status,
    report_csv_parses_back_names_the_student_and_merges_a_class,
);
