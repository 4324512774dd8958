//! The command line every step binary and the ladder share.

use crate::arch::Arch;
use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::nvrtc::{self, Output};
use crate::problem::{fresh_seed, Shape};
use crate::registry::Step;
use crate::results::StepRecord;
use crate::session::{RunOptions, Session};
use crate::{book, figure, libs, report, results, steps};
use clap::{Parser, ValueEnum};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Emit {
    Ptx,
    Sass,
}

/// Options common to `stepNN` and `ladder`.
#[derive(Debug, Parser)]
pub struct CommonArgs {
    /// Square problem size(s), comma-separated: M = N = K.
    #[arg(long, value_delimiter = ',', default_value = "4096")]
    pub size: Vec<usize>,
    /// Rows of A and C (overrides --size).
    #[arg(long)]
    pub m: Option<usize>,
    /// Rows of B, columns of C (overrides --size).
    #[arg(long)]
    pub n: Option<usize>,
    /// The shared dimension (overrides --size); a multiple of 8.
    #[arg(long)]
    pub k: Option<usize>,
    /// Seed for the random inputs (a fresh one is drawn and printed otherwise).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Verify only: no timing, nothing recorded.
    #[arg(long)]
    pub check: bool,
    /// Timed rounds, each launching the step and cuBLAS once, in turn (default: about a second's
    /// worth, 5 to 200). An untimed warm-up of about 0.75 s comes first either way.
    #[arg(long)]
    pub iters: Option<u32>,
    /// Do not write the results file or the figure.
    #[arg(long)]
    pub no_record: bool,
    /// The book folder whose src/results receives the results (default: ./book, else the crate's).
    #[arg(long)]
    pub book: Option<PathBuf>,
}

#[derive(Debug, Parser)]
#[command(about = "One step of the GEMM ladder: compile, verify against the previous step and cuBLAS, time, record.")]
pub struct StepArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Print the kernel's PTX or SASS instead of running it (works without a GPU for PTX).
    #[arg(long, value_enum)]
    pub emit: Option<Emit>,
    /// Architecture for --emit: sm80, sm90, sm90a, sm100a ... (default: this GPU's, or sm_90 without one).
    /// Only with --emit: a run always compiles for the GPU it runs on.
    #[arg(long)]
    pub arch: Option<String>,
}

impl StepArgs {
    /// Refuses what parses but means nothing: `--arch` without `--emit` (a run compiles for the GPU it
    /// runs on, so `--arch sm100a` on a Hopper machine would silently run the Hopper kernel).
    pub fn check(&self) -> Result<()> {
        if let (Some(arch), None) = (&self.arch, self.emit) {
            return Err(Error::Usage(format!(
                "--arch {arch} needs --emit ptx|sass: --arch picks the architecture whose PTX or SASS is printed; a run always compiles for the GPU it runs on"
            )));
        }
        Ok(())
    }
}

#[derive(Debug, Parser)]
#[command(about = "Every step of the GEMM ladder in order, one table, the figure, and the book.")]
pub struct LadderArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Only build the book from the recorded results (no GPU needed).
    #[arg(long)]
    pub book_only: bool,
    /// Do not build the book at the end.
    #[arg(long)]
    pub no_book: bool,
}

impl CommonArgs {
    pub fn shapes(&self) -> Vec<Shape> {
        if self.m.is_some() || self.n.is_some() || self.k.is_some() {
            let size = self.size.first().copied().unwrap_or(4096);
            vec![Shape::new(
                self.m.unwrap_or(size),
                self.n.unwrap_or(size),
                self.k.unwrap_or(size),
            )]
        } else {
            self.size.iter().map(|&s| Shape::square(s)).collect()
        }
    }

    /// The book folder to record into, if one can be found.
    pub fn book_dir(&self) -> Option<PathBuf> {
        if let Some(dir) = &self.book {
            return Some(dir.clone());
        }
        [
            PathBuf::from("book"),
            Path::new(env!("CARGO_MANIFEST_DIR")).join("book"),
        ]
        .into_iter()
        .find(|d| d.join("book.toml").is_file())
    }

