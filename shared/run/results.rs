//! The results files: `book/src/results/<gpu>.json`, one per GPU model, written only by the program.
//!
//! Every run of a step adds or replaces its record (keyed by step and shape) in the file of the GPU it
//! ran on. The book's tables and the ladder figure are generated from these files and from nothing
//! else, so a number in the book can always be traced back to a run.

use crate::check::problem::Shape;
use crate::check::verify::Check;
pub use crate::device::gpu::DeviceInfo;
use crate::device::nvml::ClockSummary;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

mod date;
pub use date::{rfc3339_from_unix, utc_now_rfc3339};

/// How long one GEMM took, over `runs` timed launches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub runs: u32,
    /// `2·M·N·K / median`, in 10¹² floating-point operations per second.
    pub tflops: f64,
}

impl Timing {
    /// Summarises per-launch times (milliseconds) of a GEMM of `shape`. `None` for no samples or a
    /// sample that is not a positive finite time.
    pub fn from_samples(samples_ms: &[f64], shape: &Shape) -> Option<Timing> {
        if samples_ms.is_empty() || samples_ms.iter().any(|t| !t.is_finite() || *t <= 0.0) {
            return None;
        }
        let mut sorted = samples_ms.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median_ms = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            0.5 * (sorted[n / 2 - 1] + sorted[n / 2])
        };
        Some(Timing {
            median_ms,
            min_ms: sorted[0],
            max_ms: sorted[n - 1],
            runs: n as u32,
            tflops: tflops(shape, median_ms),
        })
    }
}

/// `2·M·N·K` flops in `ms` milliseconds, in TFLOPS.
pub fn tflops(shape: &Shape, ms: f64) -> f64 {
    shape.flops() / (ms * 1e-3) / 1e12
}

/// `x` with `digits` significant digits, for tables and figure labels: `812`, `12.3`, `0.912`,
/// and exponent form outside [10⁻³, 10⁶): `1.25e-3`.
pub fn significant(x: f64, digits: usize) -> String {
    let digits = digits.max(1);
    if !x.is_finite() {
        return format!("{x}");
    }
    if x == 0.0 {
        return "0".into();
    }
    let magnitude = x.abs().log10().floor() as i32;
    if !(-3..6).contains(&magnitude) {
        return format!("{:.*e}", digits - 1, x);
    }
    let decimals = (digits as i32 - 1 - magnitude).max(0) as usize;
    format!("{x:.decimals$}")
}

/// How a record's kernel and its cuBLAS references were timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TimingMethod {
    /// Each timed by itself, one after the other (records made before alternation; files without
    /// the field read as this).
    #[default]
    Sequential,
    /// In one loop, the step and each reference launched in turn (A B A B …), so that all saw the
    /// same clocks: see `shared/run/timing.rs`.
    Alternating,
}

/// One ceiling kernel's measurement: its own count of floating-point operations per launch, and the
/// median of its launches in the alternating loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CeilingTiming {
    pub median_ms: f64,
    pub runs: u32,
    /// Floating-point operations per launch (two per multiply-add).
    pub flops: f64,
    /// `flops / median`, in 10¹² per second.
    pub tflops: f64,
}

/// The `mma.sync` bf16 → fp32 ceilings of a GPU (`shared/run/mma_sync_ceiling.cu`), timed in the sm80
/// twin's own alternating loop beside the twin and cuBLAS bf16 ([`MmaSyncCeiling::in_step_loop`]), or,
/// in records made before that, in a loop of their own with cuBLAS bf16 right after the twin's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MmaSyncCeiling {
    /// The kernels' file, from the crate root.
    pub kernel: String,
    /// Its [`crate::run::provenance::source_hash`] as it ran.
    pub source_hash: String,
    /// `mma.sync.m16n8k16` with random operands held in registers, independent accumulators.
    pub registers: CeilingTiming,
    /// The sm80 twins' inner loop fed by `ldmatrix.x4` from shared memory (64×64 warp tiles, eight
    /// warps, one block per SM): the rate a twin is read against.
    pub ldmatrix: CeilingTiming,
    /// cuBLAS bf16 at the run's shape, in the same loop.
    pub cublas_bf16: Timing,
    /// The SM clock and power NVML reported during the loop.
    #[serde(default)]
    pub clocks: Option<ClockSummary>,
    /// Timed in the twin's own loop (its `cublas_bf16` and `clocks` are then the record's). `false`
    /// in records made before: the ceilings had a loop of their own, so the twin's ratio to them is
    /// read through each loop's cuBLAS ([`StepRecord::ceiling_ratio`]). Written only when true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub in_step_loop: bool,
}

