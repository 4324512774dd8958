//! The step contract: what each step registers with the harness.
//!
//! A step names its kernel files (one per architecture family), how each is launched, and which step
//! came before it. Because the registry lives in the library, any step's binary can compile and run
//! its predecessor for verification.

use crate::check::problem::Shape;
use crate::device::arch::Arch;
use crate::encoding::tma::TensorMap;
use crate::error::{Error, Result};
use crate::run::workspace::{WorkspaceFn, WorkspaceView};
use cudarc::driver::{CudaFunction, CudaStream, LaunchConfig, PushKernelArg};
use std::ffi::c_void;

/// Which GPUs a kernel file is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Targets {
    /// CUDA-core code: compiled for the device's own plain `sm_XY` (compute capability 7.5 or newer:
    /// below 8.0 a software rounding stands in for the `cvt` to bf16, in common.cuh).
    AnyGpu,
    /// Hopper twin: wgmma, TMA, clusters; `sm_90a` only.
    Hopper,
    /// The Blackwell texts' design (References): tcgen05, TMEM; `sm_100a` only. Assembled in the
    /// tests, not run here.
    Blackwell,
    /// The Ampere-class twin (`sm80.cu`): cp.async, ldmatrix, mma.sync, which every GPU of compute
    /// capability 8.0 or newer has; compiled for the device's own plain `sm_XY`, as [`Targets::AnyGpu`].
    Ampere,
    /// An sm80-twin file that also needs fp8 (e4m3) `mma.sync`: compute capability 8.9 or newer (L4,
    /// RTX 40/50, H100, H200); compiled for the device's own plain `sm_XY`.
    AmpereFp8,
    /// An sm80-twin file that needs the block-scaled `mma.sync … kind::mxf8f6f4.block_scale` of the
    /// consumer Blackwell GPUs: compute capability 12.x, compiled for the arch-specific `sm_120a` (or
    /// `sm_121a`). Assembled in the tests, not run here.
    AmpereBlockScaled,
}

impl Targets {
    /// Whether this file serves a device of the given compute capability.
    pub fn serves(&self, major: u32, minor: u32) -> bool {
        match self {
            Targets::AnyGpu => (major, minor) >= (7, 5),
            Targets::Ampere => major >= 8,
            Targets::AmpereFp8 => (major, minor) >= (8, 9),
            Targets::AmpereBlockScaled => major == 12,
            Targets::Hopper => (major, minor) == (9, 0),
            Targets::Blackwell => (major, minor) == (10, 0),
        }
    }

    /// The architecture to compile for on a device of compute capability `major.minor`.
    pub fn arch_for_device(&self, major: u32, minor: u32) -> Arch {
        match self {
            Targets::AnyGpu | Targets::Ampere | Targets::AmpereFp8 => Arch::of_device(major, minor),
            Targets::AmpereBlockScaled => Arch::new(major, minor, true),
            Targets::Hopper => Arch::SM90A,
            Targets::Blackwell => Arch::SM100A,
        }
    }

    /// Whether `--emit --arch` may compile this file for `arch`. A portable file compiles for the
    /// arch-specific targets too (`sm_90a` is `sm_90` plus instructions it does not use).
    pub fn compiles_for(&self, arch: Arch) -> bool {
        match self {
            Targets::AnyGpu => (arch.major, arch.minor) >= (7, 5),
            Targets::Ampere => arch.major >= 8,
            Targets::AmpereFp8 => (arch.major, arch.minor) >= (8, 9),
            Targets::AmpereBlockScaled => arch.major == 12 && arch.arch_specific,
            Targets::Hopper => arch == Arch::SM90A,
            Targets::Blackwell => arch == Arch::SM100A,
        }
    }

