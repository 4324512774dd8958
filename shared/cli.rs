//! The command line every step binary and the ladder share.

use crate::check::problem::{fresh_seed, Shape};
use crate::device::arch::Arch;
use crate::device::gpu::Gpu;
use crate::device::nvrtc::{self, Output};
use crate::error::{Error, Result};
use crate::run::registry::{KernelFile, Step, Twin};
use crate::run::results::StepRecord;
use crate::run::session::{RunOptions, Session};
use crate::{book, device::libs, run::report, run::results, run::steps};
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
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub iters: Option<u32>,
    /// Do not write the results file or the figure.
    #[arg(long)]
    pub no_record: bool,
    /// Record even though this binary was built from a tree with uncommitted changes (its revision
    /// ends in `-dirty`); the book marks such rows `‡`. Without it such a run is refused before it
    /// starts, unless it records nothing (--no-record, --check).
    #[arg(long)]
    pub allow_dirty: bool,
    /// The book folder whose src/results receives the results (default: ./book, else the crate's).
    #[arg(long)]
    pub book: Option<PathBuf>,
    #[arg(long, help = crate::run::sweep::help(), conflicts_with_all = ["size", "m", "n", "k"])]
    pub sweep: bool,
    /// Also profile each recorded run under Nsight Compute (`ncu`, found on PATH or under
    /// /opt/nvidia/nsight-compute): the step's kernel alone, one launch, then cuBLAS bf16's kernel at
    /// the same shape with the same settings; the counters go into the record's `profile`. Without
    /// ncu the record keeps the computed evidence.
    #[arg(long, conflicts_with = "check")]
    pub profile: bool,
    /// With --profile: ncu's clock control. `none` leaves the GPU's clocks alone (boost and power
    /// limit, as the timed runs see them); `base` locks them to the base clock, so that the cycles
    /// compare across runs and kernels. The record says which.
    #[arg(long, value_enum, default_value = "none", requires = "profile")]
    pub clock_control: crate::evidence::ClockControl,
    /// Steps 04–11: which twin of the step's kernel to run (and verify against the same twin's
    /// previous step): hopper (sm90.cu), sm80 (sm80.cu, any GPU of compute capability 8.0 or newer,
    /// H100 and H200 included) or blackwell (sm100.cu). Default: the GPU's own, sm80 on 8.x and 12.x.
    #[arg(long, value_enum)]
    pub twin: Option<Twin>,
}

#[derive(Debug, Parser)]
#[command(
    version = crate::VERSION,
    after_help = crate::error::exit_codes_help(),
    about = "One step of the GEMM ladder: compile, verify against the previous step and cuBLAS, time, record."
)]
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
    /// With --emit: print this alternative design's kernel instead of the step's (step 11: promote).
    /// A run verifies and times every alternative beside the step's kernel anyway.
    #[arg(long, requires = "emit")]
    pub alternative: Option<String>,
    /// Steps 08-11 on Hopper: build the kernel with timeline stamps (-DTIMELINE=1), check and time it
    /// against the plain build (the overhead), run it once at the first shape and draw what a few SMs
    /// did: `figures/timeline-stepNN-<gpu>.svg` and `results/timelines/timeline-stepNN-<gpu>.json`
    /// (not written with --no-record).
    #[arg(long, conflicts_with_all = ["sweep", "check", "profile", "emit"])]
    pub timeline: bool,
}

impl StepArgs {
    /// Refuses what parses but means nothing: `--arch` without `--emit` (a run compiles for the GPU it
    /// runs on, so `--arch sm100a` on a Hopper machine would silently run the Hopper kernel), and a
    /// `--book` that is not a book.
    pub fn check(&self) -> Result<()> {
        if let (Some(arch), None) = (&self.arch, self.emit) {
            return Err(Error::Usage(format!(
                "--arch {arch} needs --emit ptx|sass: --arch picks the architecture whose PTX or SASS is printed; a run always compiles for the GPU it runs on"
            )));
        }
        self.common.check_book()
    }
}

