//! What the integration tests share: deciding whether a tool or a GPU is there, and saying so.
#![allow(dead_code)]

use gemm_ladder::device::gpu::Gpu;
use gemm_ladder::device::libs;
use gemm_ladder::run::registry::{KernelFile, Targets};
use gemm_ladder::run::steps;

#[path = "../kernels/pipeline_bugs.rs"]
pub mod pipeline_bugs;

/// True when NVRTC can be loaded. Without it the test is skipped, unless GEMM_LADDER_REQUIRE_NVRTC
/// is set (CI sets it), in which case a missing NVRTC fails the test.
pub fn nvrtc_or_skip(test: &str) -> bool {
    if libs::nvrtc_present() {
        return true;
    }
    assert!(
        std::env::var_os("GEMM_LADDER_REQUIRE_NVRTC").is_none(),
        "{test}: NVRTC not found, and GEMM_LADDER_REQUIRE_NVRTC is set"
    );
    eprintln!("{test}: skipped (NVRTC not found; `pip install nvidia-cuda-nvrtc` and set LD_LIBRARY_PATH)");
    false
}

/// A GPU, or `None` after printing that the test was skipped.
pub fn gpu_or_skip(test: &str) -> Option<Gpu> {
    if !libs::driver_present() {
        eprintln!("{test}: skipped (no NVIDIA driver library on this machine)");
        return None;
    }
    match Gpu::open() {
        Ok(gpu) => {
            if nvrtc_or_skip(test) && libs::cublas_present() {
                Some(gpu)
            } else {
                eprintln!("{test}: skipped (NVRTC or cuBLAS missing)");
                None
            }
        }
        Err(e) => {
            eprintln!("{test}: skipped ({e})");
            None
        }
    }
}

/// The deliberately wrong kernels of tests/kernels/broken.cu, launched like step01.
pub fn broken_kernels() -> &'static [KernelFile] {
    let naive = &steps::step01_naive::STEP.kernels[0];
    let file = |entry: &'static str| KernelFile {
        path: "tests/kernels/broken.cu",
        source: include_str!("../kernels/broken.cu"),
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

/// The bring-up bound, in seconds, that tests/kernels/hung_wait.cu is built with.
pub const HUNG_WAIT_SECONDS: u64 = 1;

/// tests/kernels/hung_wait.cu, built with `GEMM_LADDER_DEBUG_HANG` = [`HUNG_WAIT_SECONDS`]: a wait on a
/// phase that never completes, through mbarrier_sm100.cuh. Launched like step01.
pub fn hung_wait_kernel() -> &'static KernelFile {
    let naive = &steps::step01_naive::STEP.kernels[0];
    let mut defines = naive.defines.to_vec();
    defines.push(("GEMM_LADDER_DEBUG_HANG", HUNG_WAIT_SECONDS));
    Box::leak(Box::new(KernelFile {
        path: "tests/kernels/hung_wait.cu",
        source: include_str!("../kernels/hung_wait.cu"),
        targets: Targets::Hopper,
        entry: "gemm",
        defines: Box::leak(defines.into_boxed_slice()),
        max_dynamic_smem: 0,
        launch: naive.launch,
    }))
}