/// One measured run of one step at one shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    /// 1 ..= 11.
    pub step: u8,
    /// `naive`, `smem_tiling`, ...
    pub name: String,
    pub title: String,
    /// The architecture the kernel was compiled for: `sm_90`, `sm_90a`.
    pub arch: String,
    /// The kernel file, from the crate root: `steps/step01_naive/kernel.cu`.
    pub kernel: String,
    /// [`crate::run::provenance::source_hash`] of that file as it ran (its text, the crate headers it
    /// includes, its defines): the book marks the row when the file shown now hashes otherwise.
    /// `None` in records from before the hash; written only when present, so that saving the file
    /// again leaves those records as they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_hash: Option<String>,
    pub shape: Shape,
    /// Made by `--sweep` (the size sweep, `{{#ladder-sweep-…}}` in the book), not by a plain run: the
    /// step chapters' tables and the ladder leave these out. Written only when true, so files from
    /// before the sweep read back unchanged.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sweep: bool,
    pub seed: u64,
    /// When it ran, UTC, RFC 3339: `2025-11-21T04:26:00Z`.
    pub date: String,
    /// `git describe`-style revision of the crate, or `unknown`.
    pub git: String,
    pub time: Timing,
    /// cuBLAS, bf16 in and out (bf16 C), fp32 compute, on the same inputs, timed the same way (for an
    /// MXFP8 step: on the exactly dequantized operands). The headline baseline unless
    /// [`StepRecord::baseline`] says otherwise.
    pub cublas_bf16: Timing,
    /// cuBLAS SGEMM on fp32 copies of the same values (CUDA-core steps only; older records have it
    /// for every step).
    pub cublas_sgemm: Option<Timing>,
    /// How `time` and the cuBLAS timings were taken; `sequential` in files written before alternation.
    #[serde(default)]
    pub timing_method: TimingMethod,
    /// GPU time of the untimed alternating launches before the timed ones, in milliseconds.
    #[serde(default)]
    pub warmup_ms: Option<f64>,
    /// The SM clock and power NVML reported while the timed launches ran; `None` without NVML.
    #[serde(default)]
    pub clocks: Option<ClockSummary>,
    /// `time.tflops / cublas_bf16.tflops`: 1 means as fast as cuBLAS, 0.5 half as fast.
    pub ratio_bf16: f64,
    /// Which cuBLAS the step's headline ratio ([`StepRecord::headline`]) is against: cuBLAS writing
    /// bf16 C (steps 01–10, and step 11's records from before issue 24), or cuBLAS writing fp32 C on
    /// the dequantized operands (step 11, like for like). Files without the field read as bf16 C;
    /// written only when it is not, so that the other records read back unchanged.
    #[serde(default, skip_serializing_if = "Baseline::is_bf16_c")]
    pub baseline: Baseline,
    /// `time.tflops / cublas_sgemm.tflops`.
    pub ratio_sgemm: Option<f64>,
    /// Every comparison made on this run's output.
    pub checks: Vec<Check>,
    /// Registers per thread, from the loaded function's attributes.
    pub registers: Option<u32>,
    pub static_smem_bytes: Option<u32>,
    pub dynamic_smem_bytes: u32,
    /// Local memory per thread (register spills), in bytes.
    pub local_bytes: Option<u32>,
    /// What explains the time: computed figures on every run, Nsight Compute's counters after
    /// `--profile` ([`crate::evidence`]). Absent in files from before it; written only when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<crate::run::profile::Profile>,
    /// An MXFP8 step (step 11) only: its extra baselines, timed in the same loop, the like-for-like
    /// cuBLAS with fp32 C among them. For such a step `cublas_bf16` is cuBLAS with bf16 C on the exactly
    /// dequantized operands and `ratio_bf16` is to it. Written only when present, so other records
    /// read back unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mx: Option<MxBaselines>,
    /// What the step's launch chose for this shape, in its own words (step 10: the tile and the
    /// decomposition, [`crate::run::registry::tell_plan`]). Written only when told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
    /// The step's alternative designs ([`crate::run::registry::Alternative`]), verified beside its
    /// kernel and timed in the same loop. Written only when there are some.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alternatives: Vec<AlternativeRecord>,
    /// An sm80 twin's run: the GPU's `mma.sync` ceilings, timed in the twin's own loop
    /// ([`crate::run::ceiling`]); the book's "× ceiling" is [`StepRecord::ceiling_ratio`]. `None` for
    /// every other kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mma_sync_ceiling: Option<MmaSyncCeiling>,
}

/// What a step's run measured of one of its alternative designs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AlternativeRecord {
    /// `promote`.
    pub name: String,
    /// One line: what the design does instead of the step's.
    pub design: String,
    /// The kernel file, from the crate root.
    pub kernel: String,
    /// [`crate::run::provenance::source_hash`] of the alternative's kernel as it ran; `None` in records
    /// from before the hash (written only when present).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_hash: Option<String>,
    /// Timed in the step's alternating loop, with the step's kernel and cuBLAS.
    pub time: Timing,
    /// `time.tflops / cublas_bf16.tflops` of the record (the same loop's cuBLAS).
    pub ratio_bf16: f64,
    /// `time.tflops / time.tflops` of the step's own kernel: below 1, the step's design is faster.
    pub ratio_step: f64,
    /// The step's checks on its output, the step's own kernel among the references.
    pub checks: Vec<Check>,
    pub registers: Option<u32>,
    pub dynamic_smem_bytes: u32,
    /// Local memory per thread (register spills), in bytes.
    pub local_bytes: Option<u32>,
}

/// The cuBLAS a step's headline ratio is against ([`StepRecord::baseline`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Baseline {
    /// cuBLAS bf16 in, fp32 compute, bf16 C ([`StepRecord::cublas_bf16`]): the bf16 steps' output.
    #[default]
    CublasBf16C,
    /// cuBLAS on the exactly dequantized MXFP8 operands (bf16 in), fp32 C ([`MxBaselines::cublas_f32_c`]):
    /// the MXFP8 step's output type, so like for like.
    CublasF32C,
}

impl Baseline {
    /// `cuBLAS (bf16 C)`: how tables, the console and the figure name it.
    pub fn label(self) -> &'static str {
        match self {
            Baseline::CublasBf16C => "cuBLAS (bf16 C)",
            Baseline::CublasF32C => "cuBLAS (fp32 C)",
        }
    }

    /// Bytes an element of the `C` this cuBLAS writes.
    pub fn c_element_bytes(self) -> u64 {
        match self {
            Baseline::CublasBf16C => 2,
            Baseline::CublasF32C => 4,
        }
    }

    /// `bf16 C`: the output type alone, for a cell that differs from its column's.
    pub fn output(self) -> &'static str {
        match self {
            Baseline::CublasBf16C => "bf16 C",
            Baseline::CublasF32C => "fp32 C",
        }
    }

    /// The baseline of a step of `format`: like for like, the cuBLAS that writes the step's C.
    pub fn of_format(format: crate::run::registry::Format) -> Baseline {
        match format {
            crate::run::registry::Format::Bf16 => Baseline::CublasBf16C,
            crate::run::registry::Format::Mxfp8 => Baseline::CublasF32C,
        }
    }

    /// Whether this is the default, [`Baseline::CublasBf16C`] (which records leave unwritten).
    pub fn is_bf16_c(&self) -> bool {
        *self == Baseline::CublasBf16C
    }
}

