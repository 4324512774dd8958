//! The exercises of step 06 (tma_store); the harness gathers them in `shared/run/exercise.rs`.
//! Starters here, reference solutions under `tests/exercises/` (proven by `tests/exercises.rs`).

#[allow(unused_imports)]
use crate::run::exercise::{Exercise, Kind, Prediction};

pub const EXERCISES: &[Exercise] = &[
    Exercise {
        id: "06.1",
        step: 6,
        kind: Kind::FillTheGap,
        title: "Swizzle the staging tile",
        starter_path: "steps/step06_tma_store/exercises/06_1_swizzle_the_staging_tile.cu",
        starter: include_str!("06_1_swizzle_the_staging_tile.cu"),
        solution_path: "tests/exercises/06_1_swizzle_the_staging_tile.cu",
        hints: &[
            "The TMA store reads each box back through C's tensor map, which step.rs builds with the 128-byte swizzle (`store_map_for_c`): the staging box must be written in the layout the TMA wrote A and B in (chapter 05). The `____` is a compile error until you write it.",
            "In a 128-byte swizzled box, row r starts at r · 128 and its 16-byte chunk c sits at position c XOR (r % 8) of that row. common.cuh has a helper that computes it.",
            "swizzle_128b_offset(row, chunk % 8). Only the square shape takes the TMA-store path (the ragged ones have N % 8 != 0), so that is where a wrong offset fails.",
        ],
        prediction: None,
    },
    Exercise {
        id: "06.2",
        step: 6,
        kind: Kind::FindTheBug,
        title: "Where the boxes go",
        starter_path: "steps/step06_tma_store/exercises/06_2_store_box_coordinates.cu",
        starter: include_str!("06_2_store_box_coordinates.cu"),
        solution_path: "tests/exercises/06_2_store_box_coordinates.cu",
        hints: &[
            "The ragged shapes pass: their N is not a multiple of 8, so they take step 05's direct stores. Look at what only the TMA-store path does.",
            "A tensor map's coordinates are given innermost dimension first. Compare the stores with the loads tma_load_2d(..., t * BK, m0).",
            "tma_store_2d(map, source, x, y): x is the column, n0 + b · C_BOX_COLUMNS, and y the row, m0. The planted store has them swapped.",
        ],
        prediction: None,
    },
];
