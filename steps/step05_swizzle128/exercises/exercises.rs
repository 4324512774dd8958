//! The exercises of step 05 (swizzle128); the harness gathers them in `shared/run/exercise.rs`.
//! Starters here, reference solutions under `tests/exercises/` (proven by `tests/exercises.rs`).

#[allow(unused_imports)]
use crate::run::exercise::{Exercise, Kind, Prediction};

pub const EXERCISES: &[Exercise] = &[
    Exercise {
        id: "05.1",
        step: 5,
        kind: Kind::FillTheGap,
        title: "The descriptor's step along K",
        starter_path: "steps/step05_swizzle128/exercises/05_1_descriptor_step.cu",
        starter: include_str!("05_1_descriptor_step.cu"),
        solution_path: "tests/exercises/05_1_descriptor_step.cu",
        hints: &[
            "A k16 slice is 16 bf16 of one row. How many bytes is that?",
            "The swizzle XORs address bits 4..6 with bits 7..9 of the final address; the descriptor's start is swizzled by the hardware too.",
            "32: a plain +32 bytes per slice (+2 in the descriptor's 16-byte units), as if there were no swizzle.",
        ],
        prediction: None,
    },
    Exercise {
        id: "05.2",
        step: 5,
        kind: Kind::FindTheBug,
        title: "The lower half",
        starter_path: "steps/step05_swizzle128/exercises/05_2_lower_half.cu",
        starter: include_str!("05_2_lower_half.cu"),
        solution_path: "tests/exercises/05_2_lower_half.cu",
        hints: &[
            "The first bad element the check reports: which row of C, modulo 128, does it lie in?",
            "Rows 64–127 of every block come from the second wgmma tile, whose A descriptor starts further into the A tile. How much further?",
            "64 rows × SWIZZLE_BYTES (128 bytes), not 64 × BK: BK counts elements, the descriptor counts bytes.",
        ],
        prediction: None,
    },
];