/// The baseline a column of headline ratios is headed with: the one every record in it shares, else
/// bf16 C (the bf16 steps'); a record whose own differs names it in its cell ([`Baseline::output`]).
pub fn column_baseline<'a>(records: impl IntoIterator<Item = &'a StepRecord>) -> Baseline {
    let mut kinds = records.into_iter().map(|r| r.headline().baseline);
    match kinds.next() {
        Some(first) if kinds.all(|b| b == first) => first,
        _ => Baseline::CublasBf16C,
    }
}

/// A record's headline: the cuBLAS it is judged against, that cuBLAS's timing from the same loop, and
/// the step's ratio to it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Headline<'a> {
    pub baseline: Baseline,
    pub cublas: &'a Timing,
    /// `time.tflops / cublas.tflops`.
    pub ratio: f64,
}

/// The baselines an MXFP8 step is timed against besides cuBLAS bf16 C on the dequantized operands
/// ([`StepRecord::cublas_bf16`], a labelled extra column since issue 24).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MxBaselines {
    /// How the inputs were quantized: [`MxBaselines::QUANTIZER`].
    pub quantizer: String,
    /// cuBLAS on the exactly dequantized operands writing fp32 C, as the step does: the headline
    /// baseline ([`Baseline::CublasF32C`]). `None` in records from before it was timed (issue 24).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cublas_f32_c: Option<Timing>,
    /// `time.tflops / cublas_f32_c.tflops`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio_cublas_f32_c: Option<f64>,
    /// The dequantize kernel (`shared/check/mx_dequant.cu`: e4m3 + blocked e8m0 → bf16) on A and on B,
    /// then cuBLAS writing [`MxBaselines::dequantize_then_cublas_output`], timed together as one
    /// contender: what MX costs on Hopper without a fused kernel.
    #[serde(alias = "dequantize_then_cublas_bf16")]
    pub dequantize_then_cublas: Timing,
    /// `time.tflops / dequantize_then_cublas.tflops` (both count 2·M·N·K flops).
    #[serde(alias = "ratio_dequantize_then_cublas_bf16")]
    pub ratio_dequantize_then_cublas: f64,
    /// `fp32`: the C that "dequantize, then cuBLAS" writes; `bf16` in records from before issue 24
    /// (files without the field).
    #[serde(default = "bf16_name")]
    pub dequantize_then_cublas_output: String,
    /// cuBLASLt fp8 e4m3 with tensorwise scaling (one fp32 scale per operand, 1.0 here),
    /// `FAST_ACCUM` off, on the same e4m3 bytes (its product is not step 11's: no block scales),
    /// output [`MxBaselines::cublaslt_fp8_output`]: the fp8 ceiling without block scaling.
    pub cublaslt_fp8_tensorwise: Option<Timing>,
    pub ratio_cublaslt_fp8_tensorwise: Option<f64>,
    /// `fp32`: the fp8 baseline writes an fp32 C, as step 11 does.
    pub cublaslt_fp8_output: String,
    /// Why there is no fp8 timing (cuBLASLt refused the shape or the GPU), when there is none.
    pub cublaslt_fp8_unavailable: Option<String>,
}

fn bf16_name() -> String {
    "bf16".into()
}

impl MxBaselines {
    pub const QUANTIZER: &'static str =
        "OCP MX, FLOOR scales (shared/check/mx.rs), on the CPU; bf16 inputs with a per-block 2^-4..2^4 spread";
}

impl StepRecord {
    /// `step03`.
    pub fn step_id(&self) -> String {
        format!("step{:02}", self.step)
    }

    /// `03 register_tiling`: how the figure and tables label a step.
    pub fn label(&self) -> String {
        format!("{:02} {}", self.step, self.name)
    }

    /// The number format of the record's step (bf16 for a step this build does not know).
    pub fn format(&self) -> crate::run::registry::Format {
        crate::run::steps::get(self.step).map_or(crate::run::registry::Format::Bf16, |s| s.format)
    }

    /// The cuBLAS this record's step is judged against ([`StepRecord::baseline`]), its timing and the
    /// step's ratio to it. A record that names fp32 C without its timing (a hand-made one) falls back
    /// to the bf16-C cuBLAS, labelled as such: the label always names the number.
    pub fn headline(&self) -> Headline<'_> {
        let f32_c = self
            .mx
            .as_ref()
            .and_then(|mx| Some((mx.cublas_f32_c.as_ref()?, mx.ratio_cublas_f32_c?)));
        match (self.baseline, f32_c) {
            (Baseline::CublasF32C, Some((cublas, ratio))) => Headline {
                baseline: Baseline::CublasF32C,
                cublas,
                ratio,
            },
            _ => Headline {
                baseline: Baseline::CublasBf16C,
                cublas: &self.cublas_bf16,
                ratio: self.ratio_bf16,
            },
        }
    }

    /// Shared memory per block: static (when known) plus dynamic.
    pub fn smem_bytes(&self) -> u32 {
        self.static_smem_bytes.unwrap_or(0) + self.dynamic_smem_bytes
    }

    /// What a new record replaces: a sweep record replaces a sweep record of the same step and shape,
    /// and a plain run a plain run, so the two kinds never overwrite each other.
    /// What a new record replaces: the same step, twin, shape and sweep. A step's sm80 twin is
    /// recorded beside its Hopper kernel on the same GPU, not over it.
    fn key(&self) -> (u8, bool, Shape, bool) {
        (self.step, self.is_sm80_twin(), self.shape, self.sweep)
    }

    /// The twin whose kernel ran, named by the kernel file the record carries (`…/sm80.cu`: the sm80
    /// twin); `None` for the CUDA-core steps, whose one kernel every GPU runs.
    pub fn twin(&self) -> Option<crate::run::registry::Twin> {
        crate::run::registry::Twin::of_kernel_path(&self.kernel)
    }

    /// An sm80 twin's TFLOPS over its ldmatrix-fed `mma.sync` ceiling, like with like: the two timed
    /// in one loop; for a record whose ceiling had a loop of its own, each over its own loop's cuBLAS
    /// bf16, (twin / cuBLAS) ÷ (ceiling / cuBLAS), so that neither loop's clocks favour one side.
    /// `None` without a ceiling.
    pub fn ceiling_ratio(&self) -> Option<f64> {
        let c = self.mma_sync_ceiling.as_ref()?;
        Some(if c.in_step_loop {
            self.time.tflops / c.ldmatrix.tflops
        } else {
            (self.time.tflops / self.cublas_bf16.tflops) / (c.ldmatrix.tflops / c.cublas_bf16.tflops)
        })
    }

    /// Whether the kernel recorded is a step's sm80 twin (`sm80.cu`).
    pub fn is_sm80_twin(&self) -> bool {
        self.twin() == Some(crate::run::registry::Twin::Sm80)
    }
}

