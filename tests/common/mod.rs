//! What the integration tests share: deciding whether a tool or a GPU is there, and saying so.
#![allow(dead_code)]

use gemm_ladder::device::gpu::Gpu;
use gemm_ladder::device::libs;
use gemm_ladder::run::registry::{KernelFile, KernelText, Targets};
use gemm_ladder::run::steps;

pub mod harness;
#[path = "../kernels/pipeline_bugs.rs"]
pub mod pipeline_bugs;

pub use harness::{Ran, Skip};

const NO_NVRTC: &str = "needs NVRTC, not found here (README: Requirements)";

/// NVRTC, or why the test cannot run without it. Where GEMM_LADDER_REQUIRE_NVRTC is set (CI), a
/// missing NVRTC fails the test instead.
pub fn nvrtc() -> Ran {
    if gemm_ladder::device::nvrtc::present() {
        return Ok(());
    }
    assert!(
        std::env::var_os("GEMM_LADDER_REQUIRE_NVRTC").is_none(),
        "NVRTC not found, and GEMM_LADDER_REQUIRE_NVRTC is set"
    );
    Err(Skip(NO_NVRTC.into()))
}

/// `Ok` when ptxas assembled everything the test compiled (`all_assembled`); otherwise the test, which
/// compiled its kernels with NVRTC, could not assemble them. Where GEMM_LADDER_REQUIRE_PTXAS is set
/// (CI), a missing ptxas fails the test instead.
pub fn assembled(all_assembled: bool) -> Ran {
    if all_assembled {
        return Ok(());
    }
    assert!(
        std::env::var_os("GEMM_LADDER_REQUIRE_PTXAS").is_none(),
        "ptxas not found, and GEMM_LADDER_REQUIRE_PTXAS is set"
    );
    Err(Skip(
        "compiled with NVRTC, not assembled: needs ptxas, not found here (README: Requirements)".into(),
    ))
}

/// The ptxas the tests assemble with, as it names its version (`Cuda compilation tools, release 12.9,
/// V12.9.86`), with its file.
pub fn ptxas_version() -> Option<String> {
    let ptxas = libs::find_tool("ptxas")?;
    let out = std::process::Command::new(&ptxas).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let release = text.lines().rev().find(|l| l.contains("release"))?.trim().to_string();
    Some(format!("{release} ({})", ptxas.display()))
}

/// A GPU with NVRTC and cuBLAS, or why the test cannot run here. Where GEMM_LADDER_REQUIRE_GPU is set
/// (a GPU machine's test run), their absence fails the test instead.
pub fn gpu() -> Result<Gpu, Skip> {
    let skip = |why: String| {
        assert!(
            std::env::var_os("GEMM_LADDER_REQUIRE_GPU").is_none(),
            "{why}, and GEMM_LADDER_REQUIRE_GPU is set"
        );
        Skip(why)
    };
    if !libs::driver_present() {
        return Err(skip("needs a GPU: no NVIDIA driver (libcuda) here".into()));
    }
    let gpu = Gpu::open().map_err(|e| skip(format!("needs a GPU: {e}")))?;
    if !gemm_ladder::device::nvrtc::present() {
        return Err(skip(NO_NVRTC.into()));
    }
    if !gemm_ladder::device::cublas::present() {
        return Err(skip("needs cuBLAS, not found here (README: Requirements)".into()));
    }
    Ok(gpu)
}

/// The deliberately wrong kernels of tests/kernels/broken.cu, launched like step01.
pub fn broken_kernels() -> &'static [KernelFile] {
    let naive = &steps::step01_naive::STEP.kernels[0];
    let file = |entry: &'static str| KernelFile {
        path: "tests/kernels/broken.cu",
        text: KernelText::Given(include_str!("../kernels/broken.cu")),
        targets: Targets::AnyGpu,
        entry,
        defines: naive.defines,
        max_dynamic_smem: 0,
        launch: naive.launch,
    };
    Box::leak(Box::new([
        file("gemm_skips_last_tile"),
        file("gemm_writes_nothing"),
        file("gemm_off_by_one_k"),
    ]))
}