    /// Every architecture the tests compile and assemble this file for.
    pub fn claimed_archs(&self) -> &'static [Arch] {
        match self {
            // sm_75 (the T4) takes common.cuh's software bf16 rounding; sm_80 and newer the `cvt`.
            Targets::AnyGpu => &[Arch::SM75, Arch::SM80, Arch::SM90, Arch::SM100],
            Targets::Hopper => &[Arch::SM90A],
            Targets::Blackwell => &[Arch::SM100A],
            // Every family a student's GPU may be: ptxas refuses an sm_90+ instruction for sm_80,
            // and assembling for sm_120 proves the file needs nothing of Hopper's to run there.
            Targets::Ampere => &[Arch::SM80, Arch::SM86, Arch::SM89, Arch::SM90, Arch::SM120],
            // ptxas refuses fp8 mma.sync for sm_80 and sm_86.
            Targets::AmpereFp8 => &[Arch::SM89, Arch::SM90, Arch::SM120],
            // The block-scaled mma.sync exists only for the arch-specific targets of 12.x.
            Targets::AmpereBlockScaled => &[Arch::SM120A],
        }
    }

    pub fn describe(&self) -> &'static str {
        match self {
            Targets::AnyGpu => "a CUDA GPU of compute capability 7.5 (T4) or newer",
            Targets::Hopper => "a Hopper GPU (sm_90a: H100, H200)",
            Targets::Blackwell => "a Blackwell datacenter GPU (sm_100a: B200)",
            Targets::Ampere => {
                "a CUDA GPU of compute capability 8.0 or newer for the Ampere-class twin (sm80.cu: cp.async, ldmatrix, bf16 mma.sync)"
            }
            Targets::AmpereFp8 => "a CUDA GPU of compute capability 8.9 or newer (fp8 mma.sync: L4, RTX 40/50, H100, H200)",
            Targets::AmpereBlockScaled => {
                "a GPU of compute capability 12.x (sm_120a: RTX 50, RTX PRO 6000; block-scaled mma.sync); assembled only, never run by this project"
            }
        }
    }

    /// The twin this family of kernel files is, if it is one (the CUDA-core files of steps 01–03 are
    /// no twin: every GPU runs the same one).
    pub fn twin(&self) -> Option<Twin> {
        match self {
            Targets::AnyGpu => None,
            Targets::Hopper => Some(Twin::Hopper),
            Targets::Blackwell => Some(Twin::Blackwell),
            Targets::Ampere | Targets::AmpereFp8 | Targets::AmpereBlockScaled => Some(Twin::Sm80),
        }
    }
}

/// The tensor-core steps' kernel families, as `--twin` names them. Each step 04–11 has one file per
/// twin it was written for; the GPU picks its own twin unless `--twin` says otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, clap::ValueEnum)]
pub enum Twin {
    /// `sm90.cu`: TMA, wgmma, clusters (H100, H200).
    Hopper,
    /// `sm80.cu`: cp.async, ldmatrix, mma.sync (any GPU of compute capability 8.0 or newer).
    Sm80,
    /// `sm100.cu`: tcgen05 and TMEM (B200); assembled only by this project.
    Blackwell,
}

impl Twin {
    /// The family of kernel files this twin is.
    pub fn targets(&self) -> Targets {
        match self {
            Twin::Hopper => Targets::Hopper,
            Twin::Sm80 => Targets::Ampere,
            Twin::Blackwell => Targets::Blackwell,
        }
    }

    /// `sm80`, as `--twin` spells it.
    pub fn name(&self) -> &'static str {
        match self {
            Twin::Hopper => "hopper",
            Twin::Sm80 => "sm80",
            Twin::Blackwell => "blackwell",
        }
    }

    /// The twin `--twin` names `name` ([`Twin::name`]), if any.
    pub fn from_name(name: &str) -> Option<Twin> {
        [Twin::Hopper, Twin::Sm80, Twin::Blackwell]
            .into_iter()
            .find(|t| t.name() == name)
    }

    /// The twin a kernel file belongs to, read from its path: `…/sm80.cu` and its alternatives
    /// `…/sm80_*.cu` are the sm80 twin. Records name their kernel by path, so tables and the results
    /// file tell twins apart by this.
    pub fn of_kernel_path(path: &str) -> Option<Twin> {
        let file = path.rsplit('/').next().unwrap_or(path);
        let family = file.trim_end_matches(".cu").split(['_', '+']).next().unwrap_or("");
        match family {
            "sm80" => Some(Twin::Sm80),
            "sm90" => Some(Twin::Hopper),
            "sm100" => Some(Twin::Blackwell),
            _ => None,
        }
    }
}

/// The number formats of a step's operands and result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Steps 01–10: `A`, `B` bf16, fp32 accumulation, `C` bf16.
    Bf16,
    /// Step 11: `A`, `B` OCP fp8 e4m3 (`e4m3fn`) with one e8m0 scale per 1×32 block along K (in the
    /// blocked layout of [`crate::check::mx::to_blocked`]), fp32 accumulation, `C` fp32.
    Mxfp8,
}

impl Format {
    /// Elements along K that share one scale (MX block size).
    pub const MX_BLOCK: usize = 32;

    /// The compulsory bytes of a `rows` × `k` operand in this format: bf16, 2 bytes an element; MXFP8,
    /// 1 byte an element (e4m3) and one scale byte per 32 along K.
    pub fn operand_bytes(&self, rows: usize, k: usize) -> u64 {
        let (rows, k) = (rows as u64, k as u64);
        match self {
            Format::Bf16 => 2 * rows * k,
            Format::Mxfp8 => rows * k + rows * k.div_ceil(Self::MX_BLOCK as u64),
        }
    }

