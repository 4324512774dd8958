//! `cargo run --release --bin exercise -- [start [NN.K]] | list | check NN.K | check --all |
//! hint NN.K | reset NN.K | watch [NN.K] | solution NN.K | report [--csv] [--merge FILES…]`
//!
//! The classroom loop. Each exercise (`shared/run/exercise.rs`, listed per step in
//! `steps/stepNN_name/exercises.rs`) is a few exact edits of the step's kernel. `start` makes the
//! starter from the kernel this binary was built with and writes it into the student's own folder,
//! `exercises/NN_K_name.cu` (ignored by git); `reset` writes it again. `check` (`check.rs`) reads it
//! from disk (no rebuild), compiles it with NVRTC, and on a GPU runs it exactly as the step's own
//! kernel is run, against the step's own kernel and cuBLAS; `check --all` grades the whole folder;
//! `watch` checks on every save and moves on when a check passes; `solution` shows the lesson once
//! passed. Progress goes to a small JSON file (`progress.rs`), which `report` (`report.rs`) prints
//! for a teacher to collect and `report --merge` gathers into a class.

mod check;
mod progress;
mod report;

use check::CheckOptions;
use clap::{Parser, Subcommand};
use gemm_ladder::error::{exit_with, Error, Result};
use gemm_ladder::run::exercise::{self, Exercise};
use gemm_ladder::run::registry::{Targets, Twin};
use progress::{Progress, PASS};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use tabled::{settings::Style, Table, Tabled};

/// How long one launch may run before `exercise` reports it as hung, unless GEMM_LADDER_HANG_SECONDS
/// says otherwise: every exercise finishes in well under a second at its shapes.
const HANG_SECONDS: &str = "10";

/// Names the folder the student's files are in, instead of `exercises/` at the crate root.
const FOLDER_VARIABLE: &str = "GEMM_LADDER_EXERCISES";

/// Set by `check --all --tree` for its children: a teacher's check, which counts no attempt.
pub const GRADING_VARIABLE: &str = "GEMM_LADDER_GRADING";

/// `--help`'s closing text: the loop, the variables, and every exit status.
const AFTER_HELP: &str = "\
The loop: `exercise` (or `start NN.K`) writes the first exercise not yet passed into exercises/;
edit it, `check NN.K`, `hint NN.K` when stuck, `reset NN.K` to start over. `watch` checks on every
save and moves on to the next exercise when one passes. `solution NN.K` shows the lesson once the
exercise has passed. Teachers: `check --all --tree TREE` grades a student's copy of the crate (their
exercises/, recorded in their progress file), `report --csv` writes one student's progress,
`report --merge FILES...` gathers a class.

Files: GEMM_LADDER_EXERCISES=DIR is the student's folder (default exercises/ in the crate),
GEMM_LADDER_EXERCISE_PROGRESS=FILE the progress file (default .exercise-progress.json there).

Without a GPU, `check` compiles and assembles your file and stops there (exit status 6): only an
exercise marked * in `list`'s \"runs on\" column can be completed without one.

Exit status:
  0  done; `check`: passed; `check --all`: every exercise passed
  1  `check`: a wrong result; `check --all`: an exercise failed, hung, does not compile, or is
     not done (no file, no prediction)
  2  usage: no such exercise, file not started, no prediction, solution before a pass, a bad
     report file
  3  `check`: the kernel hung (GEMM_LADDER_HANG_SECONDS, 10 s by default)
  4  environment: NVRTC (or cuBLAS, on a GPU) not found
  5  `check`: your file does not compile or assemble; an I/O error
  6  not verified: it compiles and assembles, but there is no GPU to run it on: run the same
     command on one";

