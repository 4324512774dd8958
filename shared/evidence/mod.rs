//! Evidence for every rung: what explains a step's time, recorded with the step (`profile` in its
//! record of the results file).
//!
//! Two sources, and the record says which:
//! - **computed** (every run): what the program knows without a profiler — the flops, the bytes the
//!   algorithm must move at the least (A and B read once, C written once), the block size, and the
//!   theoretical occupancy the driver's occupancy calculator gives for the loaded function.
//! - **ncu** (`stepNN --profile`, `ladder --profile`, where Nsight Compute is installed): the program
//!   re-runs itself under `ncu` for the step's kernel alone (one launch; clocks left alone, or locked
//!   to base with `--clock-control base`), reads ncu's raw CSV page and keeps a fixed set of counters
//!   ([`QUANTITIES`]) and the top stall reasons; then the same for cuBLAS bf16's kernel at the same
//!   shape, with the same settings, kept beside them as the yardstick.
//!
//! Counter names change between Nsight Compute versions and GPU families; [`QUANTITIES`] is the one
//! table that maps what the book shows to the names ncu may use for it, in order of preference.
//!
//! The record's side (the `profile` types and the computed figures) is [`crate::run::profile`],
//! re-exported here: a run writes it, and this layer, standing on `run`, fills in the counters.

pub mod timeline;

use crate::check::problem::Shape;
use crate::device::gpu::Gpu;
use crate::error::{Error, Result};
pub use crate::run::profile::{
    block_threads, computed, computed_for_shape, ClustersFit, Computed, NcuCounters, Profile, ProfileSource, Stall,
};
use crate::run::registry::Twin;
use crate::run::results::StepRecord;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

/// How a quantity is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Bytes,
    Count,
    Percent,
    Nanoseconds,
    Hertz,
}

/// One quantity the book shows, and the ncu metrics that may hold it (first found wins).
#[derive(Debug, Clone, Copy)]
pub struct Quantity {
    pub key: &'static str,
    pub label: &'static str,
    pub unit: Unit,
    pub candidates: &'static [&'static str],
}

/// The one table of counter names. Several candidates: different GPU families or ncu versions name
/// the quantity differently (the tensor pipe is `gmma` for Hopper's wgmma, `hmma` for mma.sync).
pub const QUANTITIES: &[Quantity] = &[
    Quantity {
        key: "duration_ns",
        label: "kernel time under ncu",
        unit: Unit::Nanoseconds,
        candidates: &["gpu__time_duration.sum"],
    },
    Quantity {
        key: "cycles_elapsed",
        label: "cycles elapsed (the slowest GPC's)",
        unit: Unit::Count,
        candidates: &["gpc__cycles_elapsed.max"],
    },
    Quantity {
        key: "sm_clock_hz",
        label: "SM clock under ncu",
        unit: Unit::Hertz,
        candidates: &[
            "smsp__cycles_elapsed.avg.per_second",
            "sm__cycles_elapsed.avg.per_second",
        ],
    },
    Quantity {
        key: "dram_read_bytes",
        label: "DRAM bytes read",
        unit: Unit::Bytes,
        candidates: &["dram__bytes_read.sum"],
    },
    Quantity {
        key: "dram_write_bytes",
        label: "DRAM bytes written",
        unit: Unit::Bytes,
        candidates: &["dram__bytes_write.sum"],
    },
    Quantity {
        key: "dram_throughput_pct",
        label: "DRAM throughput (% of peak)",
        unit: Unit::Percent,
        candidates: &[
            "dram__throughput.avg.pct_of_peak_sustained_elapsed",
            "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
        ],
    },
    Quantity {
        key: "l2_hit_rate_pct",
        label: "L2 hit rate",
        unit: Unit::Percent,
        candidates: &["lts__t_sector_hit_rate.pct"],
    },
    Quantity {
        key: "l2_sectors",
        label: "L2 sectors for the SMs (32 B each)",
        unit: Unit::Count,
        candidates: &["lts__t_sectors_srcunit_tex.sum", "lts__t_sectors.sum"],
    },
    Quantity {
        key: "l2_requests",
        label: "L2 requests from the SMs",
        unit: Unit::Count,
        candidates: &["lts__t_requests_srcunit_tex.sum", "lts__t_requests.sum"],
    },
    Quantity {
        key: "l2_throughput_pct",
        label: "L2 throughput (% of peak)",
        unit: Unit::Percent,
        candidates: &["lts__throughput.avg.pct_of_peak_sustained_elapsed"],
    },
    Quantity {
        key: "smem_ld_wavefronts",
        label: "shared loads: wavefronts",
        unit: Unit::Count,
        candidates: &["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"],
    },
    Quantity {
        key: "smem_ld_conflicts",
        label: "shared loads: bank-conflict wavefronts",
        unit: Unit::Count,
        candidates: &["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"],
    },
    Quantity {
        key: "smem_st_wavefronts",
        label: "shared stores: wavefronts",
        unit: Unit::Count,
        candidates: &["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"],
    },
    Quantity {
        key: "smem_st_conflicts",
        label: "shared stores: bank-conflict wavefronts",
        unit: Unit::Count,
        candidates: &["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"],
    },
    Quantity {
        key: "tensor_pipe_pct",
        label: "tensor pipe busy (% of active cycles)",
        unit: Unit::Percent,
        candidates: &[
            "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
            "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
            "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
        ],
    },
    Quantity {
        key: "tensor_pipe_elapsed_pct",
        label: "tensor pipe busy (% of elapsed cycles)",
        unit: Unit::Percent,
        candidates: &[
            "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
            "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed",
        ],
    },
    Quantity {
        key: "fma_pipe_pct",
        label: "FMA pipe busy (% of active cycles)",
        unit: Unit::Percent,
        candidates: &["sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"],
    },
    Quantity {
        key: "achieved_occupancy_pct",
        label: "achieved occupancy",
        unit: Unit::Percent,
        candidates: &["sm__warps_active.avg.pct_of_peak_sustained_active"],
    },
    Quantity {
        key: "issue_busy_pct",
        label: "issue slots busy",
        unit: Unit::Percent,
        candidates: &[
            "sm__inst_issued.avg.pct_of_peak_sustained_active",
            "smsp__issue_active.avg.pct_of_peak_sustained_active",
        ],
    },
];

