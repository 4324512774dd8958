//! The classroom exercises: each step folder lists its own in `exercises/exercises.rs`; this file only
//! gathers them, in ladder order. The `exercise` binary (`list`, `check`, `hint`, `reset`, `watch`,
//! `report`) and `tests/exercises.rs` read them from here.
//!
//! A student's file is a complete kernel file: the step's own kernel for the architecture the GPU runs
//! (`kernel.cu` for steps 01–03, `sm90.cu` for 04–11) with a gap, a bug or a changed constant. It is
//! compiled and launched exactly as the step's own [`KernelFile`](crate::run::registry::KernelFile)
//! (same entry, defines, launch function and shared memory); only the source is replaced.

/// What the student does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Something is missing, marked `// TODO(exercise NN.K)`: write it.
    FillTheGap,
    /// The kernel has one planted bug: find it and fix it.
    FindTheBug,
    /// A constant is changed: predict what it does, then measure.
    PredictThenMeasure,
}

/// One exercise.
#[derive(Debug)]
pub struct Exercise {
    /// `"05.1"`.
    pub id: &'static str,
    /// `5`.
    pub step: u8,
    pub kind: Kind,
    pub title: &'static str,
    /// The starter the student edits, relative to the crate root, and its text embedded (for `reset`).
    pub starter_path: &'static str,
    pub starter: &'static str,
    /// The reference solution, relative to the crate root (under tests/exercises/), proven by the tests.
    pub solution_path: &'static str,
    /// Hints, shown one at a time by `exercise hint`.
    pub hints: &'static [&'static str],
    /// For PredictThenMeasure: the question, the unit, and the chapter's own calculation shown beside
    /// the measurement; None otherwise.
    pub prediction: Option<Prediction>,
}

/// The question of a predict-then-measure exercise.
#[derive(Debug)]
pub struct Prediction {
    pub question: &'static str,
    pub unit: &'static str,
    pub chapter_answer: &'static str,
}

#[path = "../../steps/step01_naive/exercises/exercises.rs"]
pub mod step01_naive;
#[path = "../../steps/step02_smem_tiling/exercises/exercises.rs"]
pub mod step02_smem_tiling;
#[path = "../../steps/step03_register_tiling/exercises/exercises.rs"]
pub mod step03_register_tiling;
#[path = "../../steps/step04_tma_mma/exercises/exercises.rs"]
pub mod step04_tma_mma;
#[path = "../../steps/step05_swizzle128/exercises/exercises.rs"]
pub mod step05_swizzle128;
#[path = "../../steps/step06_tma_store/exercises/exercises.rs"]
pub mod step06_tma_store;
#[path = "../../steps/step07_multicast/exercises/exercises.rs"]
pub mod step07_multicast;
#[path = "../../steps/step08_pipeline/exercises/exercises.rs"]
pub mod step08_pipeline;
#[path = "../../steps/step09_epilogue_double_buffer/exercises/exercises.rs"]
pub mod step09_epilogue_double_buffer;
#[path = "../../steps/step10_persistent/exercises/exercises.rs"]
pub mod step10_persistent;
#[path = "../../steps/step11_mxfp8/exercises/exercises.rs"]
pub mod step11_mxfp8;

/// Every step's exercises, step 01 first (one list per step; adding a step's list is one line).
pub static ALL: &[&[Exercise]] = &[
    step01_naive::EXERCISES,
    step02_smem_tiling::EXERCISES,
    step03_register_tiling::EXERCISES,
    step04_tma_mma::EXERCISES,
    step05_swizzle128::EXERCISES,
    step06_tma_store::EXERCISES,
    step07_multicast::EXERCISES,
    step08_pipeline::EXERCISES,
    step09_epilogue_double_buffer::EXERCISES,
    step10_persistent::EXERCISES,
    step11_mxfp8::EXERCISES,
];

/// Every exercise, in order.
pub fn all() -> impl Iterator<Item = &'static Exercise> {
    ALL.iter().flat_map(|list| list.iter())
}

/// Exercise `id` (`"05.1"`; `"5.1"` is accepted too), or `None`.
pub fn find(id: &str) -> Option<&'static Exercise> {
    let normalized = match id.split_once('.') {
        Some((step, k)) => match step.parse::<u8>() {
            Ok(step) => format!("{step:02}.{k}"),
            Err(_) => id.to_string(),
        },
        None => id.to_string(),
    };
    all().find(|e| e.id == normalized)
}