#[derive(Debug, Parser)]
#[command(
    version = crate::VERSION,
    after_help = crate::error::exit_codes_help(),
    about = "Every step of the GEMM ladder in order, one table, the figure, and the book."
)]
pub struct LadderArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    /// Only build the book from the recorded results (no GPU needed).
    #[arg(long)]
    pub book_only: bool,
    /// Do not build the book at the end.
    #[arg(long, conflicts_with = "book_only")]
    pub no_book: bool,
    /// Also verify and time every step's alternative designs (steps 10 and 11), as `stepNN` does,
    /// and record them (implied by --profile). Without it the ladder runs each step's own kernel,
    /// and leaves a recorded step whose record lists its alternatives as it is.
    #[arg(long)]
    pub alternatives: bool,
}

impl LadderArgs {
    /// Refuses what parses but means nothing, before anything runs or is written: `--sweep` with
    /// `--book-only` (a sweep needs the GPU), a shape outside the contract every step shares (as
    /// `stepNN` refuses it), and a `--book` that is not a book.
    pub fn check(&self) -> Result<()> {
        if self.common.sweep && self.book_only {
            return Err(Error::Usage(
                "--sweep runs the top step on the GPU; --book-only runs nothing: choose one".into(),
            ));
        }
        if !self.common.sweep {
            for shape in self.common.shapes() {
                shape.check("ladder")?;
            }
        }
        self.common.check_book()
    }

    /// Whether the steps run with their alternative designs.
    fn with_alternatives(&self) -> bool {
        self.alternatives || self.common.profile
    }
}

/// `mdbook-ladder`: mdBook runs it with the book on standard input (`book/book.toml`).
#[derive(Debug, Parser)]
#[command(
    name = "mdbook-ladder",
    version = crate::VERSION,
    about = "The book's {{#ladder-…}} directives as an mdBook preprocessor: `mdbook build book` runs it \
             (book/book.toml registers it) with the book as JSON on standard input, and reads the \
             expanded book from standard output.",
    after_help = crate::error::exit_codes_line(&crate::error::PREPROCESSOR_EXIT_CODES)
)]
pub struct MdbookLadderArgs {
    #[command(subcommand)]
    pub command: Option<MdbookLadderCommand>,
}

#[derive(Debug, clap::Subcommand)]
pub enum MdbookLadderCommand {
    /// Answers mdBook's question before a build: the pass writes Markdown, which any renderer reads.
    Supports { renderer: String },
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

    /// Refuses `--book DIR` where DIR is not a book (no `book.toml` or `src/SUMMARY.md`), before
    /// anything is written into it.
    pub fn check_book(&self) -> Result<()> {
        let Some(dir) = &self.book else {
            return Ok(());
        };
        for needed in ["book.toml", "src/SUMMARY.md"] {
            if !dir.join(needed).is_file() {
                return Err(Error::Usage(format!(
                    "--book {}: not a book (it has no {needed}): name the crate's book/ folder",
                    dir.display()
                )));
            }
        }
        Ok(())
    }

    /// Refuses, before anything runs, to record from a binary built from a dirty tree: its records
    /// would name a revision that holds none of the code they measured. `revision` is
    /// [`crate::GIT_REVISION`] (a parameter for the tests).
    pub fn refuse_dirty_recording(&self, revision: &str) -> Result<()> {
        let records = !(self.no_record || self.check);
        if records && !self.allow_dirty && revision.ends_with("-dirty") {
            return Err(Error::Usage(format!(
                "this binary was built from a tree with uncommitted changes ({revision}): commit them and run again, \
                 or pass --allow-dirty to record anyway (the book marks such rows ‡), or --no-record"
            )));
        }
        Ok(())
    }

    fn options(&self) -> RunOptions {
        RunOptions {
            check_only: self.check,
            iters: self.iters,
        }
    }
}

