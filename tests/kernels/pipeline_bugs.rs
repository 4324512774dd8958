//! Planted pipeline bugs in the warp-specialised Hopper kernels (steps 08, 09 and 10).
//!
//! Not copies of the kernels: each bug is one exact edit, applied at test time to the step's real
//! `sm90.cu`, so the planted kernel is always the current kernel plus the bug. The edit must match
//! exactly once; when a step's kernel changes so that it no longer does, the tests say so and fail
//! instead of testing a stale copy.
//!
//! Only bugs whose outcome does not depend on timing are planted: each one leaves a barrier phase that
//! nobody completes, so the kernel hangs on every run (given more K tiles than ring stages). A missing
//! `cluster_sync()` after the barriers are initialised, by contrast, misbehaves only when a peer block
//! runs ahead, and is left out.

use gemm_ladder::run::edit::Edit;
use gemm_ladder::run::registry::{KernelFile, Step};
use gemm_ladder::run::steps;

/// One planted bug: one edit of the kernel (its `find` must occur exactly once).
pub struct PipelineBug {
    /// Short name, for messages and the child-process switch of the hang test.
    pub name: &'static str,
    /// Why the kernel can never finish.
    pub why: &'static str,
    pub edit: Edit,
    /// Hangs only a kernel whose blocks come in clusters of more than one (step 10's default block
    /// is on its own: releasing locally is all it must do).
    pub clustered_only: bool,
}

/// The warp-specialised steps whose Hopper kernels get the bugs planted.
pub fn steps() -> [&'static Step; 3] {
    [
        &steps::step08_pipeline::STEP,
        &steps::step09_epilogue_double_buffer::STEP,
        &steps::step10_persistent::STEP,
    ]
}

pub const BUGS: &[PipelineBug] = &[
    PipelineBug {
        name: "wrong_empty_parity",
        why: "the producer's first pass waits on `empty` with parity 0, the phase that only the \
              consumers' releases complete, and they wait on `full` for tiles it never loads",
        edit: Edit {
            find: "mbarrier_wait(&empty[stage], parity ^ 1);",
            replace: "mbarrier_wait(&empty[stage], parity);  // PLANTED BUG: should be parity ^ 1",
        },
        clustered_only: false,
    },
    PipelineBug {
        name: "never_released",
        why: "the consumers never arrive on `empty`: once the ring has gone round, the producer waits \
              for a release that never comes, and the consumers for a tile it never loads",
        edit: Edit {
            find: "mbarrier_arrive_cluster(&empty[stage], r);",
            replace: "(void)r;  // PLANTED BUG: the stage is never released",
        },
        clustered_only: false,
    },
    PipelineBug {
        name: "released_only_locally",
        why: "each consumer releases the stage in its own block only, so `empty` (which expects an \
              arrival from every consumer of the cluster) gets half its arrivals and never completes",
        edit: Edit {
            find: "mbarrier_arrive_cluster(&empty[stage], r);",
            replace: "if (r == rank) mbarrier_arrive_cluster(&empty[stage], rank);  // PLANTED BUG: not every block of the cluster",
        },
        clustered_only: true,
    },
];

/// The step's Hopper kernel file.
pub fn hopper_kernel(step: &'static Step) -> &'static KernelFile {
    step.kernel_of_twin(9, 0, None)
        .unwrap_or_else(|| panic!("{} has no Hopper kernel", step.binary()))
}

/// `step`'s Hopper kernel with `bug` planted, launched exactly like the real one. Panics, naming the
/// step and the bug, unless the edit matches exactly once.
pub fn planted(step: &'static Step, bug: &PipelineBug) -> KernelFile {
    let real = hopper_kernel(step);
    let source = bug.edit.apply(real.source, real.path).unwrap_or_else(|mismatch| {
        panic!(
            "planting {}: {mismatch}; update tests/kernels/pipeline_bugs.rs to the kernel's new text",
            bug.name
        )
    });
    KernelFile {
        path: format!("{}+{}", real.path, bug.name).leak(),
        source: source.leak(),
        ..*real
    }
}

/// Blocks per cluster of the step's Hopper kernel, from its defines.
pub fn cluster_blocks(step: &'static Step) -> u64 {
    let define = |name: &str| hopper_kernel(step).define(name).unwrap_or(1);
    define("CLUSTER_M") * define("CLUSTER_N")
}

/// Every (step, bug) pair that hangs that step's kernel, planted.
pub fn all_planted() -> Vec<(&'static Step, &'static PipelineBug, KernelFile)> {
    let mut all = Vec::new();
    for step in steps() {
        for bug in BUGS.iter().filter(|b| !b.clustered_only || cluster_blocks(step) > 1) {
            all.push((step, bug, planted(step, bug)));
        }
    }
    all
}
