//! The classroom exercises: each step lists its own in `steps/stepNN_name/exercises.rs`; this file only
//! gathers them, in ladder order. The `exercise` binary (`start`, `list`, `check`, `hint`, `reset`,
//! `watch`, `solution`, `report`) and `tests/exercises.rs` read them from here.
//!
//! An exercise is not a copy of a kernel: it is a short list of exact [`Edit`]s of the step's own
//! kernel for the architecture it names (`kernel.cu` for steps 01–03, `sm90.cu` or the sm80 twin's
//! `sm80.cu` for 04–11) that
//! open a gap, plant a bug or change a constant. `exercise start` makes the starter from the kernel
//! the binary was built with and writes it into the student's own folder, `exercises/` at the crate
//! root (ignored by git); the reference solution is the step's kernel itself (for predict-then-measure,
//! the starter: the changed constant is correct). The student's file is compiled and launched exactly
//! as the step's own [`KernelFile`] (same entry, defines, launch function and shared memory); only the
//! source is replaced. Where the step's launch takes a deeper compilation (the sm80 twins' rings,
//! [`crate::run::ring::deeper`]), it takes the student's text at those defines, so the edit runs at
//! the depth the step's own kernel runs at on that GPU.

use crate::check::problem::Shape;
use crate::error::{Error, Result};
use crate::run::edit::{self, Edit};
use crate::run::registry::{Format, KernelFile, KernelText, Step, Targets};
use crate::run::steps;

/// The student's folder, relative to the crate root: `exercise start` writes the starters there.
pub const STUDENT_FOLDER: &str = "exercises";