#[derive(Debug, Parser)]
#[command(
    version = gemm_ladder::VERSION,
    about = "Exercises of the GEMM ladder: start one, check your file, ask for hints, start over, \
             watch, see the solution, report.",
    after_help = AFTER_HELP
)]
struct Args {
    /// Without a command: `start`, at the first exercise not yet passed that runs on this GPU.
    #[command(subcommand)]
    command: Option<Command>,
    /// Only the exercises of one twin of steps 04–11 (hopper: sm90.cu, sm80: sm80.cu, blackwell:
    /// sm100.cu), for `list` and for choosing the next exercise; steps 01–03's belong to every twin.
    #[arg(long, value_enum, global = true)]
    twin: Option<Twin>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Write an exercise's starter into exercises/ (kept if it is there already): `NN.K`, or without
    /// it the first exercise not yet passed.
    Start {
        /// The exercise, `05.1` (`5.1` works too); without it, the first not yet passed.
        id: Option<String>,
    },
    /// Every exercise: id, kind, title, your status, hints, and whether it needs a GPU.
    List,
    /// Compile your file and, on a GPU, verify it at three shapes and time it beside the step's
    /// kernel; `--all`: every exercise of the folder, one line each.
    Check {
        /// The exercise, `05.1`.
        #[arg(required_unless_present = "all")]
        id: Option<String>,
        /// Every exercise of the student's folder, each in its own process, then a summary.
        #[arg(long, conflicts_with_all = ["id", "file", "predict"])]
        all: bool,
        /// With --all: a student's copy of the crate, whose exercises/ are checked again here and
        /// whose progress file records the results (its attempt counts left as they are).
        #[arg(long)]
        tree: Option<PathBuf>,
        #[command(flatten)]
        options: CheckOptions,
    },
    /// The next hint (one more each time).
    Hint {
        /// The exercise, `05.1`.
        id: String,
    },
    /// Write the starter again, made from the current kernel (your version is kept as FILE.bak).
    Reset {
        /// The exercise, `05.1`.
        id: String,
    },
    /// Check on every save (polls every 500 ms; Ctrl-C to stop), and move on to the next exercise
    /// not yet passed when a check passes; without an id, start at the first not yet passed.
    Watch {
        /// The exercise to start at, `05.1`; without it, the first not yet passed.
        id: Option<String>,
        #[command(flatten)]
        options: CheckOptions,
    },
    /// The lesson, once the exercise has passed: your starter against the solution, as a diff.
    Solution {
        /// The exercise, `05.1`.
        id: String,
    },
    /// Your progress as a table (or CSV) a teacher can collect; `--merge` gathers a class.
    Report {
        /// Comma-separated values (RFC 4180) instead of a table.
        #[arg(long)]
        csv: bool,
        /// Your name in the report (default: `git config user.name`, else $USER).
        #[arg(long, conflicts_with = "merge")]
        student: Option<String>,
        /// Students' `report --csv` files, merged into one class: one CSV with --csv, else tables.
        #[arg(long, num_args = 1.., value_name = "FILE")]
        merge: Vec<PathBuf>,
    },
}

/// How a command ended, short of an error, as its exit status (`--help` lists them all).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    Done = 0,
    /// `check --all`: an exercise failed or is not done.
    NotPassed = 1,
    /// `check --all`: the environment (a child's exit status 4), whose message was printed.
    Environment = 4,
    /// Compiled and assembled, not run: no GPU.
    NotVerified = 6,
}

fn main() -> ExitCode {
    gemm_ladder::embed_kernel_sources!();
    gemm_ladder::error::quiet_on_closed_pipe();
    if std::env::var_os("GEMM_LADDER_HANG_SECONDS").is_none() {
        // Before anything reads the deadline (it is read once); nothing else runs yet.
        std::env::set_var("GEMM_LADDER_HANG_SECONDS", HANG_SECONDS);
    }
    let args = Args::parse();
    set_scope(args.twin);
    match args.command.map_or_else(|| start(None).map(|()| Ending::Done), run) {
        Ok(ending) => ExitCode::from(ending as u8),
        Err(e) => exit_with(Err(e)),
    }
}

fn run(command: Command) -> Result<Ending> {
    let done = |result: Result<()>| result.map(|()| Ending::Done);
    match command {
        Command::Start { id } => done(start(id.as_deref())),
        Command::List => done(list()),
        Command::Check {
            all: true,
            tree,
            options,
            ..
        } => {
            if let Some(tree) = tree {
                use_tree(&tree)?;
                println!(
                    "{}",
                    gemm_ladder::error::wrapped(
                        &format!(
                            "Grading {}: each file is checked again here, and the results replace the \
                             statuses in its progress file, which are otherwise the student's own word (a \
                             student can edit that file); the student's attempt counts are left alone.",
                            tree.display()
                        ),
                        ""
                    )
                );
            }
            check::check_all(&options)
        }
        Command::Check { tree: Some(_), .. } => Err(Error::Usage(
            "--tree names a student's copy of the crate for --all: `check --all --tree TREE`".into(),
        )),
        Command::Check { id, options, .. } => check::check(&id.expect("clap requires it"), &options),
        Command::Hint { id } => done(hint(&id)),
        Command::Reset { id } => done(reset(&id)),
        Command::Watch { id, options } => check::watch(id.as_deref(), &options),
        Command::Solution { id } => done(solution(&id)),
        Command::Report { csv, merge, .. } if !merge.is_empty() => done(report::merge(&merge, csv)),
        Command::Report { csv, student, .. } => done(report::report(csv, student.as_deref())),
    }
}