    /// Bytes an element of `C`: bf16, 2; MXFP8, fp32, 4.
    pub fn c_element_bytes(&self) -> u64 {
        match self {
            Format::Bf16 => 2,
            Format::Mxfp8 => 4,
        }
    }

    /// The rule this format adds to the shape contract every step shares, if `shape` breaks it:
    /// MXFP8 needs K to be a whole number of 32-element scale blocks.
    pub fn contract_violation(&self, shape: Shape) -> Option<String> {
        match self {
            Format::Bf16 => None,
            Format::Mxfp8 if !shape.k.is_multiple_of(Self::MX_BLOCK) => Some(format!(
                "K must be a multiple of 32 for MXFP8 (one e8m0 scale per 1×32 block along K); K = {}",
                shape.k
            )),
            Format::Mxfp8 => None,
        }
    }

    /// The shape contract and this format's rule, as an error naming who refused the shape.
    pub fn check(&self, shape: Shape, refused_by: &str) -> Result<()> {
        shape.check(refused_by)?;
        match self.contract_violation(shape) {
            None => Ok(()),
            Some(rule) => Err(Error::Shape {
                step: refused_by.to_string(),
                m: shape.m,
                n: shape.n,
                k: shape.k,
                rule,
            }),
        }
    }
}

/// The cuBLAS a step's headline ratio is against, like for like with its [`Format`]'s C
/// (`crate::run::results::StepRecord::baseline`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Baseline {
    /// cuBLAS bf16 in, fp32 compute, bf16 C (`StepRecord::cublas_bf16`): the bf16 steps' output.
    #[default]
    CublasBf16C,
    /// cuBLAS on the exactly dequantized MXFP8 operands (bf16 in), fp32 C (`MxBaselines::cublas_f32_c`):
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
    pub fn of_format(format: Format) -> Baseline {
        match format {
            Format::Bf16 => Baseline::CublasBf16C,
            Format::Mxfp8 => Baseline::CublasF32C,
        }
    }

    /// Whether this is the default, [`Baseline::CublasBf16C`] (which records leave unwritten).
    pub fn is_bf16_c(&self) -> bool {
        *self == Baseline::CublasBf16C
    }
}

/// Device pointers and shape handed to a launch. Pointers are raw so that the timing loop can rotate
/// through input sets without re-borrowing buffers.
///
/// For a [`Format::Bf16`] step `a`, `b` and `c` are bf16 and the scales are 0. For a
/// [`Format::Mxfp8`] step `a` and `b` are e4m3 bytes (M×K and N×K row-major), `scale_a` and
/// `scale_b` their e8m0 scale bytes in the blocked layout ([`crate::check::mx::to_blocked`]: rows padded to
/// 128, K/32 blocks padded to 4), and `c` an fp32 M×N row-major matrix.
#[derive(Debug, Clone, Copy)]
pub struct GemmOperands {
    /// `A`, M×K row-major: bf16, or e4m3 bytes for MXFP8.
    pub a: u64,
    /// `B`, N×K row-major: bf16, or e4m3 bytes for MXFP8.
    pub b: u64,
    /// `C`, M×N row-major: bf16, or fp32 for MXFP8.
    pub c: u64,
    /// MXFP8: `A`'s e8m0 scales, blocked layout; 0 otherwise.
    pub scale_a: u64,
    /// MXFP8: `B`'s e8m0 scales, blocked layout; 0 otherwise.
    pub scale_b: u64,
    /// The session's workspace for this launch: flags, scratch and a new epoch
    /// ([`crate::run::workspace::Workspace`]), sized for the step before its first launch
    /// ([`Step::workspace`]); empty for a step that needs none.
    pub workspace: WorkspaceView,
    pub shape: Shape,
}

/// Enqueues one GEMM on `stream`. This is where a step says its grid, block and shared memory, and
/// builds whatever its kernel takes besides pointers (tensor maps).
pub type LaunchFn = fn(&CudaFunction, &CudaStream, &GemmOperands) -> Result<()>;

/// One kernel source file and how to launch it.
#[derive(Clone, Copy)]
pub struct KernelFile {
    /// Path from the crate root, for messages and the book (`steps/step01_naive/kernel.cu`).
    pub path: &'static str,
    /// Where its text comes from ([`KernelFile::source`] reads it).
    pub text: KernelText,
    pub targets: Targets,
    /// The `extern "C" __global__` function to launch.
    pub entry: &'static str,
    /// Compile-time constants the Rust side owns, passed to NVRTC as `-DNAME=value`.
    pub defines: &'static [(&'static str, u64)],
    /// Dynamic shared memory the kernel may ask for; above 48 KiB the loader raises the function's limit.
    pub max_dynamic_smem: u32,
    pub launch: LaunchFn,
}