/// `file` built with common.cuh's software bf16 rounding on any GPU (`GEMM_LADDER_SOFT_BF16`), as a
/// T4 builds it.
pub fn with_soft_bf16(file: &KernelFile) -> KernelFile {
    let mut defines = file.defines.to_vec();
    defines.push(("GEMM_LADDER_SOFT_BF16", 1));
    KernelFile {
        path: file.path,
        text: file.text,
        targets: file.targets,
        entry: file.entry,
        defines: Box::leak(defines.into_boxed_slice()),
        max_dynamic_smem: file.max_dynamic_smem,
        launch: file.launch,
    }
}

/// The bring-up bound, in seconds, that tests/kernels/hung_wait.cu is built with.
pub const HUNG_WAIT_SECONDS: u64 = 1;

/// tests/kernels/hung_wait.cu, built with `GEMM_LADDER_DEBUG_HANG` = [`HUNG_WAIT_SECONDS`]: a wait on a
/// phase that never completes, through mbarrier_sm100.cuh. Launched like step01.
pub fn hung_wait_kernel() -> &'static KernelFile {
    hung_kernel(
        "tests/kernels/hung_wait.cu",
        include_str!("../kernels/hung_wait.cu"),
        true,
    )
}

/// tests/kernels/hung_flag.cu: a wait for a flag nobody raises, through flag.cuh; built with
/// `GEMM_LADDER_DEBUG_HANG` = [`HUNG_WAIT_SECONDS`] when `bounded`. Launched like step01.
pub fn hung_flag_kernel(bounded: bool) -> &'static KernelFile {
    hung_kernel(
        "tests/kernels/hung_flag.cu",
        include_str!("../kernels/hung_flag.cu"),
        bounded,
    )
}

fn hung_kernel(path: &'static str, source: &'static str, bounded: bool) -> &'static KernelFile {
    let naive = &steps::step01_naive::STEP.kernels[0];
    let mut defines = naive.defines.to_vec();
    if bounded {
        defines.push(("GEMM_LADDER_DEBUG_HANG", HUNG_WAIT_SECONDS));
    }
    Box::leak(Box::new(KernelFile {
        path,
        text: KernelText::Given(source),
        targets: Targets::Hopper,
        entry: "gemm",
        defines: Box::leak(defines.into_boxed_slice()),
        max_dynamic_smem: 0,
        launch: naive.launch,
    }))
}

/// Shapes no tile divides: M and N off every tile edge, K a multiple of 8 but not of any K tile.
/// The cluster steps (07–10, two 128-row blocks along M) pair the 128-row tiles in clusters, so
/// where M spans an odd number of 128-row tiles (M ≤ 128, or 256 < M ≤ 384, ...) the last cluster's
/// second block lies wholly below C. N % 8 ≠ 0 takes the direct-store fallback instead of the TMA
/// store; both meet the M edge, and both appear with N > 256 (more than one 256-column tile).
pub const RAGGED: &[gemm_ladder::check::problem::Shape] = &[
    // One element; a lone block beside an empty peer.
    gemm_ladder::check::problem::Shape::new(1, 1, 8),
    // Empty peer; direct stores, odd N.
    gemm_ladder::check::problem::Shape::new(97, 131, 72),
    // Empty peer; direct stores (odd N) in a second 256-column tile; 5 K tiles, more than any ring.
    gemm_ladder::check::problem::Shape::new(100, 263, 264),
    // Empty peer (3 M tiles); direct stores; a long K.
    gemm_ladder::check::problem::Shape::new(257, 255, 4104),
    // Empty peer (3 M tiles); TMA stores, partial boxes on the M and N edges; 4 K tiles.
    gemm_ladder::check::problem::Shape::new(300, 520, 200),
    // Even M tiles; direct stores (even N) in 5 tiles of 256 columns.
    gemm_ladder::check::problem::Shape::new(1000, 1030, 136),
    // Empty peer (33 M tiles); direct stores, odd N.
    gemm_ladder::check::problem::Shape::new(4099, 129, 520),
];