/// The stall-reason metrics ncu's WarpStateStats section collects: `<PREFIX><reason><SUFFIX>`.
const STALL_PREFIX: &str = "smsp__average_warps_issue_stalled_";
const STALL_SUFFIX: &str = "_per_issue_active.ratio";
/// Stall reasons kept in a record.
const TOP_STALLS: usize = 5;

pub fn quantity(key: &str) -> Option<&'static Quantity> {
    QUANTITIES.iter().find(|q| q.key == key)
}

// ---------------------------------------------------------------------------------------------
// Finding ncu

/// Where Nsight Compute is: `$NCU`, then `ncu` on PATH, then the newest of
/// `/opt/nvidia/nsight-compute/*/ncu`, then `/usr/local/cuda/bin/ncu`.
pub fn find_ncu() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("NCU").map(PathBuf::from) {
        if path.is_file() {
            return Some(path);
        }
    }
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            let candidate = dir.join("ncu");
            if candidate.is_file() {
                return Some(candidate);
            }
        }
    }
    let mut installed: Vec<PathBuf> = std::fs::read_dir("/opt/nvidia/nsight-compute")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("ncu"))
        .filter(|p| p.is_file())
        .collect();
    installed.sort_by_key(|p| version_key(p));
    if let Some(newest) = installed.pop() {
        return Some(newest);
    }
    let cuda = Path::new("/usr/local/cuda/bin/ncu");
    cuda.is_file().then(|| cuda.to_path_buf())
}

/// `/opt/nvidia/nsight-compute/2025.3.1/ncu` → `[2025, 3, 1]`, for picking the newest.
fn version_key(ncu: &Path) -> Vec<u64> {
    ncu.parent()
        .and_then(|d| d.file_name())
        .and_then(|n| n.to_str())
        .map(|n| n.split('.').map(|p| p.parse().unwrap_or(0)).collect())
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// The child: what runs under ncu

/// The environment variable that turns a `stepNN` or `ladder` process into the profiled child:
/// `<step>:<M>:<N>:<K>:<seed>` for the step's kernel of the GPU's own twin, `<step>@<twin>:…` for its
/// kernel of that twin (`5@sm80:4096:4096:4096:7`), or `cublas:<M>:<N>:<K>:<seed>` for cuBLAS bf16's
/// GEMM, or `cublas-f32c:<M>:<N>:<K>:<seed>` for cuBLAS with fp32 C on the dequantized MXFP8 inputs.
pub const CHILD_ENV: &str = "GEMM_LADDER_PROFILE_CHILD";

/// The line the child prints before its launch, followed by the path of the kernel file it runs: the
/// parent checks that ncu profiled the kernel the record is of.
pub const CHILD_RUNS: &str = "profiling child runs";

/// Whose kernel the child launches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildSubject {
    /// A step's own kernel, of a twin (`None`: the GPU's own).
    Step(u8, Option<Twin>),
    /// cuBLAS bf16's GEMM (what every bf16 step is timed against), on the same inputs.
    CublasBf16,
    /// cuBLAS with fp32 C on the exactly dequantized MXFP8 inputs (what an MXFP8 step is timed against).
    CublasF32CDequantized,
}

impl ChildSubject {
    /// The cuBLAS baseline a step of `format` is profiled beside.
    pub fn baseline_of(format: crate::run::registry::Format) -> ChildSubject {
        match crate::run::results::Baseline::of_format(format) {
            crate::run::results::Baseline::CublasBf16C => ChildSubject::CublasBf16,
            crate::run::results::Baseline::CublasF32C => ChildSubject::CublasF32CDequantized,
        }
    }
}

/// What the child is asked to launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChildRequest {
    pub subject: ChildSubject,
    pub shape: Shape,
    pub seed: u64,
}

impl ChildRequest {
    /// The request for the kernel `record` is of: its step, and the twin its kernel file is.
    pub fn of_record(record: &StepRecord, seed: u64) -> ChildRequest {
        ChildRequest {
            subject: ChildSubject::Step(record.step, record.twin()),
            shape: record.shape,
            seed,
        }
    }

    pub fn encode(&self) -> String {
        let subject = match self.subject {
            ChildSubject::Step(step, None) => step.to_string(),
            ChildSubject::Step(step, Some(twin)) => format!("{step}@{}", twin.name()),
            ChildSubject::CublasBf16 => "cublas".to_string(),
            ChildSubject::CublasF32CDequantized => "cublas-f32c".to_string(),
        };
        format!(
            "{subject}:{}:{}:{}:{}",
            self.shape.m, self.shape.n, self.shape.k, self.seed
        )
    }