/// `--emit`: compiles the step's kernel (or its alternative `alternative`) for the chosen architecture
/// and prints PTX or SASS.
fn emit(step: &Step, what: Emit, arch: Option<&str>, alternative: Option<&str>, twin: Option<Twin>) -> Result<()> {
    let files: Vec<&KernelFile> = match alternative {
        None => match twin.filter(|_| step.has_twins()) {
            None => step.kernels.iter().collect(),
            Some(twin) => vec![step
                .file_of_twin(twin)
                .ok_or_else(|| Error::Usage(format!("{} has no kernel of the {} twin", step.binary(), twin.name())))?],
        },
        Some(name) => {
            let found = step.alternatives.iter().find(|a| a.name == name).ok_or_else(|| {
                let known: Vec<&str> = step.alternatives.iter().map(|a| a.name).collect();
                Error::Usage(format!(
                    "{} has no alternative named {name:?} (it has: {})",
                    step.binary(),
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ))
            })?;
            vec![&found.kernel]
        }
    };
    let arch = match arch {
        Some(text) => Arch::parse(text)?,
        None => match Gpu::open() {
            Ok(gpu) => files
                .iter()
                .find(|k| k.targets.serves(gpu.major, gpu.minor))
                .map(|k| k.targets.arch_for_device(gpu.major, gpu.minor))
                .unwrap_or(Arch::SM90),
            Err(_) => {
                // Our lent GPUs are Hopper: emit what would run there.
                let default = files[0].targets.arch_for_device(9, 0);
                eprintln!("no GPU: emitting for {default} (choose with --arch)");
                default
            }
        },
    };
    let Some(file) = files.iter().copied().find(|k| k.targets.compiles_for(arch)) else {
        let targets: Vec<&str> = files.iter().map(|k| k.targets.describe()).collect();
        return Err(Error::Usage(format!(
            "{} has no kernel for --arch {arch}: its kernels are for {}",
            step.binary(),
            targets.join(" and ")
        )));
    };
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
    if !nvrtc::experiment_defines().is_empty() {
        eprintln!(
            "note: {} is set (a development experiment): results not recorded",
            nvrtc::EXPERIMENT_ENV
        );
        return Ok(());
    }
    let Some(book_dir) = args.book_dir() else {
        eprintln!("note: no book/ folder here (run from the crate root or pass --book DIR): results not recorded");
        return Ok(());
    };
    let path = results::record(&book_dir, &gpu.info, records)?;
    crate::book::regenerate_all(&book_dir)?;
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
    crate::error::quiet_on_closed_pipe();
    if let Some(child) = crate::evidence::child_main_if_requested() {
        return child;
    }
    let args = StepArgs::parse();
    args.check()?;
    let step = steps::get(id)?;
    let twin = args.common.twin;
    if let Some(what) = args.emit {
        return emit(
            step,
            what,
            args.arch.as_deref(),
            args.alternative.as_deref(),
            args.common.twin,
        );
    }
    let shapes = if args.common.sweep {
        crate::run::sweep::SHAPES.to_vec()
    } else {
        args.common.shapes()
    };
    for shape in &shapes {
        shape.check(&step.binary())?;
    }
    args.common.refuse_dirty_recording(crate::GIT_REVISION)?;
    let gpu = open_for_running()?;
    let seed = args.common.seed.unwrap_or_else(fresh_seed);
    // The step's title is its lesson as the texts teach it; a chosen twin says which file runs.
    let kernel = step
        .kernel_of_twin(gpu.major, gpu.minor, twin)
        .filter(|_| twin.is_some() && step.has_twins())
        .map(|k| format!(" [{}]", k.path))
        .unwrap_or_default();
    println!(
        "{}{kernel}: {} — seed {seed} (repeat with --seed {seed})",
        step.binary(),
        step.title
    );
    if args.timeline {
        let book = args.common.book_dir().filter(|_| !args.common.no_record);
        return crate::evidence::timeline::timeline_main(
            step,
            twin,
            gpu,
            shapes[0],
            seed,
            args.common.iters,
            book.as_deref(),
        );
    }
    if args.common.sweep {
        return sweep_main(&args.common, gpu, step, seed);
    }
    let mut gpu = Some(gpu);
    let mut records = Vec::new();
    for shape in shapes {
        let mut session =
            Session::new(gpu.take().expect("one GPU per shape, returned below"), shape, seed)?.with_twin(twin);
        let outcome = session.run_step(id, &args.common.options())?;
        report::print_checks(&step.binary(), shape, &outcome.checks);
        for (path, checks) in &outcome.alternatives {
            report::print_checks(path, shape, checks);
        }
        records.extend(outcome.record);
        gpu = Some(session.into_gpu());
    }
    let gpu = gpu.expect("returned by the last session");
    if args.common.profile {
        crate::evidence::profile_records(&mut records, seed, args.common.clock_control);
    }
    if !records.is_empty() {
        report::print_results(&records);
    }
    record(&args.common, &gpu, &records)
}