/// Where a kernel's text comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelText {
    /// The crate's file at `path`: read from the source tree the binary was built from where it is
    /// there, else the copy the binary embeds ([`crate::device::sources`]).
    File,
    /// A text made at run time: an exercise's starter, a test's deliberately wrong kernel.
    Given(&'static str),
}

impl KernelFile {
    /// The text NVRTC compiles.
    pub fn source(&self) -> &'static str {
        match self.text {
            KernelText::File => crate::device::sources::text(self.path),
            KernelText::Given(text) => text,
        }
    }

    /// The value of a compile-time define, if the file has it.
    pub fn define(&self, name: &str) -> Option<u64> {
        self.defines.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }
}

impl crate::device::nvrtc::KernelSource for KernelFile {
    fn path(&self) -> &str {
        self.path
    }
    fn source(&self) -> &str {
        KernelFile::source(self)
    }
    fn defines(&self) -> &[(&'static str, u64)] {
        self.defines
    }
}

/// Another design of a step's kernel, kept beside the step's own to be measured against it: every run
/// of the step verifies it with the step's checks (against the step's own kernel among them) and times
/// it in the step's alternating loop, and the record keeps what it measured
/// ([`crate::run::results::AlternativeRecord`]).
#[derive(Clone, Copy)]
pub struct Alternative {
    /// Short name, for tables and `--emit … --alternative NAME`: `promote`.
    pub name: &'static str,
    /// One line: what the design does instead of the step's.
    pub design: &'static str,
    pub kernel: KernelFile,
    /// A plan the step's own launch could choose (step 10: a tile, or a decomposition, of the same
    /// kernel), rather than another design: the record says how far the chosen plan was from the
    /// fastest of these ([`crate::run::results::StepRecord::choice`]).
    pub plan: bool,
}

/// One list of a step's alternatives from two (each twin's own): `N` must be their lengths' sum.
pub const fn alternatives_of_both<const N: usize>(first: &[Alternative], second: &[Alternative]) -> [Alternative; N] {
    assert!(first.len() + second.len() == N && N > 0);
    let mut all = [if first.is_empty() { second[0] } else { first[0] }; N];
    let mut i = 0;
    while i < N {
        all[i] = if i < first.len() {
            first[i]
        } else {
            second[i - first.len()]
        };
        i += 1;
    }
    all
}

/// A rung of the ladder.
pub struct Step {
    /// 1 ..= 11; the binary is `step{id:02}`.
    pub id: u8,
    /// Folder suffix and short name: `naive`, `smem_tiling`, ...
    pub name: &'static str,
    /// One line for tables and the book.
    pub title: &'static str,
    /// The step this one is verified against (`None` for step01: it is checked against the CPU).
    pub predecessor: Option<u8>,
    /// What its operands and result are: bf16 (steps 01–10) or MXFP8 (step 11).
    pub format: Format,
    pub kernels: &'static [KernelFile],
    /// Other designs of the step, verified and timed beside its kernel on the GPUs they serve.
    pub alternatives: &'static [Alternative],
    /// What its kernels (and alternatives) need of the session's workspace at a shape, on a GPU of so
    /// many SMs: the session makes room before it launches any of them. `None`: no workspace.
    pub workspace: Option<WorkspaceFn>,
}

impl Step {
    /// `step03`.
    pub fn binary(&self) -> String {
        format!("step{:02}", self.id)
    }

    /// The kernel file of `twin` (`None`: the device's own) that serves `major.minor`, if any. A step
    /// with one kernel for every GPU (01–03) has no twins, and serves every twin with it.
    pub fn kernel_of_twin(&self, major: u32, minor: u32, twin: Option<Twin>) -> Option<&KernelFile> {
        let twin = twin.filter(|_| self.has_twins());
        self.kernels
            .iter()
            .filter(|k| twin.is_none_or(|t| k.targets == t.targets()))
            .find(|k| k.targets.serves(major, minor))
    }

    /// Whether the step has twins (kernel files per architecture family) rather than one kernel.
    pub fn has_twins(&self) -> bool {
        self.kernels.iter().any(|k| k.targets.twin().is_some())
    }

    /// The step's kernel file of `twin`, whatever GPU is present (for `--emit` and the exercises).
    pub fn file_of_twin(&self, twin: Twin) -> Option<&KernelFile> {
        self.kernels.iter().find(|k| k.targets == twin.targets())
    }