    pub fn decode(text: &str) -> Option<ChildRequest> {
        let parts: Vec<&str> = text.split(':').collect();
        let [subject, m, n, k, seed] = parts.as_slice() else {
            return None;
        };
        let step = |text: &str| -> Option<ChildSubject> {
            Some(match text.split_once('@') {
                None => ChildSubject::Step(text.parse().ok()?, None),
                Some((step, twin)) => ChildSubject::Step(step.parse().ok()?, Some(Twin::from_name(twin)?)),
            })
        };
        Some(ChildRequest {
            subject: match *subject {
                "cublas" => ChildSubject::CublasBf16,
                "cublas-f32c" => ChildSubject::CublasF32CDequantized,
                other => step(other)?,
            },
            shape: Shape::new(m.parse().ok()?, n.parse().ok()?, k.parse().ok()?),
            seed: seed.parse().ok()?,
        })
    }
}

/// In a process started by [`profile_records`] under ncu: loads the step's kernel of the requested
/// twin and launches it once (nothing else: no predecessor, no alternatives, no cuBLAS, no timing),
/// or launches cuBLAS bf16's GEMM once, and returns `Some`. Otherwise `None`.
pub fn child_main_if_requested() -> Option<Result<()>> {
    let text = std::env::var(CHILD_ENV).ok()?;
    Some(match ChildRequest::decode(&text) {
        None => Err(Error::Usage(format!(
            "{CHILD_ENV}={text}: expected step[@twin]:M:N:K:seed, cublas:M:N:K:seed or cublas-f32c:M:N:K:seed"
        ))),
        Some(request) => run_child(request),
    })
}

fn run_child(request: ChildRequest) -> Result<()> {
    let gpu = Gpu::open()?;
    let twin = match request.subject {
        ChildSubject::Step(_, twin) => twin,
        _ => None,
    };
    let mut session = crate::run::session::Session::new(gpu, request.shape, request.seed)?.with_twin(twin);
    session.without_alternatives();
    match request.subject {
        ChildSubject::Step(step, _) => {
            let path = session.kernel(step)?.file.path;
            println!("{CHILD_RUNS} {path}");
            session.launch(step, 0)?;
            session.gpu.finish(&format!("step{step:02} under ncu"))
        }
        ChildSubject::CublasBf16 => {
            session.launch_cublas_bf16(0)?;
            session.gpu.finish("cuBLAS bf16 under ncu")
        }
        ChildSubject::CublasF32CDequantized => {
            // Quantizes and uploads the MXFP8 inputs (copies, no kernel), then the one GEMM.
            session.ensure_mx()?;
            session.launch_cublas_f32_c_dequantized(0)?;
            session.gpu.finish("cuBLAS (fp32 C) under ncu")
        }
    }
}

/// The kernel file the child said it ran ([`CHILD_RUNS`]), from its output as ncu passed it on.
pub fn child_ran(output: &str) -> Option<&str> {
    output
        .lines()
        .find_map(|l| l.trim().strip_prefix(CHILD_RUNS))
        .map(str::trim)
}

// ---------------------------------------------------------------------------------------------
// Running ncu and reading its CSV

/// Metrics that this process found missing from ncu, kept for the next step (`ladder --profile`).
static MISSING: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
/// ncu's list of metric base names for this GPU, asked once per process (empty: could not ask).
static AVAILABLE: Mutex<Option<BTreeSet<String>>> = Mutex::new(None);

/// The metrics to ask for: every candidate, less those this process found missing, and less the
/// alternatives (quantities with several candidates) whose base name ncu does not list for this GPU.
pub fn metrics_to_request(available: &BTreeSet<String>, missing: &BTreeSet<String>) -> Vec<String> {
    let mut out = Vec::new();
    for q in QUANTITIES {
        for name in q.candidates {
            let base = name.split('.').next().unwrap_or(name);
            let listed = available.is_empty() || available.contains(base);
            if missing.contains(*name) || (q.candidates.len() > 1 && !listed) {
                continue;
            }
            out.push(name.to_string());
        }
    }
    out
}

/// Every `unit__name` token of `ncu --query-metrics`' output.
pub fn metric_names_in(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|t| t.contains("__") && t.chars().next().is_some_and(|c| c.is_ascii_lowercase()))
        .map(str::to_string)
        .collect()
}

fn available_metrics(ncu: &Path) -> BTreeSet<String> {
    let mut cached = AVAILABLE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(set) = cached.as_ref() {
        return set.clone();
    }
    let set = Command::new(ncu)
        .arg("--query-metrics")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| metric_names_in(&String::from_utf8_lossy(&o.stdout)))
        .filter(|s| s.len() > 50)
        .unwrap_or_default();
    *cached = Some(set.clone());
    set
}

fn ncu_version(ncu: &Path) -> String {
    Command::new(ncu)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(|l| l.trim().to_string())
        })
        .unwrap_or_else(|| "Nsight Compute (version unknown)".into())
}

/// Splits one CSV line (fields in double quotes, `""` for a quote inside one).
pub fn csv_fields(line: &str) -> Vec<String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.trim_end_matches(['\r', '\n']).chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(std::mem::take(&mut field)),
            c => field.push(c),
        }
    }
    fields.push(field);
    fields
}