/// `--sweep`: the step at every shape of [`crate::run::sweep::SHAPES`], then one table, the records (marked
/// as a sweep) and the figures. Exits non-zero when a shape failed verification, after recording the
/// others.
fn sweep_main(args: &CommonArgs, gpu: Gpu, step: &'static Step, seed: u64) -> Result<()> {
    let crate::run::sweep::Outcome {
        gpu,
        records,
        failures,
        skipped,
    } = crate::run::sweep::run(gpu, step, args.twin, seed, &args.options())?;
    if !records.is_empty() {
        report::print_results(&records);
    } else if args.check && failures.is_empty() {
        println!(
            "{} passed verification at {} of the sweep's {} shapes",
            step.binary(),
            crate::run::sweep::SHAPES.len() - skipped.len(),
            crate::run::sweep::SHAPES.len()
        );
    }
    if !skipped.is_empty() {
        let list: Vec<String> = skipped.iter().map(|s| s.to_string()).collect();
        println!("skipped for lack of GPU memory: {}", list.join(", "));
    }
    record(args, &gpu, &records)?;
    verdict(&failures)
}

/// `ladder`: every step in order, one table, the figure, the book.
pub fn ladder_main() -> Result<()> {
    crate::error::quiet_on_closed_pipe();
    if let Some(child) = crate::evidence::child_main_if_requested() {
        return child;
    }
    let args = LadderArgs::parse();
    args.check()?;
    let book_dir = args.common.book_dir();
    if args.book_only {
        return build_book(book_dir);
    }
    let gpu = match Gpu::open() {
        Ok(gpu) => gpu,
        Err(e @ (Error::NoDriver | Error::NoDevice(_))) => return without_gpu(&args, book_dir, &e),
        Err(e) => return Err(e),
    };
    // Only here: without a GPU the ladder just builds the book, which a dirty tree may.
    args.common.refuse_dirty_recording(crate::GIT_REVISION)?;
    libs::require_nvrtc()?;
    run_ladder(&args, gpu)?;
    if args.no_book {
        return Ok(());
    }
    build_book(book_dir)
}

/// Regenerates the figures from the recorded results and builds the book.
fn build_book(book_dir: Option<PathBuf>) -> Result<()> {
    let book_dir = book_dir
        .ok_or_else(|| Error::Usage("no book/ folder found: run from the crate root or pass --book DIR".into()))?;
    crate::book::regenerate_all(&book_dir)?;
    let out = book::build(&book_dir, None)?;
    println!("book: {}", out.join("index.html").display());
    Ok(())
}