/// Everything measured on one GPU model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultsFile {
    pub device: DeviceInfo,
    pub records: Vec<StepRecord>,
    /// Profiled records that a record of a different kernel (another source hash) replaced: the
    /// newest per (step, shape, sweep). The evidence table shows the step before its last change
    /// beside the step now, so that a change's effect on the counters stays in the book.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub superseded: Vec<StepRecord>,
}

impl ResultsFile {
    /// The file-name stem this file is stored under.
    pub fn slug(&self) -> String {
        slug(&self.device.name)
    }

    /// Adds `new` records, replacing any with the same (step, shape, sweep), and sorts by that key.
    /// When `new` itself repeats a key, the last one wins. A profiled record replaced by one of a
    /// different kernel is kept in [`ResultsFile::superseded`].
    pub fn merge(&mut self, new: &[StepRecord]) {
        for record in new {
            match self.records.iter_mut().find(|r| r.key() == record.key()) {
                Some(old) => {
                    let replaced = std::mem::replace(old, record.clone());
                    let profiled = replaced.profile.as_ref().is_some_and(|p| p.ncu.is_some());
                    if profiled && replaced.source_hash != record.source_hash {
                        self.superseded.retain(|r| r.key() != replaced.key());
                        self.superseded.push(replaced);
                    }
                }
                None => self.records.push(record.clone()),
            }
        }
        self.records.sort_by_key(|r| r.key());
        self.superseded.sort_by_key(|r| r.key());
    }

    /// The profiled record that `record`'s kernel replaced at its step and shape, if one is kept.
    pub fn superseded_by(&self, record: &StepRecord) -> Option<&StepRecord> {
        self.superseded.iter().find(|r| r.key() == record.key())
    }
}

/// A file-name-safe form of a GPU name: `NVIDIA H100 80GB HBM3` → `nvidia-h100-80gb-hbm3`.
/// Lower-case ASCII letters and digits, every other run of characters one `-`, none at either end.
pub fn slug(device_name: &str) -> String {
    let mut out = String::with_capacity(device_name.len());
    for c in device_name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    while out.ends_with('-') {
        out.pop();
    }
    if out.is_empty() {
        out.push_str("unknown-gpu");
    }
    out
}

/// `book/src/results`.
pub fn results_dir(book_dir: &Path) -> PathBuf {
    book_dir.join("src").join("results")
}

/// `book/src/results/<slug>.json`.
pub fn results_path(book_dir: &Path, device_name: &str) -> PathBuf {
    results_dir(book_dir).join(format!("{}.json", slug(device_name)))
}

/// Adds `records` to the results file of `device` (creating it if needed), replacing records of the
/// same (step, shape, sweep), updates the device information, and writes the file atomically. Returns its path.
pub fn record(book_dir: &Path, device: &DeviceInfo, records: &[StepRecord]) -> Result<PathBuf> {
    let path = results_path(book_dir, &device.name);
    let mut file = if path.exists() {
        load(&path)?
    } else {
        ResultsFile {
            device: device.clone(),
            records: Vec::new(),
            superseded: Vec::new(),
        }
    };
    file.device = device.clone();
    file.merge(records);
    write_atomic(&path, &file)?;
    Ok(path)
}

/// `files` split in two views, one per family of kernels the book shows: every record but the sm80
/// twins' (the GPU's own kernels, and steps 01–03, which every twin shares), and the sm80 twins'
/// records with steps 01–03's (so that step 04's twin has its predecessor); a file with no sm80 twin
/// record is left out of the second. In the sm80 view, a profile that may be another twin's
/// ([`crate::run::profile::NcuCounters::of_twin_unknown`]: made before the profiling child was told
/// its twin) keeps its computed figures only, and says why.
pub fn split_sm80_twins(files: Vec<ResultsFile>) -> (Vec<ResultsFile>, Vec<ResultsFile>) {
    let mut own = Vec::with_capacity(files.len());
    let mut sm80 = Vec::new();
    let shared = |r: &StepRecord| r.twin().is_none();
    for file in files {
        let twins: Vec<StepRecord> = file
            .records
            .iter()
            .filter(|r| r.is_sm80_twin() || shared(r))
            .cloned()
            .map(without_other_twins_counters)
            .collect();
        if twins.iter().any(StepRecord::is_sm80_twin) {
            let twins_before = file
                .superseded
                .iter()
                .filter(|r| r.is_sm80_twin() || shared(r))
                .cloned()
                .map(without_other_twins_counters)
                .collect();
            sm80.push(ResultsFile {
                device: file.device.clone(),
                records: twins,
                superseded: twins_before,
            });
        }
        own.push(ResultsFile {
            device: file.device,
            records: file.records.into_iter().filter(|r| !r.is_sm80_twin()).collect(),
            superseded: file.superseded.into_iter().filter(|r| !r.is_sm80_twin()).collect(),
        });
    }
    (own, sm80)
}