/// A CSV value as a number: `1,234.5` (thousands separators) and `1234.5` alike; `n/a` is `None`.
pub fn csv_number(text: &str) -> Option<f64> {
    let cleaned: String = text.trim().chars().filter(|c| *c != ',').collect();
    cleaned.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// Every kernel row of ncu's `--csv --page raw` output (which may be mixed with ncu's `==PROF==`
/// lines and the program's own output), in order: the kernel's name (empty without that column) and
/// its metric columns, metric name → value.
pub fn parse_raw_csv_rows(text: &str) -> Vec<(String, BTreeMap<String, f64>)> {
    let mut lines = text.lines();
    let Some(header) = lines.by_ref().find(|l| l.starts_with("\"ID\"")).map(csv_fields) else {
        return Vec::new();
    };
    let name_column = header.iter().position(|h| h == "Kernel Name");
    lines
        .filter(|line| line.starts_with('"'))
        .map(csv_fields)
        // The units row has an empty ID.
        .filter(|row| row.first().is_some_and(|id| !id.trim().is_empty()))
        .map(|row| {
            let name = name_column.and_then(|c| row.get(c)).cloned().unwrap_or_default();
            let values = header
                .iter()
                .zip(&row)
                .filter(|(h, _)| h.contains("__"))
                .filter_map(|(h, v)| csv_number(v).map(|v| (h.clone(), v)))
                .collect();
            (name, values)
        })
        .collect()
}

/// The metric columns of the first row of a kernel whose name contains `kernel`, from ncu's raw
/// CSV page ([`parse_raw_csv_rows`]): metric name → value.
pub fn parse_raw_csv(text: &str, kernel: &str) -> Option<BTreeMap<String, f64>> {
    parse_raw_csv_rows(text)
        .into_iter()
        .find(|(name, _)| name.is_empty() || name.contains(kernel))
        .map(|(_, values)| values)
}

/// Of the kernels a run launched, the one that took longest under ncu (`gpu__time_duration.sum`):
/// cuBLAS's GEMM, of whatever it launches for one GEMM (a split-K reduction after it, say). On a tie
/// or without times, the first.
pub fn longest_kernel(rows: Vec<(String, BTreeMap<String, f64>)>) -> Option<(String, BTreeMap<String, f64>)> {
    let time = |values: &BTreeMap<String, f64>| values.get("gpu__time_duration.sum").copied().unwrap_or(0.0);
    rows.into_iter()
        .enumerate()
        .max_by(|(i, (_, a)), (j, (_, b))| time(a).total_cmp(&time(b)).then(j.cmp(i)))
        .map(|(_, row)| row)
}

/// The counters of [`QUANTITIES`] and the top stall reasons, from one kernel's metric columns.
pub fn counters_from(raw: &BTreeMap<String, f64>, tool: &str) -> NcuCounters {
    let mut values = BTreeMap::new();
    let mut metrics = BTreeMap::new();
    for q in QUANTITIES {
        if let Some((name, v)) = q.candidates.iter().find_map(|c| raw.get(*c).map(|v| (*c, *v))) {
            values.insert(q.key.to_string(), v);
            metrics.insert(q.key.to_string(), name.to_string());
        }
    }
    let mut stalls: Vec<Stall> = raw
        .iter()
        .filter_map(|(name, v)| {
            let reason = name.strip_prefix(STALL_PREFIX)?.strip_suffix(STALL_SUFFIX)?;
            // `…_not_issued` variants double-count; `selected` is issuing, not a stall.
            (!reason.ends_with("_not_issued") && reason != "selected" && *v > 0.0).then(|| Stall {
                reason: reason.to_string(),
                per_issue: *v,
            })
        })
        .collect();
    stalls.sort_by(|a, b| b.per_issue.total_cmp(&a.per_issue).then(a.reason.cmp(&b.reason)));
    stalls.truncate(TOP_STALLS);
    NcuCounters {
        tool: tool.to_string(),
        values,
        metrics,
        stalls,
        kernel: None,
        clock_control: None,
        kernel_file: None,
    }
}

/// The requested metrics that an ncu run's output names on an error line (`==ERROR== … <metric> …`).
pub fn rejected_metrics(output: &str, requested: &[String]) -> Vec<String> {
    output
        .lines()
        .filter(|l| l.contains("ERROR") || l.to_ascii_lowercase().contains("failed to find"))
        .flat_map(|l| requested.iter().filter(move |m| l.contains(m.as_str())).cloned())
        .collect::<BTreeSet<String>>()
        .into_iter()
        .collect()
}

/// ncu's `--clock-control` for `--profile`: the clocks the counters are measured at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ClockControl {
    /// The GPU's own clocks (boost, power limit), as the timed runs see them.
    #[default]
    None,
    /// Locked to the base clock: cycles that compare across runs, kernels and GPUs of a kind.
    Base,
}

impl ClockControl {
    /// The value of ncu's `--clock-control`, and of the record's `clock_control`.
    pub fn ncu_value(&self) -> &'static str {
        match self {
            ClockControl::None => "none",
            ClockControl::Base => "base",
        }
    }
}

/// Kernels ncu profiles in the cuBLAS child: every kernel its one GEMM launches (there are few).
const CUBLAS_LAUNCHES: &str = "16";

/// The step kernel a profiling child launches: its entry (ncu's `--kernel-name`, matched exactly) and
/// the kernel file the child must say it ran ([`CHILD_RUNS`]).
#[derive(Debug, Clone, Copy)]
pub struct StepKernel<'a> {
    pub entry: &'a str,
    pub path: &'a str,
}