    /// The alternatives to `kernel` (the step's kernel file that runs) with a kernel for a device of
    /// compute capability `major.minor`: those of the same twin, so that a twin is measured beside
    /// its own twin's designs only (an sm80 alternative that needs sm_89 is still an sm80 design).
    pub fn alternatives_beside<'a>(
        &'a self,
        kernel: &'a KernelFile,
        major: u32,
        minor: u32,
    ) -> impl Iterator<Item = &'a Alternative> {
        self.alternatives
            .iter()
            .filter(move |a| a.kernel.targets.twin() == kernel.targets.twin() && a.kernel.targets.serves(major, minor))
    }

    /// The alternatives of `kernel`'s twin that a device of compute capability `major.minor` lacks the
    /// instructions for (the sm80 twin's fp8 and block-scaled designs), each with the line a run prints
    /// instead of timing it.
    pub fn alternatives_skipped<'a>(
        &'a self,
        kernel: &'a KernelFile,
        major: u32,
        minor: u32,
    ) -> impl Iterator<Item = String> + 'a {
        self.alternatives
            .iter()
            .filter(move |a| a.kernel.targets.twin() == kernel.targets.twin() && !a.kernel.targets.serves(major, minor))
            .map(move |a| {
                format!(
                    "{}: alternative {} skipped on this GPU (compute capability {major}.{minor}): it needs {}",
                    self.binary(),
                    a.name,
                    a.kernel.targets.describe()
                )
            })
    }

    /// What this step can run on, for the refusal message: with a twin chosen (`Some`), what that
    /// twin needs, or that the step has no such twin.
    pub fn needs(&self, twin: Option<Twin>) -> String {
        if let Some(twin) = twin.filter(|_| self.has_twins()) {
            return match self.file_of_twin(twin) {
                Some(file) => file.targets.describe().to_string(),
                None => format!(
                    "a kernel of the {} twin (--twin {}), which it does not have",
                    twin.name(),
                    twin.name()
                ),
            };
        }
        let list: Vec<&str> = self.kernels.iter().map(|k| k.targets.describe()).collect();
        list.join(" or ")
    }
}

/// One block per `bm`×`bn` tile of `C` (grid x along N, y along M), `threads` threads per block and
/// `dynamic_smem` bytes of dynamic shared memory.
pub fn tile_config(shape: Shape, bm: u32, bn: u32, threads: u32, dynamic_smem: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (
            shape.n.div_ceil(bn as usize) as u32,
            shape.m.div_ceil(bm as usize) as u32,
            1,
        ),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: dynamic_smem,
    }
}

/// A launch: the grid, block and shared memory, and the thread-block cluster the blocks are grouped
/// in (`(1, 1, 1)`: no cluster, a plain launch).
#[derive(Debug, Clone, Copy)]
pub struct Launch {
    pub config: LaunchConfig,
    /// Blocks per cluster along (x, y, z); the grid must be a whole number of clusters.
    pub cluster: (u32, u32, u32),
    /// A cooperative launch: the driver starts the grid only if every block of it can be resident
    /// at once, and refuses it otherwise (a kernel whose blocks wait for each other, as step 10's
    /// stream-K fixup does, would otherwise hang when some of them cannot be scheduled).
    pub cooperative: bool,
    /// A programmatic dependent launch: the grid may start before the kernel ahead of it on the
    /// stream has finished, once every block of that kernel has said so
    /// (`griddepcontrol.launch_dependents`) or exited; the kernel waits for the one ahead's results
    /// (`griddepcontrol.wait`) where it needs them. Step 11's GEMM starts under its pre-pass's tail.
    pub programmatic: bool,
}

impl Launch {
    /// A launch without clusters.
    pub fn plain(config: LaunchConfig) -> Launch {
        Launch {
            config,
            cluster: (1, 1, 1),
            cooperative: false,
            programmatic: false,
        }
    }

    /// `config`'s blocks grouped in clusters of `cluster`: each grid dimension is rounded up to a whole
    /// number of clusters (the blocks added there lie past the edge of C; their kernel must expect
    /// tiles outside C, which the TMA clips).
    pub fn clustered(mut config: LaunchConfig, cluster: (u32, u32, u32)) -> Launch {
        config.grid_dim.0 = config.grid_dim.0.next_multiple_of(cluster.0);
        config.grid_dim.1 = config.grid_dim.1.next_multiple_of(cluster.1);
        config.grid_dim.2 = config.grid_dim.2.next_multiple_of(cluster.2);
        Launch {
            config,
            cluster,
            cooperative: false,
            programmatic: false,
        }
    }

    /// The same launch, cooperative: all of its blocks resident at once, or refused by the driver.
    pub fn co_resident(self) -> Launch {
        Launch {
            cooperative: true,
            ..self
        }
    }

    /// The same launch, programmatic: it may start under the tail of the kernel ahead of it.
    pub fn programmatic(self) -> Launch {
        Launch {
            programmatic: true,
            ..self
        }
    }

    /// Blocks per cluster.
    pub fn cluster_size(&self) -> u32 {
        self.cluster.0 * self.cluster.1 * self.cluster.2
    }
}