/// `record` with its Nsight Compute counters dropped where they may be another twin's kernel's.
fn without_other_twins_counters(mut record: StepRecord) -> StepRecord {
    let kernel = record.kernel.clone();
    if let Some(profile) = record.profile.as_mut() {
        if profile.ncu.as_ref().is_some_and(|n| n.of_twin_unknown(&kernel)) {
            profile.ncu = None;
            profile.cublas_ncu = None;
            profile.source = crate::run::profile::ProfileSource::Computed;
            profile.note = Some(
                "its profile was made before the profiling child was told its twin, and measured the GPU's own kernel"
                    .into(),
            );
        }
    }
    record
}

/// Reads one results file; a file that does not parse is an error that names it.
pub fn load(path: &Path) -> Result<ResultsFile> {
    let text = std::fs::read_to_string(path).map_err(Error::io(format!("reading {}", path.display())))?;
    serde_json::from_str(&text).map_err(|e| {
        Error::Other(format!(
            "results file {} is malformed ({e}); it is written by the program only: delete it and run the steps again",
            path.display()
        ))
    })
}

/// Every results file under `book/src/results`, in file-name order. No folder means no results.
pub fn load_all(book_dir: &Path) -> Result<Vec<ResultsFile>> {
    let dir = results_dir(book_dir);
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut paths = Vec::new();
    for entry in std::fs::read_dir(&dir).map_err(Error::io(format!("listing {}", dir.display())))? {
        let entry = entry.map_err(Error::io(format!("listing {}", dir.display())))?;
        let path = entry.path();
        if path.is_file() && path.extension().is_some_and(|e| e == "json") {
            paths.push(path);
        }
    }
    paths.sort();
    paths.iter().map(|p| load(p)).collect()
}

/// Pretty JSON that reads back to the same text. serde_json's default float parser may land one unit
/// in the last place away from the printed value, which would make the next save of an untouched
/// record print different digits; printing what was read back until nothing changes avoids that churn.
fn stable_json(file: &ResultsFile) -> serde_json::Result<String> {
    let mut text = serde_json::to_string_pretty(file)?;
    for _ in 0..4 {
        let again = serde_json::to_string_pretty(&serde_json::from_str::<ResultsFile>(&text)?)?;
        if again == text {
            break;
        }
        text = again;
    }
    Ok(text)
}

/// Pretty JSON with a trailing newline, written to a temporary file beside `path` and renamed over it,
/// so that a reader never sees half a file.
fn write_atomic(path: &Path, file: &ResultsFile) -> Result<()> {
    let mut text =
        stable_json(file).map_err(|e| Error::Other(format!("serialising the results for {}: {e}", path.display())))?;
    text.push('\n');
    write_file_atomically(path, &text)
}

