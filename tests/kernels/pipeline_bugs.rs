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
    },
    PipelineBug {
        name: "never_released",
        why: "the consumers never arrive on `empty`: once the ring has gone round, the producer waits \
              for a release that never comes, and the consumers for a tile it never loads",
        edit: Edit {
            find: "for (u32 r = 0; r < CLUSTER_M; ++r) mbarrier_arrive_cluster(&empty[stage], r);",
            replace: "(void)stage;  // PLANTED BUG: the stage is never released",
        },
    },
    PipelineBug {
        name: "released_only_locally",
        why: "each consumer releases the stage in its own block only, so `empty` (which expects an \
              arrival from every consumer of the cluster) gets half its arrivals and never completes",
        edit: Edit {
            find: "for (u32 r = 0; r < CLUSTER_M; ++r) mbarrier_arrive_cluster(&empty[stage], r);",
            replace: "mbarrier_arrive_cluster(&empty[stage], rank);  // PLANTED BUG: not every block of the cluster",
        },
    },
];

/// The step's Hopper kernel file.
pub fn hopper_kernel(step: &'static Step) -> &'static KernelFile {
    step.kernel_for_device(9, 0)
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

/// Every (step, bug) pair, planted.
pub fn all_planted() -> Vec<(&'static Step, &'static PipelineBug, KernelFile)> {
    let mut all = Vec::new();
    for step in steps() {
        for bug in BUGS {
            all.push((step, bug, planted(step, bug)));
        }
    }
    all
}