// ---------------------------------------------------------------------------------------------
// Where things are
// ---------------------------------------------------------------------------------------------

/// The crate root: the current folder when it is one (a copy the student works in), else the crate
/// this binary was built from.
fn root() -> PathBuf {
    let here = std::env::current_dir().unwrap_or_default();
    if here.join("Cargo.toml").is_file() && here.join("steps").is_dir() {
        here
    } else {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
    }
}

/// The student's file of exercise `ex`: `exercises/NN_K_name.cu` under the crate root, or in the
/// folder GEMM_LADDER_EXERCISES names; and its name in messages (the path from the crate root, or
/// the whole path in that folder).
fn student_file(ex: &Exercise) -> (PathBuf, String) {
    match std::env::var_os(FOLDER_VARIABLE) {
        Some(folder) => {
            let path = PathBuf::from(folder).join(ex.file_name());
            let shown = path.display().to_string();
            (path, shown)
        }
        None => (root().join(ex.student_path()), ex.student_path()),
    }
}

/// Writes the starter, made from the current kernel, to the student's file (and its folder).
fn write_starter(ex: &Exercise, path: &Path) -> Result<()> {
    let starter = ex.starter()?;
    if let Some(folder) = path.parent() {
        std::fs::create_dir_all(folder).map_err(Error::io(format!("creating {}", folder.display())))?;
    }
    std::fs::write(path, starter).map_err(Error::io(format!("writing {}", path.display())))
}

/// The student's file, read; a usage error naming `start` when it has not been written yet.
fn read_student_file(ex: &Exercise) -> Result<String> {
    let (path, shown) = student_file(ex);
    match std::fs::read_to_string(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::Usage(format!(
            "{shown} is not there yet: `cargo run --release --bin exercise -- start {}` writes it",
            ex.id
        ))),
        read => read.map_err(Error::io(format!("reading {}", path.display()))),
    }
}

/// Makes `tree`, a student's copy of the crate, the place this process and its children read the
/// student's files (`exercises/`) and progress from, and record to.
fn use_tree(tree: &Path) -> Result<()> {
    let folder = tree.join(exercise::STUDENT_FOLDER);
    if !folder.is_dir() {
        return Err(Error::Usage(format!(
            "{} has no {}/ folder: name a student's copy of the crate",
            tree.display(),
            exercise::STUDENT_FOLDER
        )));
    }
    // Before any thread is started: `check --all` reads them, and its children inherit them.
    std::env::set_var(FOLDER_VARIABLE, folder);
    std::env::set_var(progress::VARIABLE, tree.join(progress::FILE_NAME));
    std::env::set_var(GRADING_VARIABLE, "1");
    Ok(())
}

fn find(id: &str) -> Result<&'static Exercise> {
    exercise::find(id).ok_or_else(|| {
        let ids: Vec<&str> = exercise::all().map(|e| e.id).collect();
        Error::Usage(format!("there is no exercise {id}; there are: {}", ids.join(", ")))
    })
}

// ---------------------------------------------------------------------------------------------
// start, list, hint, reset, solution
// ---------------------------------------------------------------------------------------------

/// The mark in `list`'s "runs on" column for an exercise that can be completed without a GPU.
const WITHOUT_GPU: &str = "*";

/// The GPUs exercise `ex` runs on, in `list`'s "runs on" column, marked [`WITHOUT_GPU`] where it can
/// also be completed without one.
fn runs_on(ex: &Exercise) -> String {
    let gpus = match ex.kernel().targets {
        Targets::AnyGpu => "sm_75+",
        Targets::Ampere => "sm_80+",
        Targets::AmpereFp8 => "sm_89+",
        Targets::AmpereBlockScaled => "sm_120a",
        Targets::Hopper => "sm_90a",
        Targets::Blackwell => "sm_100a",
    };
    match ex.completes_without_gpu() {
        true => format!("{gpus} {WITHOUT_GPU}"),
        false => gpus.to_string(),
    }
}