/// `ladder` (not `--book-only`) without a GPU: nothing can be verified or timed. Builds the book
/// from the recorded results (unless `--no-book`), says what works without a GPU, and ends with
/// status 4 (environment), so that a script or CI job asking for a run does not pass.
fn without_gpu(args: &LadderArgs, book_dir: Option<PathBuf>, why: &Error) -> Result<()> {
    let here = match why {
        Error::NoDevice(_) => "no CUDA GPU here",
        _ => "no NVIDIA driver here",
    };
    if args.no_book {
        println!("{here}: nothing verified or timed, and no book (--no-book)");
    } else {
        println!("{here}: nothing verified or timed; building the book from the recorded results");
        build_book(book_dir)?;
    }
    println!(
        "{}",
        crate::error::wrapped(
            "Without a GPU: the book (`ladder --book-only` builds only the book, and exits 0), every \
             kernel's PTX and SASS (`stepNN --emit ptx|sass`), and the exercises up to \"compiles and \
             assembles\" (`cargo run --release --bin exercise`).",
            ""
        )
    );
    let asked = match (args.common.sweep, args.common.check) {
        (true, _) => "sweep its top step",
        (false, true) => "verify its steps",
        (false, false) => "verify and time its steps",
    };
    Err(Error::Environment(format!(
        "the ladder needs a GPU to {asked} ({here})"
    )))
}

/// The records of a ladder run without the alternatives (no `--alternatives` or `--profile`) that it
/// may write over `recorded`: not one whose step is recorded at that shape with its alternatives,
/// which it would replace with a record that lists none. Returns those to write and those left out.
pub fn keep_recorded_alternatives(
    recorded: &[StepRecord],
    records: Vec<StepRecord>,
) -> (Vec<StepRecord>, Vec<StepRecord>) {
    records.into_iter().partition(|new| {
        !recorded.iter().any(|old| {
            (old.step, old.shape, old.sweep) == (new.step, new.shape, new.sweep) && !old.alternatives.is_empty()
        })
    })
}

