//! `check` (one exercise, or `--all` of them), and `watch`: compile the student's file with NVRTC,
//! and on a GPU run it exactly as the step's own kernel is run, at two ragged shapes and a square
//! one, against the step's own kernel and cuBLAS, then time it beside them. Without a GPU, say what
//! was done (compiled and assembled) and what is left (the run), with its own exit status.

use crate::progress::{Entry, Progress, COMPILED, FAIL, PASS};
use crate::{find, open_exercise, read_student_file, student_file, Ending};
use gemm_ladder::check::problem::Shape;
use gemm_ladder::check::verify::{self, Check};
use gemm_ladder::device::gpu::Gpu;
use gemm_ladder::device::nvrtc::{self, Output};
use gemm_ladder::error::{Error, Result};
use gemm_ladder::run::exercise::{self, Exercise, Kind, Prediction, Quantity};
use gemm_ladder::run::provenance::text_hash;
use gemm_ladder::run::registry::{Format, KernelFile, Targets};
use gemm_ladder::run::results::{utc_now_rfc3339, Timing};
use gemm_ladder::run::session::{self, Session};
use gemm_ladder::run::timing::{self, Contender};
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

/// How `check` runs, shared by `check`, `check --all` and `watch`.
#[derive(Debug, Clone, clap::Args)]
pub struct CheckOptions {
    /// Verify only: no timing.
    #[arg(long)]
    pub no_time: bool,
    /// Your prediction, for a predict-then-measure exercise (asked on the terminal otherwise).
    #[arg(long, allow_negative_numbers = true)]
    pub predict: Option<f64>,
    /// Check this file instead of yours in exercises/ (not recorded in the progress file).
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Side of the square shape, M = N = K (the ragged ones are fixed).
    #[arg(long, default_value_t = 1024)]
    pub size: usize,
    /// Timed rounds (default: about a second's worth).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub iters: Option<u32>,
    /// Seed for the random inputs.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

impl CheckOptions {
    /// `check ID` with these options, as a command line for a child process (`watch`, `--all`).
    fn command_line(&self, id: &str, predict: Option<f64>, no_time: bool) -> Vec<String> {
        let mut args = vec!["check".to_string(), id.to_string()];
        if no_time {
            args.push("--no-time".into());
        }
        if let Some(p) = predict {
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

/// What a check found, short of an error.
struct Outcome {
    /// [`PASS`], or [`COMPILED`] (not run: no GPU).
    status: &'static str,
    summary: String,
    measurement: Option<f64>,
}

fn ask_prediction(ex: &Exercise, prediction: &Prediction, given: Option<f64>) -> Result<f64> {
    // Given (`--predict`, or by `watch`, which asked already), it is shown once, beside the measurement.
    if let Some(v) = given {
        return Ok(v);
    }
    let question = format!("{}  [{}]", prediction.question, prediction.unit);
    println!("{}", gemm_ladder::error::wrapped_after("predict: ", &question, "  "));
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

/// `check ID`: [`Ending::Done`] when it passes, [`Ending::NotVerified`] when it compiled and
/// assembled but there is no GPU to run it; an error (wrong result, hung, compile error) otherwise.
pub fn check(id: &str, options: &CheckOptions) -> Result<Ending> {
    let ex = find(id)?;
    let record = options.file.is_none();
    let (shown, source) = match &options.file {
        Some(f) => (
            f.display().to_string(),
            std::fs::read_to_string(f).map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => Error::Usage(format!("--file {}: no such file", f.display())),
                _ => Error::io(format!("reading {}", f.display()))(e),
            })?,
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
    // A shape the step refuses is a usage error before anything is compiled, GPU or not.
    for shape in ex.shapes(options.size) {
        ex.step_def().format.check(shape, &format!("exercise {}", ex.id))?;
    }
    let prediction = match (&ex.prediction, options.predict) {
        (Some(p), given) => Some(ask_prediction(ex, p, given)?),
        (None, Some(_)) => {
            return Err(Error::Usage(format!(
                "exercise {} asks for no prediction ({}): check it without --predict",
                ex.id,
                ex.kind.describe()
            )))
        }
        (None, None) => None,
    };
    let mut progress = if record { Progress::load()? } else { Progress::default() };
    // A pass stands against a later check that could not run the kernel (no GPU here).
    let earlier_pass = {
        let entry = progress.entry(ex.id);
        (entry.status.as_deref() == Some(PASS)).then(|| (entry.last_result.clone(), entry.measurement))
    };
    {
        let entry = progress.entry(ex.id);
        // A teacher's `check --all --tree` grades the file; the attempts are the student's.
        if std::env::var_os(crate::GRADING_VARIABLE).is_none() {
            entry.count_attempt(text_hash(&source));
        }
        entry.last = Some(utc_now_rfc3339());
        entry.status = Some(FAIL.into());
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
    let outcome = run_check(ex, &file, &source, options);
    let entry = progress.entry(ex.id);
    let result = match outcome {
        Ok(outcome) => {
            entry.status = Some(outcome.status.into());
            entry.last_result = Some(outcome.summary.clone());
            entry.measurement = outcome.measurement;
            let kept_pass = outcome.status == COMPILED && earlier_pass.is_some();
            if let (true, Some((last_result, measurement))) = (kept_pass, earlier_pass) {
                entry.status = Some(PASS.into());
                entry.last_result = last_result;
                entry.measurement = measurement;
            }
            if let (Some(p), Some(predicted)) = (&ex.prediction, prediction) {
                println!("\n  {:<16}{predicted} {}", "you predicted:", p.unit);
                match outcome.measurement {
                    Some(m) => println!("  {:<16}{} {}", "measured:", crate::report::number(Some(m)), p.unit),
                    None if Quantity::of_unit(p.unit) == Some(Quantity::Registers) => {
                        println!(
                            "  {:<16}nothing yet (the register count needs ptxas or a GPU)",
                            "measured:"
                        )
                    }
                    None => println!("  {:<16}nothing yet (needs a GPU and the timing loop)", "measured:"),
                }
                let label = format!("  {:<16}", "the chapter:");
                println!(
                    "{}",
                    gemm_ladder::error::wrapped_after(&label, p.chapter_answer, &" ".repeat(18))
                );
            }
            println!("\n{}", gemm_ladder::error::wrapped(&outcome.summary, "  "));
            if kept_pass {
                println!(
                    "  exercise {} stays passed: a check that cannot run the kernel undoes no pass",
                    ex.id
                );
            }
            if outcome.status == PASS {
                if let Some(answer) = ex.answer {
                    println!("{}", gemm_ladder::error::wrapped_after("  why: ", answer, "  "));
                }
                println!(
                    "  the lesson as a diff: `cargo run --release --bin exercise -- solution {}`",
                    ex.id
                );
                Ok(Ending::Done)
            } else {
                Ok(Ending::NotVerified)
            }
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
        // Read again: a `hint` asked for while the kernel ran is kept; the check's fields are its own.
        let mine = progress.entry(ex.id).clone();
        let mut now = Progress::load()?;
        let entry = now.entry(ex.id);
        *entry = Entry {
            hints_shown: entry.hints_shown,
            ..mine
        };
        now.save()?;
    }
    result
}

fn run_check(ex: &Exercise, file: &KernelFile, source: &str, options: &CheckOptions) -> Result<Outcome> {
    let quantity = ex.quantity();
    let gpu = match Gpu::open() {
        Ok(gpu) => gpu,
        Err(why) => return compile_only(ex, file, source, &why),
    };
    println!("{}", gemm_ladder::device::gpu::cuda_stack_line()?);
    let step = ex.step_def();
    if !file.targets.serves(gpu.major, gpu.minor) {
        return Err(Error::Unsupported {
            step: format!("exercise {}", ex.id),
            needs: file.targets.describe().into(),
            found: format!("{} (compute capability {}.{})", gpu.info.name, gpu.major, gpu.minor),
        });
    }
    let (function, arch) = session::load_file(&gpu, file)?;
    let mut registers = None;
    let what = format!("exercise {} ({})", ex.id, file.path);
    let shapes = ex.shapes(options.size);
    let mut gpu = gpu;
    let mut timed: Option<Vec<Timing>> = None;
    for (n, &shape) in shapes.iter().enumerate() {
        step.format.check(shape, &what)?;
        // The step's own kernel the student's file is compared and timed with is the same twin's.
        let mut session = Session::new(gpu, shape, options.seed)?.with_twin(ex.targets.twin());
        let checks = verify_at(&mut session, ex, &function, file, &what)?;
        if n == 0 {
            // Read from the compilation the launch ran: an sm80 twin's deeper ring where the GPU
            // holds it, compiled from the student's text.
            let ran = session::Ran::of(gemm_ladder::run::loader::ran(&function), *file);
            registers = ran.registers;
            println!(
                "  compiled for {arch}: {} registers per thread, {} bytes of local memory per thread",
                registers.map_or("?".into(), |r| r.to_string()),
                ran.local_bytes.map_or("?".into(), |l| l.to_string())
            );
        }
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
        if last && !options.no_time {
            timed = Some(time_at(&session, ex, &function, file, shape, options.iters)?);
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
        status: PASS,
        summary,
        measurement,
    })
}

/// Why there is no GPU to run on, in a few words.
fn no_gpu_reason(why: &Error) -> String {
    match why {
        Error::NoDriver => "no NVIDIA driver here".into(),
        Error::NoDevice(_) => "no CUDA GPU here".into(),
        other => other.to_string().lines().next().unwrap_or_default().to_string(),
    }
}

/// Without a GPU: compile (errors name the file and line) and assemble with ptxas where it is
/// installed, and say what is left: an sm80 twin's exercise for `sm_80` (the A100, L4 or RTX card a
/// student reads ahead for), the others for the architecture the lent GPUs run. Only an exercise
/// whose verdict needs no run ([`Exercise::completes_without_gpu`]), on its unchanged starter, passes.
fn compile_only(ex: &Exercise, file: &KernelFile, source: &str, why: &Error) -> Result<Outcome> {
    let arch = match file.targets {
        Targets::Ampere => gemm_ladder::device::arch::Arch::SM80,
        targets => targets.arch_for_device(9, 0),
    };
    let ptx = nvrtc::compile(file, arch, Output::Ptx)?;
    if !ptx.log.is_empty() {
        eprintln!("{} ({arch}): NVRTC says:\n{}", file.path, ptx.log);
    }
    let assembled = nvrtc::assemble(&ptx.bytes, arch, file.path)?;
    let registers = assembled.as_ref().and_then(|a| a.registers);
    let done = match &assembled {
        Some(a) => format!(
            "compiles and assembles for {arch}: {} registers per thread, {}",
            a.registers.map_or("?".into(), |r| r.to_string()),
            match a.spill_bytes {
                0 => "no spills".to_string(),
                bytes => format!("{bytes} bytes spilled"),
            }
        ),
        None => format!("compiles for {arch} (not assembled: ptxas not found)"),
    };
    let measurement = match ex.quantity() {
        Some(Quantity::Registers) => registers.map(f64::from),
        _ => None,
    };
    let unchanged = ex.starter().is_ok_and(|starter| starter == source);
    if ex.completes_without_gpu() && unchanged && measurement.is_some() {
        return Ok(Outcome {
            status: PASS,
            summary: format!(
                "PASS without a GPU: exercise {} {done}; the registers are the measurement, and the \
                 unchanged starter is a correct variant that the tests verify on a GPU",
                ex.id
            ),
            measurement,
        });
    }
    let left = match (ex.completes_without_gpu(), unchanged) {
        (true, false) => "your file is not the unchanged starter, so verifying it needs a GPU",
        (true, true) => "its register count needs ptxas (`pip install \"nvidia-cuda-nvcc==13.*\"`) or a GPU",
        (false, _) => "verification needs a GPU",
    };
    Ok(Outcome {
        status: COMPILED,
        summary: format!(
            "NOT VERIFIED: exercise {} {done}; {left} ({}): run the same command on one",
            ex.id,
            no_gpu_reason(why)
        ),
        measurement,
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

/// The student's kernel, the step's own and the step's cuBLAS baseline (bf16 C; for MXFP8, fp32 C on
/// the dequantized inputs) in one alternating loop at `shape`.
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
    let mut cublas = |i: usize| session.launch_baseline(format, i);
    let baseline = gemm_ladder::run::registry::Baseline::of_format(format).label();
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
            name: baseline,
            launch: &mut cublas,
        },
    ];
    let measured = timing::measure(&session.gpu, shape, iters, &mut contenders)?;
    let t = measured.timings;
    println!("  timed at {shape}, alternating:");
    for (name, timing) in [&mine, &own, &baseline.to_string()].iter().zip(&t) {
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
// check --all
// ---------------------------------------------------------------------------------------------

/// The columns `check --all`'s lines are cut to.
const LINE_COLUMNS: usize = 100;

/// What one exercise came to under `check --all` (in the order the summary counts them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Pass,
    /// Compiled and assembled, not run: no GPU.
    NotVerified,
    /// Wrong result, hung, crashed, does not compile: not passed, whatever the machine.
    Fail,
    /// No file, or no prediction yet: the student has not done it.
    NotStarted,
}

impl Verdict {
    /// The word on the exercise's line.
    fn word(&self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::NotVerified => "compiled",
            Verdict::Fail => "FAIL",
            Verdict::NotStarted => "not done",
        }
    }
}

/// The line's reason: the summary for a pass or a compile-only, else the first line that names the
/// error (for a compile log, its first error line).
fn reason(id: &str, stdout: &str, stderr: &str, verdict: Verdict) -> String {
    let named = format!("exercise {id} ");
    let summary = |prefix: &str| {
        stdout.lines().find_map(|l| l.strip_prefix(prefix)).map(|l| {
            let l = l.replacen(&named, "", 1);
            l.trim_start_matches([':', ' ']).to_string()
        })
    };
    let found = match verdict {
        Verdict::Pass => summary("PASS"),
        Verdict::NotVerified => summary("NOT VERIFIED:"),
        _ => stderr.lines().find_map(|l| l.strip_prefix("error: ")).map(|first| {
            let header = first.trim();
            match header.strip_suffix(':') {
                // A compiler's log follows: its first error line says more than the header.
                Some(header) => stderr
                    .lines()
                    .find(|l| l.contains("error") && !l.starts_with("error: "))
                    .map_or(header.to_string(), |l| l.trim().to_string()),
                None => header.to_string(),
            }
        }),
    };
    found.unwrap_or_default()
}

/// `text` cut to `columns` characters, with `…` where it was cut.
fn cut(text: &str, columns: usize) -> String {
    if text.chars().count() <= columns {
        return text.to_string();
    }
    text.chars().take(columns.saturating_sub(1)).collect::<String>() + "…"
}

/// `check --all`: every exercise of the student's folder, each in a child process (a hang ends only
/// that one), one line each, then a summary. Predictions are the ones the progress file recorded.
pub fn check_all(options: &CheckOptions) -> Result<Ending> {
    if !nvrtc::present() {
        return Err(Error::NoNvrtc);
    }
    let progress = Progress::load()?;
    let me = std::env::current_exe().map_err(Error::io("finding this program"))?;
    let folder = student_file(exercise::all().next().expect("exercises")).0;
    let folder = folder.parent().unwrap_or(Path::new("."));
    println!(
        "check --all · {} · progress: {}",
        folder.display(),
        crate::progress::path().display()
    );
    let mut counts = [0usize; 4];
    for ex in exercise::all() {
        let (path, _) = student_file(ex);
        // Only an exercise that asks for a prediction is given one (the others refuse `--predict`).
        let recorded = progress
            .exercises
            .get(ex.id)
            .and_then(|e| e.prediction)
            .filter(|_| ex.prediction.is_some());
        let (verdict, why) = if !path.is_file() {
            (
                Verdict::NotStarted,
                format!("no file yet (`exercise start {}` writes it)", ex.id),
            )
        } else if ex.prediction.is_some() && recorded.is_none() {
            (
                Verdict::NotStarted,
                format!("no prediction yet (`exercise check {}` asks for one)", ex.id),
            )
        } else {
            let no_time = options.no_time || !ex.quantity().is_some_and(|q| q.needs_timing());
            let out = Command::new(&me)
                .args(options.command_line(ex.id, recorded, no_time))
                // One line per summary, which `reason` reads (the lines here are cut to fit).
                .env("COLUMNS", "100000")
                .stdin(Stdio::null())
                .output()
                .map_err(Error::io("running `exercise check`"))?;
            let (stdout, stderr) = (
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
            );
            let verdict = match out.status.code() {
                Some(0) => Verdict::Pass,
                Some(6) => Verdict::NotVerified,
                Some(4) => {
                    // The machine, not the file: stop here with the child's own message.
                    eprint!("{stderr}");
                    return Ok(Ending::Environment);
                }
                _ => Verdict::Fail,
            };
            let mut why = reason(ex.id, &stdout, &stderr, verdict);
            if out.status.code() == Some(3) {
                why = format!("hung: {why}");
            } else if verdict == Verdict::Fail && out.status.code().is_none() {
                why = "crashed (ended by a signal)".into();
            }
            (verdict, why)
        };
        counts[verdict as usize] += 1;
        println!(
            "{}",
            cut(&format!("{}  {:<9} {why}", ex.id, verdict.word()), LINE_COLUMNS)
        );
    }
    let [passed, compiled, failed, not_started] = counts;
    println!(
        "\n{} exercises: {passed} passed, {failed} failed, {not_started} not done, {compiled} compiled \
         but not verified (no GPU)",
        counts.iter().sum::<usize>()
    );
    Ok(if failed + not_started > 0 {
        println!("not complete: exit status 1");
        Ending::NotPassed
    } else if compiled > 0 {
        println!(
            "nothing failed; {compiled} need a GPU for their verdict: run the same command on one (exit status 6)"
        );
        Ending::NotVerified
    } else {
        println!("every exercise passed");
        Ending::Done
    })
}

// ---------------------------------------------------------------------------------------------
// watch
// ---------------------------------------------------------------------------------------------

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// Checks `path` as exercise `ex` on every save, and returns once a check passes. Each check runs in a child process (`exercise check`), so a hung kernel, which ends its process
/// with exit code 3, or a crashed one does not end the watch.
fn watch_one(ex: &Exercise, (path, shown): (&Path, &str), predict: Option<f64>, options: &CheckOptions) -> Result<()> {
    let me = std::env::current_exe().map_err(Error::io("finding this program"))?;
    let mut seen = None;
    loop {
        let now = modified(path);
        if now != seen {
            seen = now;
            println!("\n──── {} ────", utc_now_rfc3339());
            let status = Command::new(&me)
                .args(options.command_line(ex.id, predict, options.no_time))
                .status()
                .map_err(Error::io("running `exercise check`"))?;
            let said = match status.code() {
                Some(0) => return Ok(()),
                Some(3) => "hung (exit code 3)".to_string(),
                Some(6) => format!(
                    "not verified: no GPU here, so `watch` stays on {} (it moves on when a check \
                     passes; `watch NN.K` picks another)",
                    ex.id
                ),
                Some(c) => format!("exit code {c}"),
                None => "ended by a signal".to_string(),
            };
            let banner = format!("{said}; watching {shown} (save to check again, Ctrl-C to stop)");
            println!("{}", gemm_ladder::error::wrapped_after("──── ", &banner, "     "));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// `watch [ID]`: starts exercise `id`, or the first not yet passed, checks it on every save, and when
/// a check passes moves on to the next exercise not yet passed (with `--file`: that file, until
/// it passes). `--predict` answers the first exercise's question; each later one asks its own.
pub fn watch(id: Option<&str>, options: &CheckOptions) -> Result<Ending> {
    let mut ex = match id {
        Some(id) => find(id)?,
        None => match crate::first_to_do(&Progress::load()?) {
            Some(ex) => ex,
            None => {
                println!("every exercise has passed: `cargo run --release --bin exercise -- report` shows them");
                return Ok(Ending::Done);
            }
        },
    };
    let mut given = options.predict;
    loop {
        let (path, shown) = match &options.file {
            Some(f) => (f.clone(), f.display().to_string()),
            None => {
                open_exercise(ex)?;
                student_file(ex)
            }
        };
        // Asked once here, not on every save.
        let predict = match &ex.prediction {
            Some(p) => Some(ask_prediction(ex, p, given.take())?),
            None => None,
        };
        watch_one(ex, (&path, &shown), predict, options)?;
        if options.file.is_some() {
            println!("──── {shown} passed");
            return Ok(Ending::Done);
        }
        match Progress::load()?.next_not_passed(ex) {
            Some(next) => {
                println!("\n════ exercise {} passed: on to exercise {} ════", ex.id, next.id);
                ex = next;
            }
            None => {
                println!("\n════ exercise {} passed, and with it every exercise ════", ex.id);
                return Ok(Ending::Done);
            }
        }
    }
}