/// The twin `--twin` limits the exercises to, set once in `main`.
static SCOPE: std::sync::OnceLock<Option<Twin>> = std::sync::OnceLock::new();

fn set_scope(twin: Option<Twin>) {
    let _ = SCOPE.set(twin);
}

/// Whether `ex` is among the exercises `--twin` asks for (all without it).
fn in_scope(ex: &Exercise) -> bool {
    match SCOPE.get().copied().flatten() {
        None => true,
        Some(twin) => ex.targets.twin().is_none_or(|t| t == twin),
    }
}

/// The twin an exercise belongs to, for `list`: `sm80`, `hopper`; `-` for steps 01–03's one kernel.
fn twin_of(ex: &Exercise) -> &'static str {
    ex.targets.twin().map_or("-", |t| t.name())
}

/// The compute capability of the GPU here, if there is one (the driver answers without a context).
fn this_gpu() -> Option<(u32, u32)> {
    static GPU: std::sync::OnceLock<Option<(u32, u32)>> = std::sync::OnceLock::new();
    *GPU.get_or_init(|| gemm_ladder::device::gpu::Gpu::open().ok().map(|g| (g.major, g.minor)))
}

/// [`NOT_HERE`] after the "runs on" of an exercise the GPU here cannot run; nothing without a GPU.
fn runs_here_mark(ex: &Exercise) -> &'static str {
    match this_gpu() {
        Some((major, minor)) if !ex.runs_on(major, minor) => NOT_HERE,
        _ => "",
    }
}

/// Marks, in `list`'s "runs on" column, an exercise that does not run on the GPU here.
const NOT_HERE: &str = " ✗";

/// The first exercise in scope not yet passed that can run here (any, without a GPU).
fn first_to_do(progress: &Progress) -> Option<&'static Exercise> {
    progress.first_not_passed_where(|e| in_scope(e) && this_gpu().is_none_or(|(major, minor)| e.runs_on(major, minor)))
}

/// The exercise's kind, as short as `list`'s 100 columns need.
fn short_kind(ex: &Exercise) -> &'static str {
    match ex.kind {
        exercise::Kind::PredictThenMeasure => "predict+measure",
        _ => ex.kind.describe(),
    }
}

#[derive(Tabled)]
struct ListRow {
    id: &'static str,
    twin: &'static str,
    kind: &'static str,
    title: &'static str,
    status: String,
    hints: String,
    #[tabled(rename = "runs on")]
    runs_on: String,
}

