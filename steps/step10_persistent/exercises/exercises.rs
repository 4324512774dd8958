//! The exercises of step 10 (persistent); the harness gathers them in `shared/run/exercise.rs`.
//! Starters here, reference solutions under `tests/exercises/` (proven by `tests/exercises.rs`).

#[allow(unused_imports)]
use crate::run::exercise::{Exercise, Kind, Prediction};

pub const EXERCISES: &[Exercise] = &[
    Exercise {
        id: "10.1",
        step: 10,
        kind: Kind::FindTheBug,
        title: "Square shapes only",
        starter_path: "steps/step10_persistent/exercises/10_1_tile_order.cu",
        starter: include_str!("10_1_tile_order.cu"),
        solution_path: "tests/exercises/10_1_tile_order.cu",
        hints: &[
            "Compare the shapes that fail with those that pass. At a square shape, how many tiles are there down M and along N?",
            "TileOrder::locate turns a tile number into (tile row, tile column). Inside a group the numbers run down the rows first: which of the two changes fastest?",
            "tile_m = first_m + within % rows; tile_n = within / rows. Swapped, the clusters compute the transposed set of tiles, which on a square grid is the same set in another order.",
        ],
        prediction: None,
    },
    Exercise {
        id: "10.2",
        step: 10,
        kind: Kind::PredictThenMeasure,
        title: "Row-major order",
        starter_path: "steps/step10_persistent/exercises/10_2_row_major_order.cu",
        starter: include_str!("10_2_row_major_order.cu"),
        solution_path: "tests/exercises/10_2_row_major_order.cu",
        hints: &[
            "With GROUP_M = 1 the numbers run along whole tile-rows: at 4096³ (16 × 16 tiles, 66 clusters) one turn covers four whole rows of tiles and two tiles of a fifth.",
            "Count the slabs (256 rows × all of K, 2 MiB at K = 4096) of A and of B one turn needs in each order, and compare their bytes with the L2.",
            "17 against 21 slabs, 34 against 42 MiB a turn, both inside L2; what the SMs ask of L2 does not depend on the order. Predict a ratio close to 1.",
        ],
        prediction: Some(Prediction {
            question: "How many times step 10's own time (GROUP_M = 8) does the row-major tile order (GROUP_M = 1) take at 4096³ (`exercise check 10.2 --size 4096`)?",
            unit: "× the step's time",
            chapter_answer: "About 1×. At 4096³ there are 16 × 16 tiles and 66 clusters: a grouped turn (tiles 0–65) needs 8 slabs of A and 9 of B, 17 in all; a row-major turn four whole tile-rows and two tiles of a fifth, 5 of A and all 16 of B, 21. A slab is 256 rows × 4096 × 2 bytes = 2 MiB: 34 against 42 MiB a turn, both within the H200's 60 MiB of L2, and the traffic from L2 to the SMs (264 MiB a turn) is the same in both orders. At 8192³ a grouped turn needs 17 slabs of 4 MiB, a row-major one 35: about 2.1 bytes of DRAM per thousand flops, still a fraction of what DRAM delivers. Little difference at either size.",
        }),
    },
];