fn run_ladder(args: &LadderArgs, gpu: Gpu) -> Result<()> {
    use indicatif::{ProgressBar, ProgressStyle};
    let seed = args.common.seed.unwrap_or_else(fresh_seed);
    let twin = args.common.twin;
    println!(
        "{} (compute capability {}), driver {}, NVRTC {} — seed {seed} (repeat with --seed {seed})",
        gpu.info.name, gpu.info.compute_capability, gpu.info.driver, gpu.info.nvrtc
    );
    if args.common.sweep {
        // The sweep of the ladder is the sweep of its top rung on this GPU.
        let top = top_step(gpu.major, gpu.minor, twin).ok_or_else(|| Error::Unsupported {
            step: "ladder --sweep".into(),
            needs: steps::ALL.last().map(|s| s.needs(twin)).unwrap_or_default(),
            found: format!("{} (compute capability {}.{})", gpu.info.name, gpu.major, gpu.minor),
        })?;
        println!("sweeping {}: {}", top.binary(), top.title);
        return sweep_main(&args.common, gpu, top, seed);
    }
    let shapes = args.common.shapes();
    let runnable: Vec<&Step> = steps::ALL
        .iter()
        .copied()
        .filter(|s| s.kernel_of_twin(gpu.major, gpu.minor, twin).is_some())
        .collect();
    for step in steps::ALL
        .iter()
        .filter(|s| s.kernel_of_twin(gpu.major, gpu.minor, twin).is_none())
    {
        println!("{} skipped: it needs {}", step.binary(), step.needs(twin));
    }
    let bar = ProgressBar::new((runnable.len() * shapes.len()) as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}").unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut records = Vec::new();
    let mut failures = Vec::new();
    let mut gpu = Some(gpu);
    for shape in shapes {
        let mut session = Session::new(gpu.take().expect("returned below"), shape, seed)?.with_twin(twin);
        if !args.with_alternatives() {
            session.without_alternatives();
        }
        for step in &runnable {
            // Step 11 (MXFP8) needs K to be a multiple of 32; a shape without it skips that step only.
            if let Some(rule) = step.format.contract_violation(shape) {
                bar.println(format!("{} skipped at {shape}: {rule}", step.binary()));
                bar.inc(1);
                continue;
            }
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
    if args.common.profile {
        crate::evidence::profile_records(&mut records, seed, args.common.clock_control);
    }
    if !records.is_empty() {
        report::print_results(&records);
    }
    let gpu = gpu.expect("returned by the last session");
    let records = match args.common.book_dir() {
        Some(book_dir) if !args.with_alternatives() => {
            let path = results::results_path(&book_dir, &gpu.info.name);
            let recorded = if path.is_file() {
                results::load(&path)?.records
            } else {
                Vec::new()
            };
            let (write, left) = keep_recorded_alternatives(&recorded, records);
            if !(left.is_empty() || args.common.no_record || args.common.check) {
                let steps: Vec<String> = left
                    .iter()
                    .map(|r| format!("step{:02} at {}", r.step, r.shape))
                    .collect();
                println!(
                    "{}",
                    crate::error::wrapped(
                        &format!(
                            "not recorded: {}, whose records list their alternative designs, which this \
                             run did not time (`stepNN`, or `ladder --alternatives`, records them anew)",
                            steps.join(", ")
                        ),
                        "  "
                    )
                );
            }
            write
        }
        _ => records,
    };
    record(&args.common, &gpu, &records)?;
    verdict(&failures)
}

/// `mdbook-ladder`: reads `[context, book]` as mdBook sends it, runs the `ladder-results` pass over
/// the book (as `ladder --book-only` does in process), and writes the book back.
pub fn mdbook_ladder_main() -> Result<()> {
    use mdbook_preprocessor::{Preprocessor, MDBOOK_VERSION};
    use std::io::IsTerminal;
    crate::error::quiet_on_closed_pipe();
    let args = MdbookLadderArgs::parse();
    if let Some(MdbookLadderCommand::Supports { .. }) = args.command {
        return Ok(());
    }
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Err(Error::Usage(
            "mdbook-ladder reads a book from mdBook on its standard input: run `mdbook build book`, or build \
             the book without mdBook: `cargo run --release --bin ladder -- --book-only`"
                .into(),
        ));
    }
    let (ctx, input) = mdbook_preprocessor::parse_input(stdin.lock()).map_err(|e| {
        Error::Usage(format!(
            "{}: cannot read the book on standard input ({e:#}): it speaks the preprocessor protocol of \
             mdBook {MDBOOK_VERSION}; without mdBook, `cargo run --release --bin ladder -- --book-only`",
            book::PASS_NAME
        ))
    })?;
    let release = |version: &str| version.split('.').take(2).collect::<Vec<_>>().join(".");
    if release(&ctx.mdbook_version) != release(MDBOOK_VERSION) {
        eprintln!(
            "warning: {}: built for mdBook {MDBOOK_VERSION}, run by mdBook {}",
            book::PASS_NAME,
            ctx.mdbook_version
        );
    }
    let pass = book::LadderResults::load(&ctx.root)?;
    let output = pass.run(&ctx, input).map_err(|e| Error::Other(format!("{e:#}")))?;
    serde_json::to_writer(std::io::stdout().lock(), &output)
        .map_err(|e| Error::Other(format!("{}: writing the book to standard output: {e}", book::PASS_NAME)))
}

/// The highest step with a kernel of `twin` (`None`: the GPU's own) for a GPU of compute capability
/// `major.minor`.
pub fn top_step(major: u32, minor: u32, twin: Option<Twin>) -> Option<&'static Step> {
    steps::ALL
        .iter()
        .copied()
        .rev()
        .find(|s| s.kernel_of_twin(major, minor, twin).is_some())
}