/// The width the comment at the top of a starter is wrapped to, as the kernels' own comments.
pub const COMMENT_COLUMNS: usize = 100;

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
    /// Which of the step's kernel files the edits are made in: [`Targets::AnyGpu`] for steps 01–03's
    /// one kernel, [`Targets::Hopper`] for `sm90.cu`, [`Targets::Ampere`] for the sm80 twin.
    pub targets: Targets,
    pub kind: Kind,
    pub title: &'static str,
    /// The student's file is `exercises/NN_K_name.cu`: `which_element_of_b`.
    pub name: &'static str,
    /// What the starter says at its top, under its id and kind: what is changed, and how to begin.
    pub intro: &'static str,
    /// From the step's kernel to the starter, in order, each `find` matching exactly once.
    pub edits: &'static [Edit],
    /// Why the fix is right, printed once `check` passes; `None` for predict-then-measure, whose
    /// answer is its [`Prediction::chapter_answer`].
    pub answer: Option<&'static str>,
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

    /// The unit in a narrow table column.
    pub fn short_unit(&self) -> &'static str {
        match self {
            Quantity::Tflops => "TFLOPS",
            Quantity::Milliseconds => "ms",
            Quantity::Registers => "regs",
            Quantity::TimeRatio => "×",
        }
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

    /// The step's own kernel file that the student's file replaces: the one of the exercise's
    /// [`Exercise::targets`] (`kernel.cu` for steps 01–03, `sm90.cu` or `sm80.cu` for 04–11).
    pub fn kernel(&self) -> &'static KernelFile {
        let step = self.step_def();
        step.kernels
            .iter()
            .find(|k| k.targets == self.targets)
            .unwrap_or_else(|| panic!("step {:02} has no kernel for {:?}", self.step, self.targets))
    }

    /// Whether the exercise's kernel runs on a GPU of compute capability `major.minor`.
    pub fn runs_on(&self, major: u32, minor: u32) -> bool {
        self.targets.serves(major, minor)
    }

    /// `source`, named `path` in compiler messages, compiled and launched exactly as the step's own
    /// kernel (same targets, entry, defines, shared memory and launch).
    pub fn kernel_file(&self, path: &str, source: &str) -> KernelFile {
        KernelFile {
            path: path.to_string().leak(),
            text: KernelText::Given(source.to_string().leak()),
            ..*self.kernel()
        }
    }

    /// `01_1_which_element_of_b.cu`.
    pub fn file_name(&self) -> String {
        format!("{}_{}.cu", self.id.replace('.', "_"), self.name)
    }

    /// `exercises/01_1_which_element_of_b.cu`: the student's file, relative to the crate root.
    pub fn student_path(&self) -> String {
        format!("{STUDENT_FOLDER}/{}", self.file_name())
    }

    /// The step's current kernel with this exercise's edits made; an error naming the exercise when
    /// an edit no longer matches exactly once (the kernel changed under it).
    fn edited_kernel(&self) -> Result<String> {
        let kernel = self.kernel();
        edit::apply_all(kernel.source(), kernel.path, self.edits).map_err(|mismatch| {
            Error::Other(format!(
                "exercise {}: its edit no longer fits the step's kernel: {mismatch}; update the edit in \
                 steps/step{:02}_{}/exercises.rs",
                self.id,
                self.step,
                self.step_def().name
            ))
        })
    }

    /// The file `exercise start` writes: a comment saying what to do, then the step's current kernel
    /// with the edits made.
    pub fn starter(&self) -> Result<String> {
        let body = self.edited_kernel()?;
        let mut header = format!("// Exercise {} · {} · {}\n", self.id, self.kind.describe(), self.title);
        let made = format!(
            "Made from {} by `exercise start {}`; `exercise reset {}` makes it again.",
            self.kernel().path,
            self.id,
            self.id
        );
        for paragraph in [self.intro, &made] {
            header += &wrap(paragraph, "//", COMMENT_COLUMNS);
        }
        Ok(header + "//\n" + &body)
    }

    /// The reference solution: the step's own kernel; for predict-then-measure, the starter (the
    /// changed constant is a correct variant, to be measured).
    pub fn solution(&self) -> Result<String> {
        match self.kind {
            Kind::PredictThenMeasure => self.starter(),
            Kind::FillTheGap | Kind::FindTheBug => Ok(self.kernel().source().to_string()),
        }
    }

    /// What the exercise measures, for predict-then-measure.
    pub fn quantity(&self) -> Option<Quantity> {
        self.prediction.as_ref().and_then(|p| Quantity::of_unit(p.unit))
    }

    /// Whether `exercise check` can complete it without a GPU: a predict-then-measure of the
    /// registers per thread, which ptxas reports, checked on the unchanged starter (a correct
    /// variant, which the tests run and verify on a GPU). Every other verdict needs the kernel run.
    pub fn completes_without_gpu(&self) -> bool {
        self.quantity() == Some(Quantity::Registers)
    }

    /// The lesson, as a unified diff: for a gap or a bug, the starter (without its comment) against
    /// the solution, i.e. the exercise's edits reversed; for predict-then-measure, the step's kernel
    /// against the starter, i.e. the changed constant.
    pub fn lesson(&self) -> Result<String> {
        let kernel = self.kernel();
        let edited = self.edited_kernel()?;
        let starter = format!("{} (the starter, without its comment)", self.student_path());
        let (old, new, old_name, new_name) = match self.kind {
            Kind::FillTheGap | Kind::FindTheBug => (
                edited.as_str(),
                kernel.source(),
                starter,
                format!("{} (the solution: the step's kernel)", kernel.path),
            ),
            Kind::PredictThenMeasure => (
                kernel.source(),
                edited.as_str(),
                format!("{} (the step's kernel)", kernel.path),
                starter,
            ),
        };
        Ok(edit::unified_diff(old, new, &old_name, &new_name, 3))
    }

    /// The starter, as a kernel file named by the student's path.
    pub fn starter_file(&self) -> Result<KernelFile> {
        Ok(self.kernel_file(&self.student_path(), &self.starter()?))
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

#[path = "../../steps/step01_naive/exercises.rs"]
pub mod step01_naive;
#[path = "../../steps/step02_smem_tiling/exercises.rs"]
pub mod step02_smem_tiling;
#[path = "../../steps/step03_register_tiling/exercises.rs"]
pub mod step03_register_tiling;
#[path = "../../steps/step04_tma_mma/exercises.rs"]
pub mod step04_tma_mma;
#[path = "../../steps/step05_swizzle128/exercises.rs"]
pub mod step05_swizzle128;
#[path = "../../steps/step06_tma_store/exercises.rs"]
pub mod step06_tma_store;
#[path = "../../steps/step07_multicast/exercises.rs"]
pub mod step07_multicast;
#[path = "../../steps/step08_pipeline/exercises.rs"]
pub mod step08_pipeline;
#[path = "../../steps/step09_epilogue_double_buffer/exercises.rs"]
pub mod step09_epilogue_double_buffer;
#[path = "../../steps/step10_persistent/exercises.rs"]
pub mod step10_persistent;
#[path = "../../steps/step11_mxfp8/exercises.rs"]
pub mod step11_mxfp8;

/// `text` as lines of at most `columns` characters, each starting with `prefix` (a word longer than
/// a line gets a line of its own): `"//"` for the comment at the top of a starter.
pub fn wrap(text: &str, prefix: &str, columns: usize) -> String {
    let mut out = String::new();
    let mut line = String::from(prefix);
    for word in text.split_whitespace() {
        if line.len() > prefix.len() && line.chars().count() + 1 + word.chars().count() > columns {
            out += &line;
            out.push('\n');
            line = String::from(prefix);
        }
        line.push(' ');
        line += word;
    }
    if line.len() > prefix.len() {
        out += &line;
        out.push('\n');
    }
    out
}

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
                assert!(
                    !e.name.is_empty()
                        && e.name
                            .chars()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                    "{}: the file name part {:?} is not snake_case",
                    e.id,
                    e.name
                );
                assert!(!e.edits.is_empty(), "{}: no edit of the kernel", e.id);
                assert_eq!(
                    e.answer.is_none(),
                    e.kind == Kind::PredictThenMeasure,
                    "{}: an answer exactly for what is not predict-then-measure",
                    e.id
                );
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
    fn text_is_wrapped_at_the_column_limit() {
        let text = "one two three four five six seven";
        assert_eq!(wrap(text, "//", 20), "// one two three\n// four five six\n// seven\n");
        assert_eq!(wrap("", "//", 20), "");
        assert_eq!(
            wrap("averyveryverylongword x", "//", 10),
            "// averyveryverylongword\n// x\n"
        );
        assert_eq!(wrap("a b", " ", 4), "  a\n  b\n");
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