    fn options(&self) -> RunOptions {
        RunOptions {
            check_only: self.check,
            iters: self.iters,
        }
    }
}

/// `--emit`: compiles the step's kernel for the chosen architecture and prints PTX or SASS.
fn emit(step: &Step, what: Emit, arch: Option<&str>) -> Result<()> {
    let arch = match arch {
        Some(text) => Arch::parse(text)?,
        None => match Gpu::open() {
            Ok(gpu) => step
                .kernel_for_device(gpu.major, gpu.minor)
                .map(|k| k.targets.arch_for_device(gpu.major, gpu.minor))
                .unwrap_or(Arch::SM90),
            Err(_) => {
                // Our lent GPUs are Hopper: emit what would run there.
                let default = step.kernels[0].targets.arch_for_device(9, 0);
                eprintln!("no GPU: emitting for {default} (choose with --arch)");
                default
            }
        },
    };
    let file = step
        .kernels
        .iter()
        .find(|k| k.targets.compiles_for(arch))
        .ok_or_else(|| Error::Unsupported {
            step: step.binary(),
            needs: step.needs(),
            found: format!("--arch {arch}"),
        })?;
    match what {
        Emit::Ptx => {
            let ptx = nvrtc::compile(file, arch, Output::Ptx)?;
            print!("{}", String::from_utf8_lossy(&ptx.bytes));
        }
        Emit::Sass => {
            let cubin = nvrtc::compile(file, arch, Output::Cubin)?;
            print!("{}", nvrtc::disassemble(&cubin.bytes, file.path)?);
        }
    }
    Ok(())
}

/// Writes the records and regenerates the figures, or says why it did not.
fn record(args: &CommonArgs, gpu: &Gpu, records: &[StepRecord]) -> Result<()> {
    if args.no_record || args.check || records.is_empty() {
        return Ok(());
    }
    let Some(book_dir) = args.book_dir() else {
        eprintln!("note: no book/ folder here (run from the crate root or pass --book DIR): results not recorded");
        return Ok(());
    };
    let path = results::record(&book_dir, &gpu.info, records)?;
    figure::regenerate_all(&book_dir)?;
    println!("recorded {} and its figure", path.display());
    Ok(())
}

fn open_for_running() -> Result<Gpu> {
    let gpu = Gpu::open()?;
    libs::require_nvrtc()?;
    println!(
        "{} (compute capability {}, {} SMs, {} MiB L2), driver {}, NVRTC {}",
        gpu.info.name,
        gpu.info.compute_capability,
        gpu.info.sms,
        gpu.info.l2_bytes >> 20,
        gpu.info.driver,
        gpu.info.nvrtc
    );
    Ok(gpu)
}

/// `stepNN`: compile → verify against the predecessor and cuBLAS → time → table → record → figure.
pub fn step_main(id: u8) -> Result<()> {
    let args = StepArgs::parse();
    args.check()?;
    let step = steps::get(id)?;
    if let Some(what) = args.emit {
        return emit(step, what, args.arch.as_deref());
    }
    let shapes = args.common.shapes();
    for shape in &shapes {
        shape.check(&step.binary())?;
    }
    let mut gpu = Some(open_for_running()?);
    let seed = args.common.seed.unwrap_or_else(fresh_seed);
    println!(
        "{}: {} — seed {seed} (repeat with --seed {seed})",
        step.binary(),
        step.title
    );
    let mut records = Vec::new();
    for shape in shapes {
        let mut session = Session::new(gpu.take().expect("one GPU per shape, returned below"), shape, seed)?;
        let outcome = session.run_step(id, &args.common.options())?;
        report::print_checks(step, shape, &outcome.checks);
        records.extend(outcome.record);
        gpu = Some(session.into_gpu());
    }
    let gpu = gpu.expect("returned by the last session");
    if !records.is_empty() {
        report::print_results(&records);
    }
    record(&args.common, &gpu, &records)
}