/// Writes `text` to `path` (creating folders) through a temporary file and a rename, so that a reader
/// never sees half a file.
pub fn write_file_atomically(path: &Path, text: &str) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(Error::io(format!("creating {}", dir.display())))?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, text).map_err(Error::io(format!("writing {}", tmp.display())))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::Io {
            context: format!("replacing {}", path.display()),
            source: e,
        }
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn device(name: &str) -> DeviceInfo {
        DeviceInfo {
            name: name.into(),
            compute_capability: "9.0".into(),
            sms: 132,
            l2_bytes: 50 * 1024 * 1024,
            memory_bytes: 80 * 1024 * 1024 * 1024,
            sm_clock_mhz: Some(1980),
            mem_clock_mhz: Some(2619),
            driver: "13.0".into(),
            nvrtc: "13.0".into(),
        }
    }

    fn timing(shape: Shape, ms: f64) -> Timing {
        Timing {
            median_ms: ms,
            min_ms: ms * 0.98,
            max_ms: ms * 1.05,
            runs: 50,
            tflops: tflops(&shape, ms),
        }
    }

    /// A record whose kernel takes `ms` milliseconds; cuBLAS bf16 takes 0.2 ms per 4096³.
    /// "× ceiling" compares like with like: in one loop, the two rates; for an old record whose
    /// ceilings had a loop of their own, each rate over its own loop's cuBLAS. Old records load.
    #[test]
    fn the_ceiling_ratio_compares_like_with_like() {
        let mut twin = record_of(5, "swizzle128", 4096, 0.4);
        assert_eq!(twin.ceiling_ratio(), None);
        let at = |tflops: f64| CeilingTiming {
            median_ms: 1.0,
            runs: 10,
            flops: tflops * 1e9,
            tflops,
        };
        let mut own_loop_cublas = twin.cublas_bf16.clone();
        own_loop_cublas.tflops = 2.0 * twin.cublas_bf16.tflops;
        let old = MmaSyncCeiling {
            kernel: "shared/run/mma_sync_ceiling.cu".into(),
            source_hash: String::new(),
            registers: at(600.0),
            ldmatrix: at(500.0),
            cublas_bf16: own_loop_cublas,
            clocks: None,
            in_step_loop: false,
        };
        twin.mma_sync_ceiling = Some(old.clone());
        // The ceiling's loop ran twice as fast (its cuBLAS says so): the twin's share doubles.
        let plain = twin.time.tflops / 500.0;
        assert!((twin.ceiling_ratio().unwrap() - 2.0 * plain).abs() < 1e-12);
        twin.mma_sync_ceiling = Some(MmaSyncCeiling {
            in_step_loop: true,
            ..old.clone()
        });
        assert!((twin.ceiling_ratio().unwrap() - plain).abs() < 1e-12);
        // A record from before the field reads as timed in a loop of its own, and writes back as it was.
        let mut json = serde_json::to_value(&old).unwrap();
        assert!(json.get("in_step_loop").is_none(), "{json}");
        json.as_object_mut().unwrap().remove("in_step_loop");
        let back: MmaSyncCeiling = serde_json::from_value(json).unwrap();
        assert!(!back.in_step_loop);
    }

    pub(crate) fn record_of(step: u8, name: &str, size: usize, ms: f64) -> StepRecord {
        let shape = Shape::square(size);
        let scale = (size as f64 / 4096.0).powi(3);
        let time = timing(shape, ms);
        let cublas_bf16 = timing(shape, 0.2 * scale);
        let cublas_sgemm = (step <= 3).then(|| timing(shape, 2.4 * scale));
        // The step's first registered kernel file and its hash now, as a fresh run would record them;
        // a step the registry does not hold gets a made-up path and no hash.
        let registered = crate::run::steps::get(step).ok().and_then(|s| s.kernels.first());
        let kernel = registered.map_or_else(
            || format!("steps/step{step:02}_{name}/kernel.cu"),
            |k| k.path.to_string(),
        );
        StepRecord {
            step,
            name: name.into(),
            title: format!("step {step}"),
            arch: "sm_90".into(),
            source_hash: registered.map(crate::run::provenance::source_hash),
            kernel,
            shape,
            sweep: false,
            seed: 42,
            date: "2025-11-21T04:26:00Z".into(),
            git: "abc1234".into(),
            ratio_bf16: time.tflops / cublas_bf16.tflops,
            ratio_sgemm: cublas_sgemm.as_ref().map(|s| time.tflops / s.tflops),
            baseline: Baseline::CublasBf16C,
            time,
            cublas_bf16,
            cublas_sgemm,
            timing_method: TimingMethod::Alternating,
            warmup_ms: Some(750.5),
            clocks: Some(ClockSummary {
                samples: 51,
                sm_mhz_min: 1590,
                sm_mhz_median: 1755,
                sm_mhz_max: 1980,
                power_w_mean: Some(652.25),
                power_limit_w: Some(700.0),
                power_capped_fraction: Some(0.875),
            }),
            checks: vec![Check {
                against: "cuBLAS bf16".into(),
                compared: (size * size) as u64,
                rel_fro: 1.25e-3,
                max_abs: 0.0625,
                rel_fro_bound: 1e-2,
                elementwise_bound: "|d| <= 2^-7·|ref| + 1e-3·rms(ref)".into(),
                passed: true,
                first_failure: None,
            }],
            registers: Some(40),
            static_smem_bytes: Some(8192),
            dynamic_smem_bytes: 0,
            local_bytes: Some(0),
            profile: None,
            mx: None,
            plan: None,
            alternatives: Vec::new(),
            mma_sync_ceiling: None,
        }
    }

    #[test]
    fn slugs_are_lower_case_and_dashed() {
        assert_eq!(slug("NVIDIA H100 80GB HBM3"), "nvidia-h100-80gb-hbm3");
        assert_eq!(slug("NVIDIA H200"), "nvidia-h200");
        assert_eq!(
            slug("  NVIDIA  GeForce RTX 4090 (laptop) "),
            "nvidia-geforce-rtx-4090-laptop"
        );
        assert_eq!(slug("NVIDIA H100 PCIe/MIG 1g.10gb"), "nvidia-h100-pcie-mig-1g-10gb");
        assert_eq!(slug("???"), "unknown-gpu");
    }

    #[test]
    fn significant_digits() {
        assert_eq!(significant(812.4, 3), "812");
        assert_eq!(significant(12.34, 3), "12.3");
        assert_eq!(significant(0.9123, 3), "0.912");
        assert_eq!(significant(0.00125, 3), "0.00125");
        assert_eq!(significant(0.000125, 3), "1.25e-4");
        assert_eq!(significant(0.0, 3), "0");
        assert_eq!(significant(-2.5, 2), "-2.5");
        assert_eq!(significant(123456.0, 3), "123456");
    }

    #[test]
    fn median_of_odd_counts_extremes_and_tflops_from_the_median() {
        let shape = Shape::square(1024);
        assert_eq!(Timing::from_samples(&[3.0, 1.0, 2.0], &shape).unwrap().median_ms, 2.0);
        assert_eq!(
            Timing::from_samples(&[4.0, 1.0, 3.0, 2.0], &shape).unwrap().median_ms,
            2.5
        );
        let t = Timing::from_samples(&[5.0, 1.0, 9.0], &shape).unwrap();
        assert_eq!((t.min_ms, t.max_ms, t.runs), (1.0, 9.0, 3));
        // 2·4096³ flops in 1 ms is 137.4 TFLOPS.
        let t = Timing::from_samples(&[1.0], &Shape::square(4096)).unwrap();
        assert!((t.tflops - 137.438_953_472).abs() < 1e-6);
    }

    #[test]
    fn timing_summarises_samples() {
        let shape = Shape::square(4096);
        let t = Timing::from_samples(&[3.0, 1.0, 2.0, 4.0], &shape).unwrap();
        assert_eq!((t.median_ms, t.min_ms, t.max_ms, t.runs), (2.5, 1.0, 4.0, 4));
        assert!((t.tflops - shape.flops() / 2.5e-3 / 1e12).abs() < 1e-9);
        assert!(Timing::from_samples(&[], &shape).is_none());
        assert!(Timing::from_samples(&[1.0, f64::NAN], &shape).is_none());
    }

    #[test]
    fn record_merges_replaces_and_sorts() {
        let dir = tempfile::tempdir().unwrap();
        let book = dir.path();
        let dev = device("NVIDIA H100 80GB HBM3");
        let path = record(
            book,
            &dev,
            &[
                record_of(2, "smem_tiling", 4096, 30.0),
                record_of(1, "naive", 4096, 90.0),
            ],
        )
        .unwrap();
        assert_eq!(path, book.join("src/results/nvidia-h100-80gb-hbm3.json"));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.ends_with("}\n"));

        // Same (step, shape) replaces; another shape of the same step is added; device info is updated.
        let mut dev2 = dev.clone();
        dev2.driver = "13.1".into();
        record(
            book,
            &dev2,
            &[
                record_of(2, "smem_tiling", 4096, 20.0),
                record_of(2, "smem_tiling", 8192, 170.0),
            ],
        )
        .unwrap();
        let files = load_all(book).unwrap();
        assert_eq!(files.len(), 1);
        let file = &files[0];
        assert_eq!(file.device.driver, "13.1");
        let keys: Vec<(u8, usize, f64)> = file
            .records
            .iter()
            .map(|r| (r.step, r.shape.m, r.time.median_ms))
            .collect();
        assert_eq!(keys, vec![(1, 4096, 90.0), (2, 4096, 20.0), (2, 8192, 170.0)]);
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(results_dir(book)).unwrap().count(), 1);
    }

    #[test]
    fn round_trip_and_file_order() {
        let dir = tempfile::tempdir().unwrap();
        let book = dir.path();
        let a = vec![record_of(3, "register_tiling", 4096, 5.0)];
        record(book, &device("NVIDIA H200"), &a).unwrap();
        record(book, &device("NVIDIA H100 80GB HBM3"), &a).unwrap();
        let files = load_all(book).unwrap();
        let names: Vec<&str> = files.iter().map(|f| f.device.name.as_str()).collect();
        assert_eq!(names, ["NVIDIA H100 80GB HBM3", "NVIDIA H200"]);
        assert_eq!(files[1].device, device("NVIDIA H200"));
        assert_eq!(files[1].records.len(), 1);
        let back = &files[1].records[0];
        assert_eq!(
            (back.step, &back.name, back.shape, &back.checks),
            (3, &a[0].name, a[0].shape, &a[0].checks)
        );
        assert!((back.time.tflops - a[0].time.tflops).abs() <= 1e-12 * a[0].time.tflops);
        // Loading and saving again leaves the file byte-identical (no churn in records not re-run).
        let path = results_path(book, "NVIDIA H200");
        let before = std::fs::read(&path).unwrap();
        record(book, &device("NVIDIA H200"), &[]).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }

    #[test]
    fn timing_method_and_clocks_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let original = record_of(8, "pipeline", 8192, 1.6);
        record(dir.path(), &device("NVIDIA H200"), std::slice::from_ref(&original)).unwrap();
        let path = results_path(dir.path(), "NVIDIA H200");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"timing_method\": \"alternating\""), "{text}");
        assert!(text.contains("\"sm_mhz_median\": 1755"), "{text}");
        let back = &load(&path).unwrap().records[0];
        assert_eq!(back.timing_method, TimingMethod::Alternating);
        assert_eq!(back.warmup_ms, original.warmup_ms);
        assert_eq!(back.clocks, original.clocks);

        // Without NVML the clocks are absent and say so as null.
        let mut bare = original.clone();
        bare.clocks = None;
        record(dir.path(), &device("NVIDIA H200"), &[bare]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"clocks\": null"), "{text}");
        assert_eq!(load(&path).unwrap().records[0].clocks, None);
    }

    /// Files written before alternation and source hashes have none of the new fields: they still load,
    /// as sequential timings without clocks or hash.
    #[test]
    fn records_from_before_alternation_still_load() {
        let mut value = serde_json::to_value(ResultsFile {
            device: device("NVIDIA H200"),
            records: vec![record_of(6, "tma_store", 4096, 0.2)],
            superseded: Vec::new(),
        })
        .unwrap();
        let old = value["records"][0].as_object_mut().unwrap();
        for field in ["timing_method", "warmup_ms", "clocks", "source_hash"] {
            assert!(old.remove(field).is_some(), "{field}");
        }
        let file: ResultsFile = serde_json::from_value(value).unwrap();
        let r = &file.records[0];
        assert_eq!(
            (r.timing_method, &r.warmup_ms, &r.clocks, &r.source_hash),
            (TimingMethod::Sequential, &None, &None, &None)
        );
    }

    /// A sweep record and a plain run of the same step and shape are kept side by side; `sweep` is
    /// written only when true, so a file without sweep records is what it was before the field.
    #[test]
    fn sweep_records_sit_beside_plain_runs() {
        let dir = tempfile::tempdir().unwrap();
        let plain = record_of(10, "persistent", 4096, 0.2);
        let swept = StepRecord {
            sweep: true,
            ..record_of(10, "persistent", 4096, 0.19)
        };
        let path = record(dir.path(), &device("NVIDIA H200"), std::slice::from_ref(&plain)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(!text.contains("sweep"), "{text}");
        record(dir.path(), &device("NVIDIA H200"), std::slice::from_ref(&swept)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.matches("\"sweep\": true").count(), 1, "{text}");
        // A new sweep replaces the old sweep record and leaves the plain run alone.
        let again = StepRecord {
            sweep: true,
            ..record_of(10, "persistent", 4096, 0.18)
        };
        record(dir.path(), &device("NVIDIA H200"), &[again]).unwrap();
        let back = load(&path).unwrap().records;
        let kept: Vec<(bool, f64)> = back.iter().map(|r| (r.sweep, r.time.median_ms)).collect();
        assert_eq!(kept, [(false, 0.2), (true, 0.18)]);
    }

    /// Step 11's baselines round-trip; other records are written without an `mx` key.
    #[test]
    fn mx_baselines_round_trip_and_are_absent_elsewhere() {
        let dir = tempfile::tempdir().unwrap();
        let plain = record_of(10, "persistent", 4096, 0.2);
        let mut mx = record_of(11, "mxfp8", 4096, 0.25);
        mx.mx = Some(MxBaselines {
            quantizer: MxBaselines::QUANTIZER.into(),
            cublas_f32_c: Some(timing(mx.shape, 0.21)),
            ratio_cublas_f32_c: Some(0.84),
            dequantize_then_cublas: timing(mx.shape, 0.3),
            ratio_dequantize_then_cublas: 1.2,
            dequantize_then_cublas_output: "fp32".into(),
            cublaslt_fp8_tensorwise: Some(timing(mx.shape, 0.12)),
            ratio_cublaslt_fp8_tensorwise: Some(0.48),
            cublaslt_fp8_output: "fp32".into(),
            cublaslt_fp8_unavailable: None,
        });
        let path = record(dir.path(), &device("NVIDIA H200"), &[plain, mx.clone()]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.matches("\"mx\":").count(), 1, "{text}");
        assert!(text.contains("\"dequantize_then_cublas\"") && text.contains("\"cublaslt_fp8_tensorwise\""));
        let back = load(&path).unwrap().records;
        let (got, want) = (back[1].mx.as_ref().unwrap(), mx.mx.as_ref().unwrap());
        assert_eq!(got.ratio_cublaslt_fp8_tensorwise, want.ratio_cublaslt_fp8_tensorwise);
        assert_eq!(
            got.dequantize_then_cublas.median_ms,
            want.dequantize_then_cublas.median_ms
        );
        assert_eq!(
            (&got.quantizer, &got.cublaslt_fp8_output),
            (&want.quantizer, &want.cublaslt_fp8_output)
        );
        assert!(back[0].mx.is_none());
        assert_eq!(
            got.cublas_f32_c.as_ref().map(|t| t.median_ms),
            want.cublas_f32_c.as_ref().map(|t| t.median_ms)
        );
        assert_eq!(got.dequantize_then_cublas_output, "fp32");
    }

    /// The headline follows `baseline`: bf16 C by default (and for files without the field, written
    /// only when it is not), fp32 C for an MXFP8 record that timed it, and bf16 C, so labelled, for
    /// one that names fp32 C without its timing.
    #[test]
    fn the_headline_names_the_baseline_it_reports() {
        let plain = record_of(10, "persistent", 4096, 0.2);
        let h = plain.headline();
        assert_eq!((h.baseline, h.ratio), (Baseline::CublasBf16C, plain.ratio_bf16));
        let text = serde_json::to_string(&plain).unwrap();
        assert!(!text.contains("\"baseline\""), "{text}");

        let mut mx = record_of(11, "mxfp8", 4096, 0.25);
        mx.baseline = Baseline::CublasF32C;
        let h = mx.headline();
        assert_eq!((h.baseline, h.ratio), (Baseline::CublasBf16C, mx.ratio_bf16));
        let f32_c = timing(mx.shape, 0.21);
        mx.mx = Some(MxBaselines {
            quantizer: MxBaselines::QUANTIZER.into(),
            cublas_f32_c: Some(f32_c.clone()),
            ratio_cublas_f32_c: Some(0.84),
            dequantize_then_cublas: timing(mx.shape, 0.3),
            ratio_dequantize_then_cublas: 0.83,
            dequantize_then_cublas_output: "fp32".into(),
            cublaslt_fp8_tensorwise: None,
            ratio_cublaslt_fp8_tensorwise: None,
            cublaslt_fp8_output: "none".into(),
            cublaslt_fp8_unavailable: Some("refused".into()),
        });
        let h = mx.headline();
        assert_eq!((h.baseline, h.cublas, h.ratio), (Baseline::CublasF32C, &f32_c, 0.84));
        let text = serde_json::to_string(&mx).unwrap();
        assert!(text.contains("\"baseline\":\"cublas_f32_c\""), "{text}");
        let back: StepRecord = serde_json::from_str(&text).unwrap();
        assert_eq!(back.headline().baseline, Baseline::CublasF32C);
    }

    /// Step 11's records from before issue 24: "dequantize, then cuBLAS" under its old names, no
    /// output type (bf16 C), no fp32-C cuBLAS, no baseline field: they load, with a bf16-C headline.
    #[test]
    fn mx_records_from_before_the_fp32_baseline_still_load() {
        let text = r#"{"quantizer": "q", "dequantize_then_cublas_bf16": {"median_ms": 0.3, "min_ms": 0.29,
            "max_ms": 0.31, "runs": 9, "tflops": 458.0}, "ratio_dequantize_then_cublas_bf16": 1.1,
            "cublaslt_fp8_tensorwise": null, "ratio_cublaslt_fp8_tensorwise": null,
            "cublaslt_fp8_output": "none", "cublaslt_fp8_unavailable": "refused"}"#;
        let mx: MxBaselines = serde_json::from_str(text).unwrap();
        assert_eq!(
            (mx.dequantize_then_cublas.median_ms, mx.ratio_dequantize_then_cublas),
            (0.3, 1.1)
        );
        assert_eq!(
            (mx.dequantize_then_cublas_output.as_str(), mx.cublas_f32_c.clone()),
            ("bf16", None)
        );
        let mut r = record_of(11, "mxfp8", 4096, 0.25);
        r.mx = Some(mx);
        assert_eq!(r.headline().baseline, Baseline::CublasBf16C);
    }

    #[test]
    fn malformed_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load_all(dir.path()).unwrap().is_empty());
        std::fs::create_dir_all(results_dir(dir.path())).unwrap();
        std::fs::write(results_dir(dir.path()).join("broken.json"), "{ not json").unwrap();
        let err = load_all(dir.path()).unwrap_err().to_string();
        assert!(err.contains("broken.json"), "{err}");
        assert!(record(dir.path(), &device("broken"), &[]).is_err());
    }
}