/// The end of a run over several steps or shapes: an error naming those that failed verification.
fn verdict(failures: &[String]) -> Result<()> {
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

    fn ladder_args(args: &[&str]) -> std::result::Result<LadderArgs, clap::Error> {
        LadderArgs::try_parse_from(std::iter::once("ladder").chain(args.iter().copied()))
    }

    #[test]
    fn clock_control_is_a_profile_setting_and_defaults_to_none() {
        use crate::evidence::ClockControl;
        assert_eq!(step_args(&["--profile"]).common.clock_control, ClockControl::None);
        let locked = step_args(&["--profile", "--clock-control", "base"]);
        assert_eq!(locked.common.clock_control, ClockControl::Base);
        let ladder = ladder_args(&["--profile", "--clock-control", "base"]).unwrap();
        assert_eq!(ladder.common.clock_control, ClockControl::Base);
        // Without --profile it means nothing: refused; and only the two settings are known.
        let alone = StepArgs::try_parse_from(["step10", "--clock-control", "base"]).unwrap_err();
        assert_eq!(alone.kind(), clap::error::ErrorKind::MissingRequiredArgument);
        assert!(StepArgs::try_parse_from(["step10", "--profile", "--clock-control", "boost"]).is_err());
    }

    #[test]
    fn sweep_parses_lists_its_shapes_in_the_help_and_excludes_other_shapes() {
        let args = step_args(&["--sweep", "--seed", "7", "--iters", "20"]);
        assert!(args.common.sweep && args.check().is_ok());
        assert_eq!((args.common.seed, args.common.iters), (Some(7), Some(20)));
        assert!(!step_args(&[]).common.sweep);
        // Verify-only sweeps and sweeps without recording are fine.
        assert!(step_args(&["--sweep", "--check", "--no-record"]).common.check);
        for shape in [&["--size", "4096"][..], &["--m", "4096"], &["--n", "8"], &["--k", "64"]] {
            let argv = std::iter::once("step10")
                .chain(["--sweep"])
                .chain(shape.iter().copied());
            let err = StepArgs::try_parse_from(argv).unwrap_err();
            assert_eq!(err.kind(), clap::error::ErrorKind::ArgumentConflict, "{shape:?}");
        }
        let help = <StepArgs as clap::CommandFactory>::command().render_help().to_string();
        assert!(help.contains("--sweep"), "{help}");
        for s in crate::run::sweep::SHAPES {
            assert!(help.contains(&s.to_string()), "{s} missing from\n{help}");
        }

        let ladder = ladder_args(&["--sweep", "--no-book"]).unwrap();
        assert!(ladder.common.sweep && ladder.check().is_ok());
        let err = ladder_args(&["--sweep", "--book-only"]).unwrap().check().unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(ladder_args(&["--book-only"]).unwrap().check().is_ok());
    }

    #[test]
    fn twin_parses_on_steps_and_the_ladder() {
        assert_eq!(step_args(&["--twin", "sm80"]).common.twin, Some(Twin::Sm80));
        assert_eq!(step_args(&[]).common.twin, None);
        assert_eq!(
            ladder_args(&["--twin", "hopper"]).unwrap().common.twin,
            Some(Twin::Hopper)
        );
        assert!(StepArgs::try_parse_from(["step04", "--twin", "ampere-ish"]).is_err());
    }

    #[test]
    fn the_top_step_is_the_highest_with_a_kernel_for_the_gpu() {
        use crate::run::registry::Targets;
        let hopper = top_step(9, 0, None).unwrap();
        assert_eq!(
            Some(hopper.id),
            steps::ALL
                .iter()
                .rev()
                .find(|s| s.kernel_of_twin(9, 0, None).is_some())
                .map(|s| s.id)
        );
        assert!(hopper.id >= 10, "{}", hopper.binary());
        // An Ampere GPU has the CUDA-core steps and the sm80 twins: its top step is the highest with
        // either, and at least step 07 (issue 26's half of the ladder).
        let ampere_top = steps::ALL
            .iter()
            .rev()
            .find(|s| {
                s.kernels
                    .iter()
                    .any(|k| matches!(k.targets, Targets::AnyGpu | Targets::Ampere))
            })
            .map(|s| s.id);
        assert_eq!(top_step(8, 0, None).map(|s| s.id), ampere_top);
        assert_eq!(top_step(12, 0, None).map(|s| s.id), ampere_top);
        // On Hopper, the sm80 twin's top step is the Ampere GPU's.
        assert_eq!(top_step(9, 0, Some(Twin::Sm80)).map(|s| s.id), ampere_top);
        assert!(ampere_top >= Some(7));
        assert!(top_step(7, 5, None).is_none());
    }

    /// Each `stepNN` binary runs step NN: a `--sweep` of step 10 must not sweep step 09.
    #[test]
    fn every_step_binary_runs_its_own_step() {
        for step in steps::ALL {
            let main = format!(
                "{}/steps/step{:02}_{}/main.rs",
                env!("CARGO_MANIFEST_DIR"),
                step.id,
                step.name
            );
            let text = std::fs::read_to_string(&main).unwrap_or_else(|e| panic!("{main}: {e}"));
            assert!(
                text.contains(&format!("cli::step_main({})", step.id)),
                "{main} does not call cli::step_main({})",
                step.id
            );
        }
    }

    #[test]
    fn a_dirty_build_records_only_when_allowed() {
        let refused = step_args(&[]).common.refuse_dirty_recording("abc1234-dirty");
        assert!(
            matches!(&refused, Err(Error::Usage(m)) if m.contains("--allow-dirty")),
            "{refused:?}"
        );
        for flags in [&["--allow-dirty"][..], &["--no-record"], &["--check"]] {
            assert!(
                step_args(flags).common.refuse_dirty_recording("abc1234-dirty").is_ok(),
                "{flags:?}"
            );
        }
        assert!(step_args(&[]).common.refuse_dirty_recording("abc1234").is_ok());
        assert!(ladder_args(&["--allow-dirty"]).unwrap().common.allow_dirty);
    }

    /// A ladder run without the alternatives writes no record over one that lists them, at the same
    /// step and shape; everything else it records.
    #[test]
    fn a_ladder_run_without_alternatives_keeps_a_record_that_has_them() {
        use crate::run::results::tests::record_of;
        let mut with = record_of(10, "persistent", 4096, 0.2);
        with.alternatives = vec![crate::run::results::AlternativeRecord {
            name: "data_parallel".into(),
            design: "one tile per block".into(),
            kernel: "steps/step10_persistent/sm90.cu".into(),
            source_hash: None,
            time: with.time.clone(),
            ratio_bf16: 1.0,
            ratio_step: 1.0,
            checks: Vec::new(),
            registers: None,
            dynamic_smem_bytes: 0,
            local_bytes: None,
        }];
        let recorded = vec![
            with,
            record_of(9, "epilogue", 4096, 0.21),
            record_of(10, "persistent", 8192, 1.6),
        ];
        let new = vec![
            record_of(9, "epilogue", 4096, 0.22),
            record_of(10, "persistent", 4096, 0.19),
            record_of(10, "persistent", 8192, 1.5),
            record_of(11, "mxfp8", 4096, 0.15),
        ];
        let (write, left) = keep_recorded_alternatives(&recorded, new);
        let keys = |r: &[StepRecord]| r.iter().map(|r| (r.step, r.shape.m)).collect::<Vec<_>>();
        assert_eq!(keys(&write), [(9, 4096), (10, 8192), (11, 4096)]);
        assert_eq!(keys(&left), [(10, 4096)]);
    }

    #[test]
    fn ladder_checks_shapes_and_the_book_before_anything_runs() {
        for (flags, words) in [
            (&["--size", "0"][..], "shape 0x0x0 refused by ladder"),
            (&["--m", "3", "--n", "5", "--k", "7"], "K = 7"),
            (&["--book", "/nonexistent/gemm-ladder-book"], "not a book"),
        ] {
            let err = ladder_args(flags).unwrap().check().unwrap_err();
            assert_eq!(err.exit_code(), 2, "{flags:?}");
            assert!(err.to_string().contains(words), "{flags:?}: {err}");
        }
        assert!(ladder_args(&["--no-book", "--book-only"]).is_err());
        assert!(ladder_args(&["--m", "3", "--n", "5", "--k", "8"])
            .unwrap()
            .check()
            .is_ok());
        let with = |flags: &[&str]| ladder_args(flags).unwrap().with_alternatives();
        assert!(!with(&[]) && with(&["--alternatives"]) && with(&["--profile"]));
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
