//! The classroom exercises: each step folder lists its own in `exercises/exercises.rs`; this file only
//! gathers them, in ladder order. The `exercise` binary (`list`, `check`, `hint`, `reset`, `watch`,
//! `report`) and `tests/exercises.rs` read them from here.
//!
//! A student's file is a complete kernel file: the step's own kernel for the architecture the GPU runs
//! (`kernel.cu` for steps 01–03, `sm90.cu` for 04–11) with a gap, a bug or a changed constant. It is
//! compiled and launched exactly as the step's own [`KernelFile`](crate::run::registry::KernelFile)
//! (same entry, defines, launch function and shared memory); only the source is replaced.

use crate::check::problem::Shape;
use crate::run::registry::{Format, KernelFile, Step, Targets};
use crate::run::steps;

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

/// The question of a predict-then-measure exercise. `unit` decides what `exercise check` measures
/// (see [`Quantity::of_unit`]): `"TFLOPS"`, `"ms"`, `"registers per thread"` or `"× the step's time"`
/// (the student's kernel's median time over the step's own kernel's, timed in the same loop).
#[derive(Debug)]
pub struct Prediction {
    pub question: &'static str,
    pub unit: &'static str,
    pub chapter_answer: &'static str,
}

/// What a predict-then-measure exercise measures, named by its [`Prediction::unit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantity {
    /// The student's kernel's TFLOPS at the square shape.
    Tflops,
    /// Its median time at the square shape, in milliseconds.
    Milliseconds,
    /// Registers per thread of its compiled entry (the driver's figure; ptxas's without a GPU).
    Registers,
    /// Its median time over the step's own kernel's, timed in the same alternating loop.
    TimeRatio,
}

impl Quantity {
    /// The quantity a unit names: `TFLOPS…`, `ms…`, `register…`, or `×…`/`x …` (a time ratio).
    pub fn of_unit(unit: &str) -> Option<Quantity> {
        let unit = unit.trim();
        if unit.starts_with("TFLOPS") {
            Some(Quantity::Tflops)
        } else if unit == "ms" || unit.starts_with("ms ") {
            Some(Quantity::Milliseconds)
        } else if unit.starts_with("register") {
            Some(Quantity::Registers)
        } else if unit.starts_with('×') || unit.starts_with("x ") {
            Some(Quantity::TimeRatio)
        } else {
            None
        }
    }

    /// Whether measuring it needs the timing loop.
    pub fn needs_timing(&self) -> bool {
        !matches!(self, Quantity::Registers)
    }
}

impl Kind {
    pub fn describe(&self) -> &'static str {
        match self {
            Kind::FillTheGap => "fill the gap",
            Kind::FindTheBug => "find the bug",
            Kind::PredictThenMeasure => "predict, then measure",
        }
    }
}

impl Exercise {
    /// The step the exercise belongs to.
    pub fn step_def(&self) -> &'static Step {
        steps::get(self.step)
            .unwrap_or_else(|_| panic!("exercise {} names step {}, which does not exist", self.id, self.step))
    }

    /// The step's own kernel file that the student's file replaces: the Hopper file where the step has
    /// one (steps 04–11), else its CUDA-core file (steps 01–03).
    pub fn kernel(&self) -> &'static KernelFile {
        let step = self.step_def();
        step.kernels
            .iter()
            .find(|k| k.targets == Targets::Hopper)
            .or_else(|| step.kernels.iter().find(|k| k.targets == Targets::AnyGpu))
            .unwrap_or_else(|| panic!("step {:02} has no Hopper or CUDA-core kernel", self.step))
    }

    /// `source`, named `path` in compiler messages, compiled and launched exactly as the step's own
    /// kernel (same targets, entry, defines, shared memory and launch).
    pub fn kernel_file(&self, path: &str, source: &str) -> KernelFile {
        KernelFile {
            path: path.to_string().leak(),
            source: source.to_string().leak(),
            ..*self.kernel()
        }
    }

    /// The embedded starter, as a kernel file named by its path.
    pub fn starter_file(&self) -> KernelFile {
        KernelFile {
            path: self.starter_path,
            source: self.starter,
            ..*self.kernel()
        }
    }

    /// The marker every starter carries where the work is: `TODO(exercise 05.1)` or `exercise 05.1`.
    pub fn marker(&self) -> String {
        format!("exercise {}", self.id)
    }

    /// The shapes `exercise check` verifies at: the square one, and two ragged ones whose edges cut
    /// through every tile size of the ladder (K a multiple of 32 for MXFP8, of 8 otherwise).
    pub fn shapes(&self, square: usize) -> Vec<Shape> {
        let ragged = match self.step_def().format {
            Format::Bf16 => [Shape::new(257, 255, 520), Shape::new(97, 131, 72)],
            Format::Mxfp8 => [Shape::new(257, 255, 544), Shape::new(97, 131, 96)],
        };
        vec![ragged[0], ragged[1], Shape::square(square)]
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_name_their_step_and_lists_are_in_order() {
        let mut seen = std::collections::HashSet::new();
        for (i, list) in ALL.iter().enumerate() {
            for (k, e) in list.iter().enumerate() {
                assert_eq!(e.step as usize, i + 1, "{} is in step {:02}'s list", e.id, i + 1);
                assert_eq!(
                    e.id,
                    format!("{:02}.{}", e.step, k + 1),
                    "ids count from 1 in each step"
                );
                assert!(seen.insert(e.id), "{} twice", e.id);
                assert!(!e.hints.is_empty(), "{} has no hint", e.id);
                let folder = format!("steps/step{:02}_{}/exercises/", e.step, e.step_def().name);
                assert!(
                    e.starter_path.starts_with(&folder),
                    "{} is not under {folder}",
                    e.starter_path
                );
                let name = e.starter_path.rsplit('/').next().expect("a file name");
                assert_eq!(e.solution_path, format!("tests/exercises/{name}"), "{}", e.id);
                assert_eq!(
                    e.prediction.is_some(),
                    e.kind == Kind::PredictThenMeasure,
                    "{}: a prediction exactly for predict-then-measure",
                    e.id
                );
                if let Some(p) = &e.prediction {
                    assert!(
                        Quantity::of_unit(p.unit).is_some(),
                        "{}: unknown unit {:?}",
                        e.id,
                        p.unit
                    );
                }
            }
        }
    }

    #[test]
    fn find_accepts_both_spellings() {
        if let Some(first) = all().next() {
            assert_eq!(find(first.id).map(|e| e.id), Some(first.id));
            let short = first.id.trim_start_matches('0');
            assert_eq!(find(short).map(|e| e.id), Some(first.id));
        }
        assert!(find("99.9").is_none());
    }
}
