//! The `profile` of a record: what explains a step's time, as the results file keeps it. Every run
//! computes its part ([`computed`]: flops, compulsory bytes, block size, occupancy); `--profile` adds
//! Nsight Compute's counters ([`crate::evidence`], which stands on this layer and fills them in).

use crate::device::gpu::Gpu;
use crate::run::registry::{Format, KernelFile};
use crate::run::results::Baseline;
use crate::shape::Shape;
use cudarc::driver::sys::CUdevice_attribute_enum as DevAttr;
use cudarc::driver::sys::CUfunction_attribute_enum as FuncAttr;
use cudarc::driver::CudaFunction;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Where a record's evidence came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProfileSource {
    /// Nsight Compute's counters (and the computed figures).
    Ncu,
    /// Only what the program computes itself.
    Computed,
}

/// The `profile` object of a record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    pub source: ProfileSource,
    /// Why there are no counters, when `source` is `computed` after a `--profile` that found no
    /// usable ncu (`ncu not found`, `ncu failed: …`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub computed: Computed,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ncu: Option<NcuCounters>,
    /// The step's cuBLAS baseline ([`Profile::cublas_baseline`]) at the same shape, profiled with the
    /// same Nsight Compute settings (the yardstick beside the step's counters). Absent in records from
    /// before it and where it could not be profiled; written only when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cublas_ncu: Option<NcuCounters>,
    /// Which cuBLAS `cublas_ncu` profiled: cuBLAS bf16 C on the bf16 inputs (records without the field),
    /// or, for an MXFP8 step, cuBLAS fp32 C on the dequantized inputs. Written only when not bf16 C.
    #[serde(default, skip_serializing_if = "Baseline::is_bf16_c")]
    pub cublas_baseline: Baseline,
}

/// What the program knows about a run without a profiler.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Computed {
    /// `2·M·N·K`.
    pub flops: f64,
    /// Bytes of A, B (read once) and C (written once): the least any GEMM must move to and from DRAM.
    pub bytes_a: u64,
    pub bytes_b: u64,
    pub bytes_c: u64,
    /// Threads per block, when the program can tell (see [`block_threads`]).
    pub block_threads: Option<u32>,
    /// Blocks one SM can hold, from the occupancy calculator.
    pub blocks_per_sm: Option<u32>,
    /// Resident warps over the SM's maximum, 0 to 1, from the occupancy calculator.
    pub theoretical_occupancy: Option<f64>,
    /// A persistent kernel's grid: how many clusters of its shape the driver said fit on the GPU at
    /// once (`cuOccupancyMaxActiveClusters`), with the blocks per cluster. Absent in records from
    /// before it and for kernels the driver was not asked about; written only when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clusters_fit: Option<ClustersFit>,
}

/// The driver's answer to "how many clusters of this kernel fit on the GPU at once".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClustersFit {
    pub cluster_blocks: u32,
    pub clusters: u32,
}

impl Computed {
    /// `bytes_a + bytes_b + bytes_c`.
    pub fn compulsory_bytes(&self) -> u64 {
        self.bytes_a + self.bytes_b + self.bytes_c
    }
}

/// The counters Nsight Compute measured for one launch of the step's kernel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NcuCounters {
    /// `ncu --version`'s last line: `Version 2025.3.1.0 (build …)`.
    pub tool: String,
    /// Quantity key ([`crate::evidence::QUANTITIES`]) → value, in base units (bytes, counts, percent, ns, Hz).
    pub values: BTreeMap<String, f64>,
    /// Quantity key → the ncu metric it was read from.
    pub metrics: BTreeMap<String, String>,
    /// The largest stall reasons, most first: warps stalled per issued instruction.
    pub stalls: Vec<Stall>,
    /// The kernel profiled, as ncu names it (kept for cuBLAS's, whose name the program does not
    /// choose). Absent in records from before it; written only when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// ncu's `--clock-control` for the run: `none` (the GPU's own clocks, boost and power limit
    /// included) or `base` (locked to the base clock, so cycles compare across runs). Absent in
    /// records from before it, which were all profiled with `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_control: Option<String>,
    /// The kernel file the profiling child said it ran (`steps/step05_swizzle128/sm80.cu`): the
    /// record's own. Absent for cuBLAS and in records from before the child was told its twin, when
    /// an sm80 twin's profile was the GPU's own kernel's ([`NcuCounters::of_twin_unknown`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_file: Option<String>,
}

impl NcuCounters {
    /// Whether these counters, kept for `kernel` (a record's kernel file), may be another twin's:
    /// a twin's profile made before the profiling child was told which twin to run (it ran the GPU's
    /// own kernel), or one whose child said it ran another file.
    pub fn of_twin_unknown(&self, kernel: &str) -> bool {
        let twin = crate::run::registry::Twin::of_kernel_path(kernel);
        match &self.kernel_file {
            Some(ran) => ran != kernel,
            None => twin == Some(crate::run::registry::Twin::Sm80),
        }
    }

