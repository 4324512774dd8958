//! The exercises of step 01 (naive); the harness gathers them in `shared/run/exercise.rs`.
//! Starters here, reference solutions under `tests/exercises/` (proven by `tests/exercises.rs`).

#[allow(unused_imports)]
use crate::run::exercise::{Exercise, Kind, Prediction};

pub const EXERCISES: &[Exercise] = &[
    Exercise {
        id: "01.1",
        step: 1,
        kind: Kind::FindTheBug,
        title: "Which element of B?",
        starter_path: "steps/step01_naive/exercises/01_1_which_element_of_b.cu",
        starter: include_str!("01_1_which_element_of_b.cu"),
        solution_path: "tests/exercises/01_1_which_element_of_b.cu",
        hints: &[
            "The indexing of C and the bounds check are right; look inside the loop over k.",
            "How is B laid out? N×K row-major: where does row j of B start, and how far apart are its K values?",
            "b_row[k * N] walks a column of a K×N matrix. Row j of B starts at B + j * K, and its k-th value is b_row[k].",
        ],
        prediction: None,
    },
    Exercise {
        id: "01.2",
        step: 1,
        kind: Kind::PredictThenMeasure,
        title: "Turn the block",
        starter_path: "steps/step01_naive/exercises/01_2_turn_the_block.cu",
        starter: include_str!("01_2_turn_the_block.cu"),
        solution_path: "tests/exercises/01_2_turn_the_block.cu",
        hints: &[
            "Per k, a warp of the turned block has 32 different rows i and one column j. Which operand is now the broadcast, which one touches 32 sectors?",
            "Count the sectors per k for both kernels (A, B), then the store of C, which happens once per thread rather than once per k.",
            "The loads per k are the same 1 + 32 sectors either way; only the store scatters. Predict a ratio near 1.",
        ],
        prediction: Some(Prediction {
            question: "How many times step 01's own time does the kernel with threadIdx.x along M take at 1024³?",
            unit: "× the step's time",
            chapter_answer: "About 1×: per k a warp's loads touch 1 + 32 sectors either way (A and B swap roles); only the one store per thread scatters, 32 sectors instead of 2, once for K multiply-adds.",
        }),
    },
];
