//! The exercises of step 04 (tma_mma); the harness gathers them in `shared/run/exercise.rs`.
//! Starters here, reference solutions under `tests/exercises/` (proven by `tests/exercises.rs`).

#[allow(unused_imports)]
use crate::run::exercise::{Exercise, Kind, Prediction};

pub const EXERCISES: &[Exercise] = &[
    Exercise {
        id: "04.1",
        step: 4,
        kind: Kind::FindTheBug,
        title: "The kernel hangs",
        starter_path: "steps/step04_tma_mma/exercises/04_1_the_kernel_hangs.cu",
        starter: include_str!("04_1_the_kernel_hangs.cu"),
        solution_path: "tests/exercises/04_1_the_kernel_hangs.cu",
        hints: &[
            "A hang with one mbarrier: some wait is for a phase that never completes. What completes a phase?",
            "A phase completes when its pending arrivals reach zero and its announced bytes have arrived. How many threads arrive per tile?",
            "Only thread 0 arrives, once per tile (mbarrier_arrive_expect_bytes): the barrier must be initialised with a count of 1.",
        ],
        prediction: None,
    },
    Exercise {
        id: "04.2",
        step: 4,
        kind: Kind::FillTheGap,
        title: "Expect the bytes",
        starter_path: "steps/step04_tma_mma/exercises/04_2_expect_the_bytes.cu",
        starter: include_str!("04_2_expect_the_bytes.cu"),
        solution_path: "tests/exercises/04_2_expect_the_bytes.cu",
        hints: &[
            "The barrier's phase completes once the announced bytes have arrived: announce exactly what the two tma_load_3d calls deliver.",
            "The constants at the top of the file already count the bytes of one A box and one B box.",
            "A_TILE_BYTES + B_TILE_BYTES: the TMA counts the zeros it writes past the edges too, so edge tiles are no different.",
        ],
        prediction: None,
    },
];