    pub fn get(&self, key: &str) -> Option<f64> {
        self.values.get(key).copied()
    }

    /// The `--clock-control` the counters were measured with (`none` for records from before it
    /// was kept).
    pub fn clock_control(&self) -> &str {
        self.clock_control.as_deref().unwrap_or("none")
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stall {
    /// `long_scoreboard`, `barrier`, `math_pipe_throttle`, ...
    pub reason: String,
    /// Warps stalled for this reason per issued instruction (ncu's `…_per_issue_active.ratio`).
    pub per_issue: f64,
}

// ---------------------------------------------------------------------------------------------
// Computed evidence

/// Threads per block of a kernel file, as far as the program can tell without seeing the launch: the
/// `THREADS` define; else, for a kernel with `__launch_bounds__`, the function's maximum threads per
/// block (which the bounds set); else a 2D block of `BN × BM` threads (steps 01 and 02).
pub fn block_threads(file: &KernelFile, max_threads_attribute: Option<u32>) -> Option<u32> {
    let define = |name: &str| file.define(name).map(|v| v as u32);
    if let Some(threads) = define("THREADS") {
        return Some(threads);
    }
    if file.source.contains("__launch_bounds__(") {
        if let Some(threads) = max_threads_attribute {
            return Some(threads);
        }
    }
    match (define("BM"), define("BN")) {
        (Some(bm), Some(bn)) if bm * bn <= 1024 => Some(bm * bn),
        _ => None,
    }
}

/// The figures of [`Computed`] that depend only on the shape and what the kernel reads and writes:
/// operands of `format` (e4m3 counts one byte an element, and its scales), `c_element_bytes` of `C`.
pub fn computed_for_shape(shape: Shape, format: Format, c_element_bytes: u64) -> Computed {
    Computed {
        flops: shape.flops(),
        bytes_a: format.operand_bytes(shape.m, shape.k),
        bytes_b: format.operand_bytes(shape.n, shape.k),
        bytes_c: c_element_bytes * (shape.m * shape.n) as u64,
        block_threads: None,
        blocks_per_sm: None,
        theoretical_occupancy: None,
        clusters_fit: None,
    }
}

/// Everything [`Computed`] holds, for a loaded function (needs the GPU for the occupancy calculator).
pub fn computed(gpu: &Gpu, file: &KernelFile, function: &CudaFunction, shape: Shape, format: Format) -> Computed {
    let mut out = computed_for_shape(shape, format, format.c_element_bytes());
    let max_threads = function
        .get_attribute(FuncAttr::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
        .ok()
        .map(|v| v as u32);
    out.block_threads = block_threads(file, max_threads);
    out.clusters_fit = crate::run::persistent::clusters_fit(function).map(|(cluster_blocks, clusters)| ClustersFit {
        cluster_blocks,
        clusters,
    });
    let Some(threads) = out.block_threads else {
        return out;
    };
    let Ok(blocks) =
        function.occupancy_max_active_blocks_per_multiprocessor(threads, file.max_dynamic_smem as usize, None)
    else {
        return out;
    };
    out.blocks_per_sm = Some(blocks);
    if let Ok(max) = gpu
        .ctx
        .attribute(DevAttr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)
    {
        if max > 0 {
            let warps = blocks as f64 * threads.div_ceil(32) as f64;
            out.theoretical_occupancy = Some((warps / (max as f64 / 32.0)).min(1.0));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_threads_from_defines_bounds_or_2d_blocks() {
        for step in crate::run::steps::ALL {
            for file in step.kernels {
                let threads = block_threads(file, Some(384));
                assert!(threads.is_some(), "{}", file.path);
            }
        }
        let step01 = crate::run::steps::get(1).unwrap();
        let bm_bn: u32 = ["BM", "BN"]
            .iter()
            .map(|n| step01.kernels[0].defines.iter().find(|(d, _)| d == n).unwrap().1 as u32)
            .product();
        assert_eq!(block_threads(&step01.kernels[0], Some(1024)), Some(bm_bn));
        let c = computed_for_shape(Shape::new(4096, 2048, 1024), Format::Bf16, 2);
        assert_eq!((c.bytes_a, c.bytes_b, c.bytes_c), (8 << 20, 4 << 20, 16 << 20));
        assert_eq!(c.compulsory_bytes(), 28 << 20);
        // MXFP8: e4m3 is one byte an element, plus a scale byte per 32 along K; C is fp32.
        let c = computed_for_shape(Shape::new(4096, 2048, 1024), Format::Mxfp8, 4);
        assert_eq!(
            (c.bytes_a, c.bytes_b, c.bytes_c),
            ((4 << 20) + (4 << 20) / 32, (2 << 20) + (2 << 20) / 32, 32 << 20)
        );
    }
}
