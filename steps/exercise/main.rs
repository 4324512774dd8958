//! `cargo run --release --bin exercise -- [start [NN.K]] | list | check NN.K | hint NN.K | reset NN.K |
//! watch NN.K | report`
//!
//! The classroom loop. Each exercise (`shared/run/exercise.rs`, listed per step in
//! `steps/stepNN_name/exercises.rs`) is a few exact edits of the step's kernel. `start` makes the
//! starter from the kernel this binary was built with and writes it into the student's own folder,
//! `exercises/NN_K_name.cu` (ignored by git); `reset` writes it again. `check`
//! reads it from disk (no rebuild), compiles it with NVRTC, and on a GPU runs it exactly as the step's
//! own kernel is run, at two ragged shapes and a square one, against the step's own kernel and cuBLAS,
//! then times it beside them. Progress (attempts, hints, predictions) goes to a small JSON file in the
//! crate root, `.exercise-progress.json`, which `report` prints for a teacher to collect.

use clap::{Parser, Subcommand};
use cudarc::driver::sys::CUfunction_attribute_enum as FuncAttr;
use gemm_ladder::check::problem::Shape;
use gemm_ladder::check::verify::{self, Check};
use gemm_ladder::device::gpu::Gpu;
use gemm_ladder::device::nvrtc::{self, Output};
use gemm_ladder::error::{exit_with, Error, Result};
use gemm_ladder::run::exercise::{self, Exercise, Kind, Prediction, Quantity};
use gemm_ladder::run::registry::{Format, KernelFile};
use gemm_ladder::run::results::{utc_now_rfc3339, Timing};
use gemm_ladder::run::session::{self, Session};
use gemm_ladder::run::timing::{self, Contender};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use tabled::{settings::Style, Table, Tabled};

/// How long one launch may run before `exercise` reports it as hung, unless GEMM_LADDER_HANG_SECONDS
/// says otherwise: every exercise finishes in well under a second at its shapes.
const HANG_SECONDS: &str = "10";

/// Names the folder the student's files are in, instead of `exercises/` at the crate root.
const FOLDER_VARIABLE: &str = "GEMM_LADDER_EXERCISES";

/// Where progress is kept, unless GEMM_LADDER_EXERCISE_PROGRESS names another file.
const PROGRESS_FILE: &str = ".exercise-progress.json";

#[derive(Debug, Parser)]
#[command(
    version = gemm_ladder::VERSION,
    about = "Exercises of the GEMM ladder: start one, check your file, ask for hints, start over, watch, report.",
    after_help = "The loop: `start` (the first exercise not yet passed, or `start NN.K`) writes the starter \
                  into exercises/; edit it, `check NN.K`, `hint NN.K` when stuck, `reset NN.K` to start \
                  over, `watch NN.K` to re-check on every save. `list` shows them all. Teachers: `report`."
)]
struct Args {
    /// Without a command: `start`, at the first exercise not yet passed.
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Write an exercise's starter into exercises/ (kept if it is there already): `NN.K`, or without
    /// it the first exercise not yet passed.
    Start { id: Option<String> },
    /// Every exercise: id, step, kind, title, and your status.
    List,
    /// Compile your file and, on a GPU, verify it at three shapes and time it beside the step's kernel.
    Check(CheckArgs),
    /// The next hint (one more each time).
    Hint { id: String },
    /// Write the starter again, made from the current kernel (your version is kept as FILE.bak).
    Reset { id: String },
    /// Check again whenever the file is saved (polls every 500 ms; Ctrl-C to stop).
    Watch(CheckArgs),
    /// The progress file as a table a teacher can collect.
    Report {
        /// Comma-separated values instead of a table.
        #[arg(long)]
        csv: bool,
    },
}