fn list() -> Result<()> {
    let progress = Progress::load()?;
    let rows: Vec<ListRow> = exercise::all()
        .filter(|e| in_scope(e))
        .map(|e| ListRow {
            id: e.id,
            twin: twin_of(e),
            kind: short_kind(e),
            title: e.title,
            status: progress.status(e.id).to_string(),
            hints: format!(
                "{}/{}",
                progress.exercises.get(e.id).map_or(0, |p| p.hints_shown),
                e.hints.len()
            ),
            runs_on: runs_on(e) + runs_here_mark(e),
        })
        .collect();
    println!("{}", Table::new(rows).with(Style::rounded()));
    let here = match this_gpu() {
        None => "no GPU here".to_string(),
        Some((major, minor)) => format!("{NOT_HERE} does not run on this GPU ({major}.{minor})"),
    };
    let folder = std::env::var(FOLDER_VARIABLE).unwrap_or_else(|_| exercise::STUDENT_FOLDER.into());
    println!(
        "\
Your files: {folder}/NN_K_name.cu ({here})
Status: pass, fail, compiled (compiles and assembles; not verified: no GPU), not started (no file
yet, or not checked yet). Twin: the kernel of steps 04–11 an exercise edits (hopper: sm90.cu,
sm80: sm80.cu; `--twin sm80` lists only those and steps 01–03's). Runs on: sm_75+ any NVIDIA GPU
of compute capability 7.5 or newer (T4 and every sm_80+ GPU); sm_80+ 8.0 or newer (A100, L4, RTX
30/40/50, H100, H200); sm_90a a Hopper GPU (H100, H200); ✗ marks one that does not run on the GPU
here. Complete means passed: verified on a GPU, except where {WITHOUT_GPU} marks it: the answer is
ptxas's register count, and the unchanged starter is a correct variant the tests verify on a GPU, so
`check` passes it without one. Without a GPU every other exercise compiles and assembles, and stops
there.
`cargo run --release --bin exercise -- start NN.K` writes the file; edit it, then `check NN.K`."
    );
    Ok(())
}

fn hint(id: &str) -> Result<()> {
    let ex = find(id)?;
    let mut progress = Progress::load()?;
    let entry = progress.entry(ex.id);
    let total = ex.hints.len() as u32;
    let next = (entry.hints_shown + 1).min(total);
    if next == 0 {
        println!("exercise {} has no hints", ex.id);
        return Ok(());
    }
    println!(
        "exercise {} · hint {next} of {total}:\n{}",
        ex.id,
        gemm_ladder::error::wrapped_after("  ", ex.hints[next as usize - 1], "  ")
    );
    if entry.hints_shown >= total {
        println!("(that was the last one)");
    }
    entry.hints_shown = next;
    progress.save()
}

/// Says which exercise it is, writes its starter unless the student's file is there already, and
/// prints what to do: for `start` and for `watch` moving on.
fn open_exercise(ex: &Exercise) -> Result<()> {
    let (path, shown) = student_file(ex);
    println!(
        "exercise {} · step {:02} · {} · {}",
        ex.id,
        ex.step,
        ex.kind.describe(),
        ex.title
    );
    if path.is_file() {
        let unchanged = std::fs::read_to_string(&path).ok() == ex.starter().ok();
        let what = if unchanged {
            "the starter, unchanged"
        } else {
            "with your work in it"
        };
        let said = format!(
            "{shown} is there already, {what} (`exercise reset {}` starts over)",
            ex.id
        );
        println!("{}", gemm_ladder::error::wrapped_after("  ", &said, "  "));
    } else {
        write_starter(ex, &path)?;
        println!("  wrote {shown}, the step's kernel with the exercise's change");
    }
    print!("{}", exercise::wrap(ex.intro, " ", exercise::COMMENT_COLUMNS));
    Ok(())
}

fn start(id: Option<&str>) -> Result<()> {
    let ex = match id {
        Some(id) => find(id)?,
        None => match first_to_do(&Progress::load()?) {
            Some(ex) => ex,
            None => {
                println!("every exercise has passed: `cargo run --release --bin exercise -- report` shows them");
                return Ok(());
            }
        },
    };
    open_exercise(ex)?;
    println!(
        "Edit it, then `cargo run --release --bin exercise -- check {}` (or `watch {}`).",
        ex.id, ex.id
    );
    Ok(())
}

fn reset(id: &str) -> Result<()> {
    let ex = find(id)?;
    let starter = ex.starter()?;
    let (path, shown) = student_file(ex);
    let Ok(current) = std::fs::read_to_string(&path) else {
        write_starter(ex, &path)?;
        println!("wrote {shown}, the starter (there was no file to reset)");
        return Ok(());
    };
    if current == starter {
        println!("{shown} is already the starter");
        return Ok(());
    }
    let backup = PathBuf::from(format!("{}.bak", path.display()));
    std::fs::write(&backup, current).map_err(Error::io(format!("writing {}", backup.display())))?;
    println!("your version is kept in {shown}.bak");
    write_starter(ex, &path)?;
    println!("{shown} is the starter again, made from the current kernel");
    Ok(())
}

/// The lesson as a diff, once the exercise has passed; before, one line that says so.
fn solution(id: &str) -> Result<()> {
    let ex = find(id)?;
    let progress = Progress::load()?;
    let status = progress.status(ex.id);
    if status != PASS {
        return Err(Error::Usage(format!(
            "exercise {} has not passed yet (status: {status}): its solution shows once `check {}` passes",
            ex.id, ex.id
        )));
    }
    println!("exercise {} · {} · {}: the lesson", ex.id, ex.kind.describe(), ex.title);
    print!("{}", ex.lesson()?);
    let why = match (ex.answer, &ex.prediction) {
        (Some(answer), _) => format!("why: {answer}"),
        (None, Some(p)) => format!("the chapter: {}", p.chapter_answer),
        (None, None) => return Ok(()),
    };
    println!("{}", gemm_ladder::error::wrapped(&why, "  "));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_consistent_and_its_help_fits_100_columns() {
        use clap::CommandFactory;
        Args::command().debug_assert();
        assert!(AFTER_HELP.lines().all(|l| l.chars().count() <= 100), "{AFTER_HELP}");
    }
}