/// Runs the child's kernel under ncu with `clock` and reads its counters: for a step, its kernel
/// `kernel` once, refused unless the child ran that kernel file; for cuBLAS (`kernel` is `None`: the
/// program does not choose its name), every kernel of its one GEMM, keeping the longest
/// ([`longest_kernel`]).
pub fn run_ncu(
    ncu: &Path,
    child: &Path,
    request: ChildRequest,
    kernel: Option<StepKernel<'_>>,
    clock: ClockControl,
) -> Result<NcuCounters> {
    let available = available_metrics(ncu);
    let tool = ncu_version(ncu);
    let which: Vec<&str> = match kernel {
        // The child launches one kernel of this name: the step's own, of the requested twin.
        Some(kernel) => vec!["--kernel-name", kernel.entry, "--launch-count", "1"],
        None => vec!["--launch-count", CUBLAS_LAUNCHES],
    };
    for _attempt in 0..6 {
        let missing = MISSING.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let metrics = metrics_to_request(&available, &missing);
        let output = Command::new(ncu)
            .args(&which)
            .args(["--clock-control", clock.ncu_value()])
            .args(["--csv", "--page", "raw", "--print-units", "base"])
            .args(["--section", "WarpStateStats", "--metrics", &metrics.join(",")])
            .arg(child)
            .env(CHILD_ENV, request.encode())
            .output()
            .map_err(Error::io(format!("running {}", ncu.display())))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        // A step's counters are kept only if the child ran the record's own kernel file.
        let ran = child_ran(&stdout).or_else(|| child_ran(&stderr));
        if let Some(kernel) = kernel {
            match ran {
                Some(ran) if ran == kernel.path => {}
                Some(ran) => {
                    return Err(Error::Other(format!(
                        "the profiling child ran {ran}, not {}: its counters are not this record's",
                        kernel.path
                    )))
                }
                None if output.status.success() => {
                    return Err(Error::Other(format!(
                        "the profiling child did not say which kernel it ran (expected {})",
                        kernel.path
                    )))
                }
                None => {}
            }
        }
        let found = match kernel {
            Some(kernel) => parse_raw_csv(&stdout, kernel.entry).map(|raw| (kernel.entry.to_string(), raw)),
            None => longest_kernel(parse_raw_csv_rows(&stdout)),
        };
        if let Some((name, raw)) = found {
            let mut counters = counters_from(&raw, &tool);
            counters.kernel = (!name.is_empty()).then_some(name);
            counters.clock_control = Some(clock.ncu_value().to_string());
            counters.kernel_file = kernel.and(ran).map(str::to_string);
            return Ok(counters);
        }
        let all = format!("{stdout}\n{stderr}");
        let rejected = rejected_metrics(&all, &metrics);
        if rejected.is_empty() {
            let why = all
                .lines()
                .find(|l| l.contains("ERR") || l.contains("rror"))
                .unwrap_or("no kernel row in its CSV output")
                .trim()
                .to_string();
            return Err(Error::Other(format!("ncu failed: {why}")));
        }
        eprintln!("note: ncu does not know {}; asking without", rejected.join(", "));
        MISSING.lock().unwrap_or_else(|e| e.into_inner()).extend(rejected);
    }
    Err(Error::Other("ncu failed: it kept refusing metrics".into()))
}

/// `--profile`: adds ncu's counters to each record's `profile` (which already holds the computed
/// figures), and its cuBLAS baseline's at the record's shape beside them (cuBLAS bf16 C, or for an
/// MXFP8 step cuBLAS fp32 C on the dequantized inputs; profiled once per shape and baseline), both
/// measured with `clock`; or says in one line why it cannot and leaves the computed evidence marked
/// as such.
pub fn profile_records(records: &mut [StepRecord], seed: u64, clock: ClockControl) {
    match std::env::current_exe() {
        Ok(this) => profile_records_with(&this, records, seed, clock),
        Err(e) => println!("--profile: cannot find this program's path ({e}): recording the computed evidence only"),
    }
}