#[derive(Debug, Clone, clap::Args)]
struct CheckArgs {
    /// The exercise, `05.1`.
    id: String,
    /// Verify only: no timing.
    #[arg(long)]
    no_time: bool,
    /// Your prediction, for a predict-then-measure exercise (asked on the terminal otherwise).
    #[arg(long, allow_negative_numbers = true)]
    predict: Option<f64>,
    /// Check this file instead of yours in exercises/ (not recorded in the progress file).
    #[arg(long)]
    file: Option<PathBuf>,
    /// Side of the square shape, M = N = K (the ragged ones are fixed).
    #[arg(long, default_value_t = 1024)]
    size: usize,
    /// Timed rounds (default: about a second's worth).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    iters: Option<u32>,
    /// Seed for the random inputs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

impl CheckArgs {
    /// The same options, as `check`'s command line (for `watch`'s child processes).
    fn to_command_line(&self) -> Vec<String> {
        let mut args = vec!["check".to_string(), self.id.clone()];
        if self.no_time {
            args.push("--no-time".into());
        }
        if let Some(p) = self.predict {
            args.extend(["--predict".into(), p.to_string()]);
        }
        if let Some(f) = &self.file {
            args.extend(["--file".into(), f.display().to_string()]);
        }
        args.extend([
            "--size".into(),
            self.size.to_string(),
            "--seed".into(),
            self.seed.to_string(),
        ]);
        if let Some(i) = self.iters {
            args.extend(["--iters".into(), i.to_string()]);
        }
        args
    }
}

fn main() -> std::process::ExitCode {
    gemm_ladder::error::quiet_on_closed_pipe();
    if std::env::var_os("GEMM_LADDER_HANG_SECONDS").is_none() {
        // Before anything reads the deadline (it is read once); nothing else runs yet.
        std::env::set_var("GEMM_LADDER_HANG_SECONDS", HANG_SECONDS);
    }
    let args = Args::parse();
    exit_with(match args.command {
        None => start(None),
        Some(command) => run(command),
    })
}

fn run(command: Command) -> Result<()> {
    match command {
        Command::Start { id } => start(id.as_deref()),
        Command::List => list(),
        Command::Check(c) => check(&c),
        Command::Hint { id } => hint(&id),
        Command::Reset { id } => reset(&id),
        Command::Watch(c) => watch(&c),
        Command::Report { csv } => report(csv),
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

fn find(id: &str) -> Result<&'static Exercise> {
    exercise::find(id).ok_or_else(|| {
        let ids: Vec<&str> = exercise::all().map(|e| e.id).collect();
        Error::Usage(format!("there is no exercise {id}; there are: {}", ids.join(", ")))
    })
}

// ---------------------------------------------------------------------------------------------
// Progress
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Default, Serialize, Deserialize)]
struct Progress {
    #[serde(default)]
    exercises: BTreeMap<String, Entry>,
}

#[derive(Debug, Default, Clone, Serialize, Deserialize)]
struct Entry {
    /// `pass`, `fail`, or `compiled` (compiled and assembled, not run: no GPU).
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    attempts: u32,
    #[serde(default)]
    hints_shown: u32,
    /// When it was last checked (UTC).
    #[serde(default)]
    last: Option<String>,
    /// One line on the last check's outcome.
    #[serde(default)]
    last_result: Option<String>,
    #[serde(default)]
    prediction: Option<f64>,
    #[serde(default)]
    measurement: Option<f64>,
    #[serde(default)]
    unit: Option<String>,
}

fn progress_path() -> PathBuf {
    match std::env::var_os("GEMM_LADDER_EXERCISE_PROGRESS") {
        Some(p) => PathBuf::from(p),
        None => root().join(PROGRESS_FILE),
    }
}