/// `ladder`: every step in order, one table, the figure, the book.
pub fn ladder_main() -> Result<()> {
    let args = LadderArgs::parse();
    let book_dir = args.common.book_dir();
    let gpu = if args.book_only {
        None
    } else {
        match Gpu::open() {
            Ok(gpu) => Some(gpu),
            Err(e @ (Error::NoDriver | Error::NoDevice(_))) => {
                println!("no GPU here ({e}); building the book from the recorded results");
                None
            }
            Err(e) => return Err(e),
        }
    };
    if let Some(gpu) = gpu {
        libs::require_nvrtc()?;
        run_ladder(&args, gpu)?;
    }
    if args.no_book {
        return Ok(());
    }
    let book_dir = book_dir
        .ok_or_else(|| Error::Usage("no book/ folder found: run from the crate root or pass --book DIR".into()))?;
    figure::regenerate_all(&book_dir)?;
    let out = book::build(&book_dir, None)?;
    println!("book: {}", out.join("index.html").display());
    Ok(())
}

fn run_ladder(args: &LadderArgs, gpu: Gpu) -> Result<()> {
    use indicatif::{ProgressBar, ProgressStyle};
    let seed = args.common.seed.unwrap_or_else(fresh_seed);
    println!(
        "{} (compute capability {}), driver {}, NVRTC {} — seed {seed} (repeat with --seed {seed})",
        gpu.info.name, gpu.info.compute_capability, gpu.info.driver, gpu.info.nvrtc
    );
    let shapes = args.common.shapes();
    let runnable: Vec<&Step> = steps::ALL
        .iter()
        .copied()
        .filter(|s| s.kernel_for_device(gpu.major, gpu.minor).is_some())
        .collect();
    for step in steps::ALL
        .iter()
        .filter(|s| s.kernel_for_device(gpu.major, gpu.minor).is_none())
    {
        println!("{} skipped: it needs {}", step.binary(), step.needs());
    }
    let bar = ProgressBar::new((runnable.len() * shapes.len()) as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}").unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut records = Vec::new();
    let mut failures = Vec::new();
    let mut gpu = Some(gpu);
    for shape in shapes {
        let mut session = Session::new(gpu.take().expect("returned below"), shape, seed)?;
        for step in &runnable {
            bar.set_message(format!("{} {shape}", step.binary()));
            match session.run_step(step.id, &args.common.options()) {
                Ok(outcome) => records.extend(outcome.record),
                Err(e @ Error::Verification(_)) => {
                    bar.println(format!("error: {e}"));
                    failures.push(step.binary());
                }
                Err(e) => {
                    bar.abandon();
                    return Err(e);
                }
            }
            bar.inc(1);
        }
        gpu = Some(session.into_gpu());
    }
    bar.finish_and_clear();
    if !records.is_empty() {
        report::print_results(&records);
    }
    record(
        &args.common,
        gpu.as_ref().expect("returned by the last session"),
        &records,
    )?;
    if failures.is_empty() {
        Ok(())
    } else {
        Err(Error::Verification(format!(
            "{} failed verification (see above)",
            failures.join(", ")
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step_args(args: &[&str]) -> StepArgs {
        StepArgs::try_parse_from(std::iter::once("step08").chain(args.iter().copied())).unwrap()
    }

    #[test]
    fn arch_without_emit_is_refused_as_a_usage_error() {
        let err = step_args(&["--arch", "sm100a"]).check().unwrap_err();
        assert_eq!(err.exit_code(), 2);
        let line = err.to_string();
        assert!(
            !line.contains('\n') && line.contains("--arch sm100a needs --emit") && line.contains("GPU it runs on"),
            "{line}"
        );
        assert!(step_args(&["--arch", "sm100a", "--emit", "ptx"]).check().is_ok());
        assert!(step_args(&["--emit", "sass"]).check().is_ok());
        assert!(step_args(&["--size", "8192", "--iters", "50"]).check().is_ok());
    }
}
