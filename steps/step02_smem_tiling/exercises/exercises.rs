//! The exercises of step 02 (smem_tiling); the harness gathers them in `shared/run/exercise.rs`.
//! Starters here, reference solutions under `tests/exercises/` (proven by `tests/exercises.rs`).

#[allow(unused_imports)]
use crate::run::exercise::{Exercise, Kind, Prediction};

pub const EXERCISES: &[Exercise] = &[
    Exercise {
        id: "02.1",
        step: 2,
        kind: Kind::FillTheGap,
        title: "Load the tile",
        starter_path: "steps/step02_smem_tiling/exercises/02_1_load_the_tile.cu",
        starter: include_str!("02_1_load_the_tile.cu"),
        solution_path: "tests/exercises/02_1_load_the_tile.cu",
        hints: &[
            "Each thread copies one element of A and one of B per slice; a_row, b_row and k are computed just above the gap.",
            "A is M×K row-major: element (a_row, k) is A[(i64)a_row * K + k]; convert it with bf16_to_float.",
            "Guard both: (a_row < M && k < K) ? ... : 0.0f, and the same with b_row < N for Bs[ty][tx].",
        ],
        prediction: None,
    },
    Exercise {
        id: "02.2",
        step: 2,
        kind: Kind::FindTheBug,
        title: "Which tile of B?",
        starter_path: "steps/step02_smem_tiling/exercises/02_2_which_tile_of_b.cu",
        starter: include_str!("02_2_which_tile_of_b.cu"),
        solution_path: "tests/exercises/02_2_which_tile_of_b.cu",
        hints: &[
            "The compute loop and the barriers are step 02's own; the bug is in the load_tile part.",
            "Which rows of B does block (blockIdx.y, blockIdx.x) need? Columns of C are rows of B.",
            "b_row must start at block_col, not block_row: the two agree only on the diagonal blocks.",
        ],
        prediction: None,
    },
];