/// [`profile_records`] with `child` as the program ncu runs: any `stepNN` or `ladder` binary, which
/// turns into the profiling child when [`CHILD_ENV`] asks (the tests, whose own program is not one).
pub fn profile_records_with(child: &Path, records: &mut [StepRecord], seed: u64, clock: ClockControl) {
    let Some(ncu) = find_ncu() else {
        println!("--profile: Nsight Compute (ncu) not found on PATH or under /opt/nvidia/nsight-compute: recording the computed evidence only");
        for r in records.iter_mut() {
            if let Some(p) = r.profile.as_mut() {
                p.note = Some("ncu not found".into());
            }
        }
        return;
    };
    let mut cublas_by_shape: Vec<((Shape, ChildSubject), Option<NcuCounters>)> = Vec::new();
    for record in records.iter_mut() {
        // The child builds the record's own kernel (its step and twin), launches it once and says
        // which file it ran; ncu profiles that launch by its entry's exact name.
        let request = ChildRequest::of_record(record, seed);
        let entry = crate::run::steps::get(record.step)
            .ok()
            .and_then(|s| s.kernels.iter().find(|k| k.path == record.kernel))
            .map(|k| k.entry)
            .unwrap_or("gemm");
        let kernel = StepKernel {
            entry,
            path: &record.kernel,
        };
        println!(
            "profiling {} {} under {} (clock control {}) ...",
            record.step_id(),
            record.shape,
            ncu.display(),
            clock.ncu_value()
        );
        let format = record.format();
        let profile = record.profile.get_or_insert_with(|| Profile {
            source: ProfileSource::Computed,
            note: None,
            computed: computed_for_shape(record.shape, format, format.c_element_bytes()),
            ncu: None,
            cublas_ncu: None,
            cublas_baseline: crate::run::results::Baseline::CublasBf16C,
        });
        match run_ncu(&ncu, child, request, Some(kernel), clock) {
            Ok(counters) => {
                profile.source = ProfileSource::Ncu;
                profile.note = None;
                println!("  {}", summary_line(profile.computed.compulsory_bytes(), &counters));
                profile.ncu = Some(counters);
            }
            Err(e) => {
                println!("  {e}: recording the computed evidence only");
                profile.note = Some(e.to_string());
                continue;
            }
        }
        let format = crate::run::steps::get(record.step).map_or(crate::run::registry::Format::Bf16, |s| s.format);
        let subject = ChildSubject::baseline_of(format);
        let baseline = crate::run::results::Baseline::of_format(format);
        let known = cublas_by_shape.iter().find(|(key, _)| *key == (record.shape, subject));
        let cublas = match known {
            Some((_, counters)) => counters.clone(),
            None => {
                let request = ChildRequest { subject, ..request };
                let counters = match run_ncu(&ncu, child, request, None, clock) {
                    Ok(counters) => {
                        println!(
                            "  {} ({}): {}",
                            baseline.label(),
                            counters.kernel.as_deref().unwrap_or("its kernel"),
                            summary_line(profile.computed.compulsory_bytes(), &counters)
                        );
                        Some(counters)
                    }
                    Err(e) => {
                        println!("  {}: {e}: recorded without it", baseline.label());
                        None
                    }
                };
                cublas_by_shape.push(((record.shape, subject), counters.clone()));
                counters
            }
        };
        profile.cublas_baseline = baseline;
        profile.cublas_ncu = cublas;
    }
}