impl Progress {
    fn load() -> Result<Progress> {
        let path = progress_path();
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|e| Error::Other(format!("{} is not a progress file: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Progress::default()),
            Err(e) => Err(Error::io(format!("reading {}", path.display()))(e)),
        }
    }

    fn save(&self) -> Result<()> {
        let path = progress_path();
        let text = serde_json::to_string_pretty(self).map_err(|e| Error::Other(e.to_string()))?;
        std::fs::write(&path, text + "\n").map_err(Error::io(format!("writing {}", path.display())))
    }

    fn entry(&mut self, id: &str) -> &mut Entry {
        self.exercises.entry(id.to_string()).or_default()
    }
}

fn status_of(progress: &Progress, id: &str) -> String {
    progress
        .exercises
        .get(id)
        .and_then(|e| e.status.clone())
        .unwrap_or_else(|| "not tried".into())
}

// ---------------------------------------------------------------------------------------------
// list, hint, reset, report
// ---------------------------------------------------------------------------------------------

#[derive(Tabled)]
struct ListRow {
    id: &'static str,
    step: String,
    kind: &'static str,
    title: &'static str,
    file: String,
    status: String,
    hints: String,
}

fn list() -> Result<()> {
    let progress = Progress::load()?;
    let rows: Vec<ListRow> = exercise::all()
        .map(|e| ListRow {
            id: e.id,
            step: format!("step{:02}", e.step),
            kind: e.kind.describe(),
            title: e.title,
            file: student_file(e).1,
            status: match progress.exercises.get(e.id).and_then(|p| p.status.clone()) {
                Some(status) => status,
                None if student_file(e).0.is_file() => "not tried".into(),
                None => "not started".into(),
            },
            hints: format!(
                "{}/{}",
                progress.exercises.get(e.id).map_or(0, |p| p.hints_shown),
                e.hints.len()
            ),
        })
        .collect();
    println!("{}", Table::new(rows).with(Style::rounded()));
    println!(
        "`cargo run --release --bin exercise -- start NN.K` writes the file; edit it, then \
         `cargo run --release --bin exercise -- check NN.K`."
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
        "exercise {} · hint {next} of {total}:\n  {}",
        ex.id,
        ex.hints[next as usize - 1]
    );
    if entry.hints_shown >= total {
        println!("(that was the last one)");
    }
    entry.hints_shown = next;
    progress.save()
}

/// The first exercise, in ladder order, whose last check did not pass; `None` when all have.
fn first_not_passed(progress: &Progress) -> Option<&'static Exercise> {
    exercise::all().find(|e| status_of(progress, e.id) != "pass")
}

fn start(id: Option<&str>) -> Result<()> {
    let ex = match id {
        Some(id) => find(id)?,
        None => match first_not_passed(&Progress::load()?) {
            Some(ex) => ex,
            None => {
                println!("every exercise has passed: `cargo run --release --bin exercise -- report` shows them");
                return Ok(());
            }
        },
    };
    let (path, shown) = student_file(ex);
    println!(
        "exercise {} · step {:02} · {} · {}",
        ex.id,
        ex.step,
        ex.kind.describe(),
        ex.title
    );
    if path.is_file() {
        println!(
            "  {shown} is there already, with your work in it (`exercise reset {}` starts over)",
            ex.id
        );
    } else {
        write_starter(ex, &path)?;
        println!("  wrote {shown}, the step's kernel with the exercise's change");
    }
    print!("{}", exercise::wrap(ex.intro, " ", exercise::COMMENT_COLUMNS));
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
    if let Ok(current) = std::fs::read_to_string(&path) {
        if current == starter {
            println!("{shown} is already the starter");
            return Ok(());
        }
        let backup = PathBuf::from(format!("{}.bak", path.display()));
        std::fs::write(&backup, current).map_err(Error::io(format!("writing {}", backup.display())))?;
        println!("your version is kept in {}", backup.display());
    }
    write_starter(ex, &path)?;
    println!("{shown} is the starter again, made from the current kernel");
    Ok(())
}

#[derive(Tabled)]
struct ReportRow {
    exercise: &'static str,
    kind: &'static str,
    status: String,
    attempts: u32,
    #[tabled(rename = "hints used")]
    hints: String,
    #[tabled(rename = "last checked")]
    last: String,
    #[tabled(rename = "prediction vs measurement")]
    prediction: String,
}