/// Enqueues a kernel of the tensor-core steps' signature:
/// `gemm(TensorMap maps..., bf16* C, int M, int N, int K, int flags...)`, maps passed by value
/// (`const __grid_constant__`).
pub fn launch_with_maps(
    function: &CudaFunction,
    stream: &CudaStream,
    maps: &[TensorMap],
    ops: &GemmOperands,
    flags: &[i32],
    config: LaunchConfig,
) -> Result<()> {
    launch_with_maps_in(function, stream, maps, ops, flags, Launch::plain(config))
}

/// [`launch_with_maps`] with a [`Launch`] that may group blocks into clusters. Clusters need
/// `cuLaunchKernelEx` and its cluster-dimension attribute; a plain launch goes through cudarc.
pub fn launch_with_maps_in(
    function: &CudaFunction,
    stream: &CudaStream,
    maps: &[TensorMap],
    ops: &GemmOperands,
    flags: &[i32],
    launch: Launch,
) -> Result<()> {
    launch_maps_then(function, stream, maps, &[ops.c], ops, flags, launch)
}

/// The one launch mechanism of the tensor-core steps: `maps` by value, then `pointers`, then M, N, K,
/// then `flags`, in that order.
pub fn launch_maps_then(
    function: &CudaFunction,
    stream: &CudaStream,
    maps: &[TensorMap],
    pointers: &[u64],
    ops: &GemmOperands,
    flags: &[i32],
    launch: Launch,
) -> Result<()> {
    let (m, n, k) = (ops.shape.m as i32, ops.shape.n as i32, ops.shape.k as i32);
    if launch.cluster_size() == 1 && !launch.programmatic {
        // Without clusters cudarc's builder launches, cooperatively when asked
        // (`cuLaunchCooperativeKernel`).
        let mut args = stream.launch_builder(function);
        for map in maps {
            args.arg(map);
        }
        for pointer in pointers {
            args.arg(pointer);
        }
        args.arg(&m).arg(&n).arg(&k);
        for flag in flags {
            args.arg(flag);
        }
        // SAFETY: the caller's kernel takes exactly these parameters in this order; the maps and the
        // pointers describe buffers of the sizes `ops.shape` implies.
        let launched = unsafe {
            if launch.cooperative {
                args.launch_cooperative(launch.config)
            } else {
                args.launch(launch.config)
            }
        };
        return match launched {
            Ok(_) => Ok(()),
            Err(cudarc::driver::DriverError(status)) if is_too_large_to_co_reside(status) => {
                Err(Error::Other(launch.refusal_to_co_reside(status)))
            }
            Err(e) => Err(Error::cuda("launching a kernel")(e)),
        };
    }
    // The driver reads each parameter through a pointer to its value, in signature order.
    let mut params: Vec<*mut c_void> = maps.iter().map(|map| map as *const TensorMap as *mut c_void).collect();
    for pointer in pointers {
        params.push(pointer as *const u64 as *mut c_void);
    }
    for value in [&m, &n, &k] {
        params.push(value as *const i32 as *mut c_void);
    }
    for flag in flags {
        params.push(flag as *const i32 as *mut c_void);
    }
    // SAFETY: as above; `params` and the values it points to outlive the call, which copies them.
    unsafe { launch_ex(function, stream, &launch, &mut params) }
}

impl Launch {
    /// Calls `f` with the driver's form of this launch: a `CUlaunchConfig` on `stream` carrying the
    /// cluster-dimension attribute, and the cooperative one for a cooperative launch (all live until
    /// `f` returns).
    fn with_driver_config<T>(
        &self,
        stream: &CudaStream,
        f: impl FnOnce(&cudarc::driver::sys::CUlaunchConfig) -> T,
    ) -> T {
        use cudarc::driver::sys;
        let (x, y, z) = self.cluster;
        let cluster = sys::CUlaunchAttribute {
            id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
            pad: [0; 4],
            value: sys::CUlaunchAttributeValue {
                clusterDim: sys::CUlaunchAttributeValue_union__bindgen_ty_1 { x, y, z },
            },
        };
        let cooperative = sys::CUlaunchAttribute {
            id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_COOPERATIVE,
            pad: [0; 4],
            value: sys::CUlaunchAttributeValue { cooperative: 1 },
        };
        let programmatic = sys::CUlaunchAttribute {
            id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
            pad: [0; 4],
            value: sys::CUlaunchAttributeValue {
                programmaticStreamSerializationAllowed: 1,
            },
        };
        let mut attributes: Vec<sys::CUlaunchAttribute> = std::iter::once(cluster)
            .chain(self.cooperative.then_some(cooperative))
            .chain(self.programmatic.then_some(programmatic))
            .collect();
        let attribute_count = attributes.len() as u32;
        let c = &self.config;
        let config = sys::CUlaunchConfig {
            gridDimX: c.grid_dim.0,
            gridDimY: c.grid_dim.1,
            gridDimZ: c.grid_dim.2,
            blockDimX: c.block_dim.0,
            blockDimY: c.block_dim.1,
            blockDimZ: c.block_dim.2,
            sharedMemBytes: c.shared_mem_bytes,
            hStream: stream.cu_stream(),
            attrs: attributes.as_mut_ptr(),
            numAttrs: attribute_count,
        };
        f(&config)
    }

