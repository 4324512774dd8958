//! The exercises of step 09 (epilogue_double_buffer); the harness gathers them in `shared/run/exercise.rs`.
//! Starters here, reference solutions under `tests/exercises/` (proven by `tests/exercises.rs`).

#[allow(unused_imports)]
use crate::run::exercise::{Exercise, Kind, Prediction};

pub const EXERCISES: &[Exercise] = &[
    Exercise {
        id: "09.1",
        step: 9,
        kind: Kind::FillTheGap,
        title: "Which buffer?",
        starter_path: "steps/step09_epilogue_double_buffer/exercises/09_1_which_buffer.cu",
        starter: include_str!("09_1_which_buffer.cu"),
        solution_path: "tests/exercises/09_1_which_buffer.cu",
        hints: &[
            "The `____` is a compile error until you write it. Each consumer has C_BUFFERS = 2 staging buffers of one 64-column chunk (8 KiB) and stores chunks c = 0 .. 3.",
            "Before packing chunk c (c ≥ 2) the storing thread waits until at most one store group, the newest (chunk c − 1), is still reading. Which buffer must chunk c use so that this wait protects it?",
            "const int buffer = c % C_BUFFERS; chunk c − 2 used the same buffer, and its store is older than the newest group.",
        ],
        prediction: None,
    },
    Exercise {
        id: "09.2",
        step: 9,
        kind: Kind::PredictThenMeasure,
        title: "Three stages, double-buffered",
        starter_path: "steps/step09_epilogue_double_buffer/exercises/09_2_three_stages.cu",
        starter: include_str!("09_2_three_stages.cu"),
        solution_path: "tests/exercises/09_2_three_stages.cu",
        hints: &[
            "Step 09 does two things: a double-buffered epilogue, and a fourth stage of the ring, paid for with the staging it shrank (the chapter's shared-memory table). This kernel keeps the first and takes away the second.",
            "At 4096³ a block runs 64 K slices of main loop and one epilogue: the epilogue is a small part of its time; the ring's depth acts on the main loop.",
            "Compare with step 08 (three stages, whole-tile epilogue): expect a ratio above 1, a good part of the way to step 08's time over step 09's.",
        ],
        prediction: Some(Prediction {
            question: "How many times step 09's own time (four stages) does its kernel with three stages take at 4096³ (`exercise check 09.2 --size 4096`)?",
            unit: "× the step's time",
            chapter_answer: "Above 1×: most of what step 09 gained over step 08. Halving the staging (2 consumers × 2 buffers × 8 KiB = 32 KiB instead of 64) and the 18 KiB step 08 left unused pay for a fourth 48 KiB stage: 4 · 48 + 32 + 1 = 225 KiB of the 227 a block may have. A block at 4096³ runs 64 K slices of main loop and one epilogue, so the double buffer's direct gain can only be small, while the deeper ring helps the main loop, which is most of the time; taking the stage away gives back the larger share.",
        }),
    },
];