/// One line of the counters that matter most, for the terminal.
pub fn summary_line(compulsory_bytes: u64, c: &NcuCounters) -> String {
    let mut parts = Vec::new();
    if let (Some(r), Some(w)) = (c.get("dram_read_bytes"), c.get("dram_write_bytes")) {
        parts.push(format!(
            "DRAM {:.0} MB ({:.1}× the compulsory {:.0} MB)",
            (r + w) / 1e6,
            (r + w) / compulsory_bytes.max(1) as f64,
            compulsory_bytes as f64 / 1e6
        ));
    }
    if let Some(v) = c.get("l2_hit_rate_pct") {
        parts.push(format!("L2 hit {v:.0}%"));
    }
    if let Some(v) = c.get("l2_throughput_pct") {
        parts.push(format!("L2 {v:.0}% busy"));
    }
    if let Some(v) = c.get("tensor_pipe_pct") {
        parts.push(format!("tensor pipe {v:.0}%"));
    }
    if let Some(v) = c.get("smem_ld_wavefronts") {
        parts.push(format!("shared loads {:.3} M wavefronts", v / 1e6));
    }
    if let Some(v) = c.get("cycles_elapsed") {
        parts.push(format!("{:.3} M cycles", v / 1e6));
    }
    if let Some(v) = c.get("duration_ns") {
        parts.push(format!("{:.1} µs under ncu", v / 1e3));
    }
    if let Some(s) = c.stalls.first() {
        parts.push(format!("top stall {}", s.reason));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `ncu --csv --page raw --print-units base` prints, abridged, after the program's lines.
    pub(crate) const RAW: &str = r#"==PROF== Connected to process 4242 (/work/.bin/step05)
==PROF== Profiling "gemm" - 0: 0%....50%....100% - 12 passes
==PROF== Disconnected from process 4242
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","dram__bytes_read.sum","dram__bytes_write.sum","gpu__time_duration.sum","lts__t_sector_hit_rate.pct","lts__t_sectors_srcunit_tex.sum","sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active","smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio","smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio","smsp__average_warps_issue_stalled_selected_per_issue_active.ratio","smsp__average_warps_issue_stalled_wait_per_issue_active.ratio","smsp__average_warps_issue_stalled_barrier_not_issued_per_issue_active.ratio","launch__grid_size"
"","","","","","","","","","","","byte","byte","ns","%","sector","%","inst","inst","inst","inst","inst",""
"0","4242","step05","h200","gemm","1","7","(128, 1, 1)","(32, 32, 1)","0","9.0","136,314,880","33554432","230016","86.25","67108864","62.5","0.5","3.25","1","1.5","9","1024"
"#;

    #[test]
    fn the_raw_csv_page_parses_into_the_table_s_quantities_and_top_stalls() {
        let raw = parse_raw_csv(RAW, "gemm").unwrap();
        assert_eq!(raw["dram__bytes_read.sum"], 136_314_880.0);
        assert_eq!(raw["launch__grid_size"], 1024.0);
        let c = counters_from(&raw, "Version 2025.3.1.0");
        assert_eq!(c.get("dram_read_bytes"), Some(136_314_880.0));
        assert_eq!(c.get("dram_write_bytes"), Some(33_554_432.0));
        assert_eq!(c.get("l2_sectors"), Some(67_108_864.0));
        assert_eq!(c.metrics["l2_sectors"], "lts__t_sectors_srcunit_tex.sum");
        assert_eq!(c.get("tensor_pipe_pct"), Some(62.5));
        assert_eq!(c.get("duration_ns"), Some(230_016.0));
        assert_eq!(c.get("smem_ld_wavefronts"), None);
        let reasons: Vec<&str> = c.stalls.iter().map(|s| s.reason.as_str()).collect();
        // `selected` and `…_not_issued` are not stalls; the rest, largest first.
        assert_eq!(reasons, ["barrier", "wait", "long_scoreboard"]);
        assert!(
            summary_line(3 * 33_554_432, &c).contains("DRAM 170 MB (1.7×"),
            "{}",
            summary_line(3 * 33_554_432, &c)
        );
        // No kernel row, or another kernel's row: nothing.
        assert!(parse_raw_csv("==PROF== nothing profiled\n", "gemm").is_none());
        assert!(parse_raw_csv(RAW, "cutlass").is_none());
    }

    #[test]
    fn csv_fields_and_numbers() {
        assert_eq!(csv_fields(r#""a","b,c","d""e",""#), ["a", "b,c", "d\"e", ""]);
        assert_eq!(csv_number("1,234,567"), Some(1_234_567.0));
        assert_eq!(csv_number(" 86.25 "), Some(86.25));
        assert_eq!(csv_number("n/a"), None);
    }

    #[test]
    fn every_quantity_has_candidates_and_unique_keys() {
        let keys: BTreeSet<&str> = QUANTITIES.iter().map(|q| q.key).collect();
        assert_eq!(keys.len(), QUANTITIES.len());
        for q in QUANTITIES {
            assert!(!q.candidates.is_empty(), "{}", q.key);
            for c in q.candidates {
                assert!(c.contains("__") && c.contains('.'), "{c}");
            }
        }
        assert!(quantity("l2_hit_rate_pct").is_some());
    }

    #[test]
    fn requested_metrics_drop_missing_ones_and_unlisted_alternatives() {
        let all = metrics_to_request(&BTreeSet::new(), &BTreeSet::new());
        let count: usize = QUANTITIES.iter().map(|q| q.candidates.len()).sum();
        assert_eq!(all.len(), count);
        let listed = metric_names_in(
            "Device GH100\n---\nMetric Name   Metric Description\ndram__bytes_read  # of bytes\nsm__pipe_tensor_op_gmma_cycles_active  # cycles\nlts__t_sectors_srcunit_tex  # sectors",
        );
        assert!(listed.contains("dram__bytes_read") && !listed.contains("Device"));
        let missing: BTreeSet<String> = ["dram__bytes_write.sum".to_string()].into();
        let some = metrics_to_request(&listed, &missing);
        assert!(!some.contains(&"dram__bytes_write.sum".to_string()));
        // Single candidates stay even when unlisted; unlisted alternatives go.
        assert!(some.contains(&"lts__t_sector_hit_rate.pct".to_string()));
        assert!(some.contains(&"sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active".to_string()));
        assert!(!some.contains(&"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active".to_string()));
        let rejected = rejected_metrics(
            "==ERROR== Failed to find metric sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active\n",
            &all,
        );
        assert_eq!(
            rejected,
            ["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"]
        );
    }

    #[test]
    fn child_requests_round_trip() {
        let r = ChildRequest {
            subject: ChildSubject::Step(8, None),
            shape: Shape::new(4096, 2048, 1024),
            seed: 77,
        };
        assert_eq!(r.encode(), "8:4096:2048:1024:77");
        assert_eq!(ChildRequest::decode(&r.encode()), Some(r));
        // A twin rides with its step; a request without one (as before twins) is the GPU's own.
        for twin in [Twin::Sm80, Twin::Hopper, Twin::Blackwell] {
            let of_twin = ChildRequest {
                subject: ChildSubject::Step(7, Some(twin)),
                ..r
            };
            assert_eq!(ChildRequest::decode(&of_twin.encode()), Some(of_twin));
        }
        let sm80 = ChildRequest {
            subject: ChildSubject::Step(7, Some(Twin::Sm80)),
            ..r
        };
        assert_eq!(sm80.encode(), "7@sm80:4096:2048:1024:77");
        assert_eq!(ChildRequest::decode("7@ampere:1:2:3:4"), None);
        assert_eq!(ChildRequest::decode("@sm80:1:2:3:4"), None);
        let cublas = ChildRequest {
            subject: ChildSubject::CublasBf16,
            ..r
        };
        assert_eq!(cublas.encode(), "cublas:4096:2048:1024:77");
        assert_eq!(ChildRequest::decode(&cublas.encode()), Some(cublas));
        // An MXFP8 step is profiled beside cuBLAS with fp32 C on the dequantized inputs.
        let f32_c = ChildRequest {
            subject: ChildSubject::baseline_of(crate::run::registry::Format::Mxfp8),
            ..cublas
        };
        assert_eq!(f32_c.encode(), "cublas-f32c:4096:2048:1024:77");
        assert_eq!(ChildRequest::decode(&f32_c.encode()), Some(f32_c));
        assert_eq!(
            ChildSubject::baseline_of(crate::run::registry::Format::Bf16),
            ChildSubject::CublasBf16
        );
        assert_eq!(ChildRequest::decode("8:1:2"), None);
        assert_eq!(ChildRequest::decode("cuBLAS:1:2:3:4"), None);
    }

    /// A record's request names its own kernel's twin, and the child's line names the file it ran.
    #[test]
    fn a_record_is_profiled_as_its_own_twin() {
        use crate::run::results::tests::record_of;
        let mut twin = record_of(5, "swizzle128", 4096, 0.5);
        twin.kernel = "steps/step05_swizzle128/sm80.cu".into();
        let request = ChildRequest::of_record(&twin, 9);
        assert_eq!(request.encode(), "5@sm80:4096:4096:4096:9");
        twin.kernel = "steps/step05_swizzle128/sm90.cu".into();
        assert_eq!(ChildRequest::of_record(&twin, 9).encode(), "5@hopper:4096:4096:4096:9");
        twin.kernel = "steps/step02_smem_tiling/kernel.cu".into();
        twin.step = 2;
        assert_eq!(ChildRequest::of_record(&twin, 9).encode(), "2:4096:4096:4096:9");
        let output = format!("==PROF== Connected\n{CHILD_RUNS} steps/step05_swizzle128/sm80.cu\n{RAW}");
        assert_eq!(child_ran(&output), Some("steps/step05_swizzle128/sm80.cu"));
        assert_eq!(child_ran(RAW), None);
    }

    /// ncu's raw page for the cuBLAS child at 4096³, clocks locked: cuBLAS's GEMM and a short
    /// kernel after it, each with the cycles and the tensor pipe's share of the elapsed cycles.
    const CUBLAS_RAW: &str = r#"==PROF== Connected to process 5151 (/work/.bin/step10)
==PROF== Profiling "nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTN" - 0: 0%....50%....100% - 14 passes
==PROF== Profiling "splitKreduce_kernel" - 1: 0%....50%....100% - 14 passes
==PROF== Disconnected from process 5151
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","gpc__cycles_elapsed.max","gpu__time_duration.sum","sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed","dram__bytes_read.sum"
"","","","","","","","","","","","cycle","ns","%","byte"
"0","5151","step10","h200","nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTN","1","7","(384, 1, 1)","(132, 1, 1)","0","9.0","248,512","225,120","71.5","100,663,296"
"1","5151","step10","h200","splitKreduce_kernel","1","7","(256, 1, 1)","(64, 1, 1)","0","9.0","4,100","3,200","0","33,554,432"
"#;

    #[test]
    fn the_cublas_child_s_gemm_is_its_longest_kernel() {
        let rows = parse_raw_csv_rows(CUBLAS_RAW);
        assert_eq!(rows.len(), 2);
        let (name, raw) = longest_kernel(rows).unwrap();
        assert_eq!(name, "nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTN");
        let c = counters_from(&raw, "Version 2025.3.1.0");
        assert_eq!(c.get("cycles_elapsed"), Some(248_512.0));
        assert_eq!(c.get("tensor_pipe_elapsed_pct"), Some(71.5));
        assert_eq!(
            c.metrics["tensor_pipe_elapsed_pct"],
            "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed"
        );
        assert_eq!(c.get("duration_ns"), Some(225_120.0));
        assert!(
            summary_line(100 << 20, &c).contains("0.249 M cycles"),
            "{}",
            summary_line(100 << 20, &c)
        );
        // The step's page parses as before, by its kernel's name; no rows, no kernel.
        assert_eq!(parse_raw_csv_rows(RAW).len(), 1);
        assert!(longest_kernel(parse_raw_csv_rows("==PROF== nothing profiled\n")).is_none());
        // Without times, the first.
        let untimed = vec![("a".to_string(), BTreeMap::new()), ("b".to_string(), BTreeMap::new())];
        assert_eq!(longest_kernel(untimed).unwrap().0, "a");
    }

    #[test]
    fn counters_say_their_clock_control_and_old_records_load_without_it() {
        let c = counters_from(&parse_raw_csv(RAW, "gemm").unwrap(), "Version 2025.3.1.0");
        assert_eq!((c.kernel.as_deref(), c.clock_control()), (None, "none"));
        let json = serde_json::to_string(&c).unwrap();
        assert!(
            !json.contains("clock_control") && !json.contains("\"kernel\""),
            "{json}"
        );
        let old: NcuCounters = serde_json::from_str(
            r#"{"tool":"Version 2025.3.1.0","values":{"duration_ns":1.0},"metrics":{},"stalls":[]}"#,
        )
        .unwrap();
        assert_eq!((old.kernel.as_deref(), old.clock_control()), (None, "none"));
        let locked = NcuCounters {
            clock_control: Some(ClockControl::Base.ncu_value().into()),
            ..old
        };
        let back: NcuCounters = serde_json::from_str(&serde_json::to_string(&locked).unwrap()).unwrap();
        assert_eq!(back.clock_control(), "base");
        // A profile from before cuBLAS was profiled beside the step loads, without it.
        let profile: Profile = serde_json::from_str(
            r#"{"source":"computed","computed":{"flops":1.0,"bytes_a":1,"bytes_b":1,"bytes_c":1,"block_threads":null,"blocks_per_sm":null,"theoretical_occupancy":null}}"#,
        )
        .unwrap();
        assert!(profile.cublas_ncu.is_none() && profile.ncu.is_none());
    }

    #[test]
    fn version_directories_sort_numerically() {
        let mut dirs = [
            PathBuf::from("/opt/nvidia/nsight-compute/2025.10.0/ncu"),
            PathBuf::from("/opt/nvidia/nsight-compute/2025.3.1/ncu"),
        ];
        dirs.sort_by_key(|p| version_key(p));
        assert!(dirs[1].to_string_lossy().contains("2025.10.0"));
    }
}