    /// The one-line refusal when the GPU cannot `verb` a cluster of this launch.
    fn refusal(&self, verb: &str) -> String {
        let (x, y, z) = self.cluster;
        format!(
            "this GPU cannot {verb} clusters of {x}×{y}×{z} blocks of {} threads with {} bytes of shared memory",
            self.config.block_dim.0, self.config.shared_mem_bytes
        )
    }

    /// The one-line refusal of a cooperative launch whose blocks cannot all be resident at once.
    fn refusal_to_co_reside(&self, status: cudarc::driver::sys::CUresult) -> String {
        let (x, y, z) = self.cluster;
        let c = &self.config;
        format!(
            "the GPU cannot hold all {} blocks of this grid at once (clusters of {x}×{y}×{z} blocks of {} threads, {} bytes of shared memory each), which its blocks' waits for each other need: refused instead of hanging ({status:?})",
            c.grid_dim.0 * c.grid_dim.1 * c.grid_dim.2,
            c.block_dim.0,
            c.shared_mem_bytes
        )
    }
}

/// Whether the driver refused a launch because its blocks cannot all be resident at once (for a
/// cooperative launch, that is what the driver answers: the grid is larger than the GPU holds).
fn is_too_large_to_co_reside(status: cudarc::driver::sys::CUresult) -> bool {
    status == cudarc::driver::sys::CUresult::CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE
}

/// The driver's answer to "how many clusters of this kernel fit on the GPU at once" (a record keeps it
/// in its profile, `crate::run::profile::Computed::clusters_fit`, and in its step's [`Plan`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClustersFit {
    pub cluster_blocks: u32,
    pub clusters: u32,
}

/// What a step's launch chose for a shape, as it told it ([`tell_plan`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// One line for the console and the record: `step 10 at 1024x1024x1024: 128×64 blocks …`.
    pub text: String,
    /// For a persistent launch, the grid of the kernel it chose: its blocks per cluster and how many
    /// of its clusters the driver said fit at once. The record keeps this rather than the answer for
    /// the step's own compilation, which may not be the kernel that ran.
    pub clusters_fit: Option<ClustersFit>,
}