fn number(v: Option<f64>) -> String {
    v.map_or("—".into(), |v| format!("{v:.3}"))
}

/// One CSV field (RFC 4180): quoted, with its quotes doubled, when it holds a comma, a quote or a
/// line break ("predict, then measure" does).
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

fn report(csv: bool) -> Result<()> {
    let progress = Progress::load()?;
    let rows: Vec<ReportRow> = exercise::all()
        .map(|e| {
            let entry = progress.exercises.get(e.id).cloned().unwrap_or_default();
            ReportRow {
                exercise: e.id,
                kind: e.kind.describe(),
                status: status_of(&progress, e.id),
                attempts: entry.attempts,
                hints: format!("{}/{}", entry.hints_shown, e.hints.len()),
                last: entry.last.clone().unwrap_or_else(|| "—".into()),
                prediction: match &e.prediction {
                    Some(p) => format!(
                        "{} vs {} {}",
                        number(entry.prediction),
                        number(entry.measurement),
                        p.unit
                    ),
                    None => String::new(),
                },
            }
        })
        .collect();
    // The student: $USER, else the other names shells and Windows set, else "unknown".
    let who = ["USER", "LOGNAME", "USERNAME"]
        .iter()
        .find_map(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
        .unwrap_or_else(|| "unknown".into());
    if csv {
        println!("user,exercise,kind,status,attempts,hints used,last checked,prediction,measurement,unit");
        for e in exercise::all() {
            let entry = progress.exercises.get(e.id).cloned().unwrap_or_default();
            let fields = [
                who.clone(),
                e.id.to_string(),
                e.kind.describe().to_string(),
                status_of(&progress, e.id).to_string(),
                entry.attempts.to_string(),
                entry.hints_shown.to_string(),
                entry.last.unwrap_or_default(),
                entry.prediction.map(|v| v.to_string()).unwrap_or_default(),
                entry.measurement.map(|v| v.to_string()).unwrap_or_default(),
                e.prediction.as_ref().map(|p| p.unit).unwrap_or_default().to_string(),
            ];
            let line: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
            println!("{}", line.join(","));
        }
        return Ok(());
    }
    let passed = rows.iter().filter(|r| r.status == "pass").count();
    println!(
        "exercise report · {who} · {} · {passed} of {} passed · {}",
        progress_path().display(),
        rows.len(),
        utc_now_rfc3339()
    );
    println!("{}", Table::new(rows).with(Style::rounded()));
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// check
// ---------------------------------------------------------------------------------------------

/// What a check found, short of an error.
struct Outcome {
    /// `pass`, or `compiled` (no GPU).
    status: &'static str,
    summary: String,
    measurement: Option<f64>,
    /// Without a GPU: why it could not run (returned as the exit status after recording).
    no_gpu: Option<Error>,
}

fn ask_prediction(ex: &Exercise, prediction: &Prediction, given: Option<f64>) -> Result<f64> {
    println!("predict: {}  [{}]", prediction.question, prediction.unit);
    if let Some(v) = given {
        println!("your prediction: {v} {}", prediction.unit);
        return Ok(v);
    }
    if !std::io::stdin().is_terminal() {
        return Err(Error::Usage(format!(
            "exercise {} asks for a prediction first: pass --predict VALUE (stdin is not a terminal)",
            ex.id
        )));
    }
    let stdin = std::io::stdin();
    for _ in 0..3 {
        print!("your prediction ({}): ", prediction.unit);
        std::io::stdout().flush().ok();
        let mut line = String::new();
        if stdin
            .lock()
            .read_line(&mut line)
            .map_err(Error::io("reading the prediction"))?
            == 0
        {
            break;
        }
        match line.trim().trim_end_matches(['×', 'x']).trim().parse::<f64>() {
            Ok(v) if v.is_finite() => return Ok(v),
            _ => println!("a number, please"),
        }
    }
    Err(Error::Usage(format!(
        "exercise {} needs a number as its prediction (or --predict VALUE)",
        ex.id
    )))
}

fn check(args: &CheckArgs) -> Result<()> {
    let ex = find(&args.id)?;
    let record = args.file.is_none();
    let (shown, source) = match &args.file {
        Some(f) => (
            f.display().to_string(),
            std::fs::read_to_string(f).map_err(Error::io(format!("reading {}", f.display())))?,
        ),
        None => (student_file(ex).1, read_student_file(ex)?),
    };
    println!(
        "exercise {} · step {:02} · {} · {}\n  file: {shown}",
        ex.id,
        ex.step,
        ex.kind.describe(),
        ex.title
    );
    let prediction = match &ex.prediction {
        Some(p) => Some(ask_prediction(ex, p, args.predict)?),
        None => None,
    };
    let mut progress = if record { Progress::load()? } else { Progress::default() };
    {
        let entry = progress.entry(ex.id);
        entry.attempts += 1;
        entry.last = Some(utc_now_rfc3339());
        entry.status = Some("fail".into());
        // Overwritten below unless the process never comes back (a hang ends it with exit code 3).
        entry.last_result = Some("did not come back: hung or crashed".into());
        entry.prediction = prediction;
        entry.measurement = None;
        entry.unit = ex.prediction.as_ref().map(|p| p.unit.to_string());
    }
    if record {
        progress.save()?;
    }
    let file = ex.kernel_file(&shown, &source);
    let outcome = run_check(ex, &file, args);
    let entry = progress.entry(ex.id);
    let result = match outcome {
        Ok(outcome) => {
            entry.status = Some(outcome.status.into());
            entry.last_result = Some(outcome.summary.clone());
            entry.measurement = outcome.measurement;
            if let (Some(p), Some(predicted)) = (&ex.prediction, prediction) {
                println!("\n  {:<16}{predicted} {}", "you predicted:", p.unit);
                match outcome.measurement {
                    Some(m) => println!("  {:<16}{m:.3} {}", "measured:", p.unit),
                    None => println!("  {:<16}nothing yet (needs a GPU and the timing loop)", "measured:"),
                }
                println!("  {:<16}{}", "the chapter:", p.chapter_answer);
            }
            println!("\n{}", outcome.summary);
            if let (Some(answer), "pass") = (ex.answer, outcome.status) {
                println!("  why: {answer}");
            }
            outcome.no_gpu.map_or(Ok(()), Err)
        }
        Err(e) => {
            let first = e.to_string().lines().next().unwrap_or_default().to_string();
            entry.last_result = Some(first);
            if ex.kind != Kind::PredictThenMeasure && matches!(e, Error::Compile { .. }) {
                eprintln!("(`cargo run --release --bin exercise -- hint {}` for a hint)", ex.id);
            }
            Err(e)
        }
    };
    if record {
        progress.save()?;
    }
    result
}

fn run_check(ex: &Exercise, file: &KernelFile, args: &CheckArgs) -> Result<Outcome> {
    let quantity = ex.prediction.as_ref().and_then(|p| Quantity::of_unit(p.unit));
    let gpu = match Gpu::open() {
        Ok(gpu) => gpu,
        Err(why) => return compile_only(file, quantity, why),
    };
    let step = ex.step_def();
    if !file.targets.serves(gpu.major, gpu.minor) {
        return Err(Error::Unsupported {
            step: format!("exercise {}", ex.id),
            needs: file.targets.describe().into(),
            found: format!("{} (compute capability {}.{})", gpu.info.name, gpu.major, gpu.minor),
        });
    }
    let (function, arch) = session::load_file(&gpu, file)?;
    let attribute = |a: FuncAttr| function.get_attribute(a).ok().map(|v| v as u32);
    let registers = attribute(FuncAttr::CU_FUNC_ATTRIBUTE_NUM_REGS);
    let local = attribute(FuncAttr::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
    println!(
        "  compiled for {arch}: {} registers per thread, {} bytes of local memory per thread",
        registers.map_or("?".into(), |r| r.to_string()),
        local.map_or("?".into(), |l| l.to_string())
    );
    let what = format!("exercise {} ({})", ex.id, file.path);
    let shapes = ex.shapes(args.size);
    let mut gpu = gpu;
    let mut timed: Option<Vec<Timing>> = None;
    for (n, &shape) in shapes.iter().enumerate() {
        step.format.check(shape, &what)?;
        let mut session = Session::new(gpu, shape, args.seed)?;
        let checks = verify_at(&mut session, ex, &function, file, &what)?;
        println!("  {shape}:");
        for c in &checks {
            let result = match (&c.passed, &c.first_failure) {
                (true, _) => "pass".to_string(),
                (false, Some(at)) => format!("FAIL: {at}"),
                (false, None) => "FAIL".to_string(),
            };
            println!(
                "    against {:<28} rel. Frobenius {:.2e} (bound {:.1e})  {result}",
                c.against, c.rel_fro, c.rel_fro_bound
            );
        }
        if let Some(failed) = checks.iter().find(|c| !c.passed) {
            return Err(Error::Verification(verify::failure_line(
                &format!("{what} at {shape}"),
                failed,
            )));
        }
        let last = n + 1 == shapes.len();
        if last && !args.no_time {
            timed = Some(time_at(&session, ex, &function, file, shape, args.iters)?);
        }
        gpu = session.into_gpu();
    }
    let mut summary = format!(
        "PASS: exercise {} agrees with step{:02} and cuBLAS at {}",
        ex.id,
        ex.step,
        shapes.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ")
    );
    if let Some(t) = &timed {
        summary += &format!(
            "; {:.3} ms at {}, {:.2}× step{:02}'s time",
            t[0].median_ms,
            shapes.last().expect("three shapes"),
            t[0].median_ms / t[1].median_ms,
            ex.step
        );
    }
    let measurement = match (quantity, &timed) {
        (Some(Quantity::Registers), _) => registers.map(f64::from),
        (Some(Quantity::Tflops), Some(t)) => Some(t[0].tflops),
        (Some(Quantity::Milliseconds), Some(t)) => Some(t[0].median_ms),
        (Some(Quantity::TimeRatio), Some(t)) => Some(t[0].median_ms / t[1].median_ms),
        _ => None,
    };
    Ok(Outcome {
        status: "pass",
        summary,
        measurement,
        no_gpu: None,
    })
}

/// Without a GPU: compile (errors name the file and line) and assemble with ptxas where it is
/// installed, for the architecture the lent GPUs run.
fn compile_only(file: &KernelFile, quantity: Option<Quantity>, why: Error) -> Result<Outcome> {
    let arch = file.targets.arch_for_device(9, 0);
    let ptx = nvrtc::compile(file, arch, Output::Ptx)?;
    if !ptx.log.is_empty() {
        eprintln!("{} ({arch}): NVRTC says:\n{}", file.path, ptx.log);
    }
    let assembled = nvrtc::assemble(&ptx.bytes, arch, file.path)?;
    let registers = assembled.as_ref().and_then(|a| a.registers);
    let how = match &assembled {
        Some(a) => format!(
            "compiled and assembled for {arch}: {} registers per thread, {} bytes spilled",
            a.registers.map_or("?".into(), |r| r.to_string()),
            a.spill_bytes
        ),
        None => format!("compiled for {arch} (ptxas not found: not assembled)"),
    };
    println!("  {how}");
    Ok(Outcome {
        status: "compiled",
        summary: format!("{how}; running and verifying it needs a GPU"),
        measurement: match quantity {
            Some(Quantity::Registers) => registers.map(f64::from),
            _ => None,
        },
        no_gpu: Some(why),
    })
}

/// Runs the student's kernel at the session's shape and compares it with the step's own kernel and
/// cuBLAS (for MXFP8, also the exact product), with the harness's bounds.
fn verify_at(
    session: &mut Session,
    ex: &Exercise,
    function: &cudarc::driver::CudaFunction,
    file: &KernelFile,
    what: &str,
) -> Result<Vec<Check>> {
    session.verify_beside(ex.step, function, file.launch, what)
}

/// The student's kernel, the step's own and cuBLAS bf16 in one alternating loop at `shape`.
fn time_at(
    session: &Session,
    ex: &Exercise,
    function: &cudarc::driver::CudaFunction,
    file: &KernelFile,
    shape: Shape,
    iters: Option<u32>,
) -> Result<Vec<Timing>> {
    let step = ex.step_def();
    let format = step.format;
    let operands = |i: usize| match format {
        Format::Bf16 => Ok(session.operands(i)),
        Format::Mxfp8 => session.mx_operands(i),
    };
    let mine = format!("exercise {}", ex.id);
    let own = step.binary();
    let mut student = |i: usize| (file.launch)(function, &session.gpu.stream, &operands(i)?);
    let mut reference = |i: usize| session.launch(step.id, i);
    let mut cublas = |i: usize| session.launch_cublas_bf16(i);
    let mut contenders = [
        Contender {
            name: &mine,
            launch: &mut student,
        },
        Contender {
            name: &own,
            launch: &mut reference,
        },
        Contender {
            name: "cuBLAS bf16",
            launch: &mut cublas,
        },
    ];
    let measured = timing::measure(&session.gpu, shape, iters, &mut contenders)?;
    let t = measured.timings;
    println!("  timed at {shape}, alternating:");
    for (name, timing) in [&mine, &own, &"cuBLAS bf16".to_string()].iter().zip(&t) {
        println!(
            "    {name:<14} {:>9.3} ms  {:>7.2} TFLOPS  {:>6.2}× {own}'s time",
            timing.median_ms,
            timing.tflops,
            timing.median_ms / t[1].median_ms
        );
    }
    Ok(t)
}

// ---------------------------------------------------------------------------------------------
// watch
// ---------------------------------------------------------------------------------------------

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Each check runs in a child process (`exercise check`), so a hung kernel, which ends its process
/// with exit code 3, or a crashed one does not end the watch.
fn watch(args: &CheckArgs) -> Result<()> {
    let ex = find(&args.id)?;
    let path = match &args.file {
        Some(f) => f.clone(),
        None => {
            let (path, shown) = student_file(ex);
            if !path.is_file() {
                write_starter(ex, &path)?;
                println!("wrote {shown}, the starter");
            }
            path
        }
    };
    let me = std::env::current_exe().map_err(Error::io("finding this program"))?;
    let mut seen = None;
    loop {
        let now = modified(&path);
        if now != seen {
            seen = now;
            println!("\n──── {} ────", utc_now_rfc3339());
            let status = std::process::Command::new(&me)
                .args(args.to_command_line())
                .status()
                .map_err(Error::io("running `exercise check`"))?;
            let said = match status.code() {
                Some(0) => "passed".to_string(),
                Some(3) => "hung (exit code 3)".to_string(),
                Some(c) => format!("exit code {c}"),
                None => "ended by a signal".to_string(),
            };
            println!(
                "──── {said}; watching {} (save to check again, Ctrl-C to stop)",
                path.display()
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[cfg(test)]
mod tests {
    use super::csv_field;

    #[test]
    fn csv_fields_with_commas_or_quotes_are_quoted() {
        assert_eq!(csv_field("pass"), "pass");
        assert_eq!(csv_field("predict, then measure"), "\"predict, then measure\"");
        assert_eq!(csv_field("a \"b\""), "\"a \"\"b\"\"\"");
        // Every row of a report has as many fields as the header, whatever the kind's text.
        let row = ["me", "08.3", "predict, then measure", "pass"].map(csv_field).join(",");
        let mut fields = 0;
        let mut quoted = false;
        for c in row.chars() {
            match c {
                '"' => quoted = !quoted,
                ',' if !quoted => fields += 1,
                _ => {}
            }
        }
        assert_eq!(fields + 1, 4, "{row}");
    }
}