/// What launches chose per kernel file and shape, as they told it (step 10: its tile and
/// decomposition). Keyed by the kernel file's path, which names its twin: a step's Hopper kernel and
/// its sm80 twin each tell their own plan. A cache of the process: a launch's choice depends only on
/// the GPU, the kernel and the shape.
static PLANS: std::sync::Mutex<Vec<((&'static str, Shape), Plan)>> = std::sync::Mutex::new(Vec::new());

/// The launch of `kernel` (the file whose launch chose) says what it chose for `shape`: printed the
/// first time, and kept for the record of the run ([`plan_for`]).
pub fn tell_plan(kernel: &KernelFile, shape: Shape, plan: Plan) {
    let key = (kernel.path, shape);
    let mut plans = PLANS.lock().unwrap_or_else(|e| e.into_inner());
    match plans.iter_mut().find(|(told, _)| *told == key) {
        Some((_, known)) if *known == plan => {}
        Some((_, known)) => *known = plan,
        None => {
            eprintln!("{}", plan.text);
            plans.push((key, plan));
        }
    }
}

/// Set in a child process that must launch what its parent's record ran (the profiling child under
/// ncu): the plan the record's launch told. A launch that chooses its plan by timing candidates (step
/// 10) launches this one instead, so that the child neither times trials under the profiler nor
/// chooses otherwise than the record.
pub const TOLD_PLAN_ENV: &str = "GEMM_LADDER_TOLD_PLAN";

/// The plan a parent process told this one to launch ([`TOLD_PLAN_ENV`]), if any.
pub fn told_plan() -> Option<String> {
    std::env::var(TOLD_PLAN_ENV).ok().filter(|p| !p.is_empty())
}

/// What the launch of `kernel` last told for `shape`, if it tells anything.
pub fn plan_for(kernel: &KernelFile, shape: Shape) -> Option<Plan> {
    PLANS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|(told, _)| *told == (kernel.path, shape))
        .map(|(_, p)| p.clone())
}

/// Enqueues `entry`, another kernel of the module `function` was loaded from (a step's pre-pass), as a
/// plain launch of `grid` blocks of `threads` threads; `params` points at its arguments, in order.
///
/// # Safety
/// `params` must match `entry`'s signature, and the memory its pointers name must be valid for it.
pub unsafe fn launch_sibling(
    function: &CudaFunction,
    stream: &CudaStream,
    entry: &str,
    grid: u32,
    threads: u32,
    params: &mut [*mut c_void],
) -> Result<()> {
    use cudarc::driver::sys;
    let what = format!("launching {entry}");
    let name = std::ffi::CString::new(entry).map_err(|_| Error::Other(format!("{what}: bad name")))?;
    let mut module: sys::CUmodule = std::ptr::null_mut();
    let mut sibling: sys::CUfunction = std::ptr::null_mut();
    // SAFETY: `function` is loaded, so its module is; the out-pointers are valid; the caller vouches
    // for `params`.
    unsafe {
        sys::cuFuncGetModule(&mut module, function.cu_function())
            .result()
            .map_err(Error::cuda(what.clone()))?;
        sys::cuModuleGetFunction(&mut sibling, module, name.as_ptr())
            .result()
            .map_err(Error::cuda(what.clone()))?;
        sys::cuLaunchKernel(
            sibling,
            grid,
            1,
            1,
            threads,
            1,
            1,
            0,
            stream.cu_stream(),
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
        .result()
        .map_err(Error::cuda(what))
    }
}

/// How many clusters of `launch`'s shape and resources can be resident on the GPU at once
/// (`cuOccupancyMaxActiveClusters`): the grid a persistent kernel wants. The driver answers for the
/// function's shared memory and registers and the GPU's layout of SMs into clusters.
pub fn max_active_clusters(function: &CudaFunction, stream: &CudaStream, launch: &Launch) -> Result<u32> {
    let mut clusters: std::ffi::c_int = 0;
    // SAFETY: the config and its attribute live until the call returns; the function is loaded.
    launch
        .with_driver_config(stream, |config| unsafe {
            cudarc::driver::sys::cuOccupancyMaxActiveClusters(&mut clusters, function.cu_function(), config)
        })
        .result()
        .map_err(Error::cuda("asking how many clusters fit on the GPU"))?;
    if clusters < 1 {
        return Err(Error::Other(launch.refusal("hold")));
    }
    Ok(clusters as u32)
}

/// `cuLaunchKernelEx` with the cluster-dimension attribute (and the cooperative one for a
/// cooperative launch). A device or kernel that cannot run a cluster of this size, or a cooperative
/// grid larger than the GPU holds at once, answers with an error, turned into one line that says so.
///
/// # Safety
/// `params` must match the kernel's parameter list.
unsafe fn launch_ex(
    function: &CudaFunction,
    stream: &CudaStream,
    launch: &Launch,
    params: &mut [*mut c_void],
) -> Result<()> {
    use cudarc::driver::sys;
    stream
        .context()
        .bind_to_thread()
        .map_err(Error::cuda("binding the context"))?;
    // SAFETY: the caller guarantees `params`; the config and attribute live until the call returns.
    let status = launch.with_driver_config(stream, |config| unsafe {
        sys::cuLaunchKernelEx(
            config,
            function.cu_function(),
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    });
    match status {
        sys::CUresult::CUDA_SUCCESS => Ok(()),
        status if launch.cooperative && is_too_large_to_co_reside(status) => {
            Err(Error::Other(launch.refusal_to_co_reside(status)))
        }
        sys::CUresult::CUDA_ERROR_INVALID_CLUSTER_SIZE | sys::CUresult::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES => {
            Err(Error::Other(format!("{} ({status:?})", launch.refusal("launch"))))
        }
        other => Err(Error::cuda("launching a kernel in clusters")(
            cudarc::driver::DriverError(other),
        )),
    }
}

/// Enqueues a kernel of the CUDA-core steps' signature, `gemm(A, B, C, M, N, K)`, with `config`.
pub fn launch_with_pointers(
    function: &CudaFunction,
    stream: &CudaStream,
    ops: &GemmOperands,
    config: LaunchConfig,
) -> Result<()> {
    let (m, n, k) = (ops.shape.m as i32, ops.shape.n as i32, ops.shape.k as i32);
    let mut args = stream.launch_builder(function);
    args.arg(&ops.a).arg(&ops.b).arg(&ops.c).arg(&m).arg(&n).arg(&k);
    // SAFETY: the argument list matches the signature above; the pointers address buffers of the
    // sizes `ops.shape` implies.
    unsafe { args.launch(config) }
        .map(|_| ())
        .map_err(Error::cuda("launching a kernel"))
}
