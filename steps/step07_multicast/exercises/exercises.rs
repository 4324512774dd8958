//! The exercises of step 07 (multicast); the harness gathers them in `shared/run/exercise.rs`.
//! Starters here, reference solutions under `tests/exercises/` (proven by `tests/exercises.rs`).

#[allow(unused_imports)]
use crate::run::exercise::{Exercise, Kind, Prediction};

pub const EXERCISES: &[Exercise] = &[
    Exercise {
        id: "07.1",
        step: 7,
        kind: Kind::FindTheBug,
        title: "The cluster hangs",
        starter_path: "steps/step07_multicast/exercises/07_1_multicast_mask.cu",
        starter: include_str!("07_1_multicast_mask.cu"),
        solution_path: "tests/exercises/07_1_multicast_mask.cu",
        hints: &[
            "It hangs at every shape, on the first K tile: some block's `full` barrier never completes its phase. Compare the bytes it is told to expect with the bytes that reach it.",
            "full[stage] expects STAGE_BYTES: the A tile (16 KiB) and the whole B tile (16 KiB). Each block loads only half of B (8 KiB). Into whose shared memory does that half go?",
            "The mask is 1 << rank: the slice lands in this block only, 24 KiB of the 32 expected. Multicast to every block of the cluster: CLUSTER_MASK.",
        ],
        prediction: None,
    },
    Exercise {
        id: "07.2",
        step: 7,
        kind: Kind::FillTheGap,
        title: "Which slice of B?",
        starter_path: "steps/step07_multicast/exercises/07_2_which_slice_of_b.cu",
        starter: include_str!("07_2_which_slice_of_b.cu"),
        solution_path: "tests/exercises/07_2_which_slice_of_b.cu",
        hints: &[
            "The two `____` are compile errors until you write them. The blocks of a cluster share n0, and together must load all BN = 128 rows of the B tile, each half exactly once, into both blocks.",
            "rank (cluster_ctarank) is 0 or 1; b_map's box is B_SLICE_ROWS = 64 rows of 64 bf16; a row of the tile takes 128 bytes of shared memory (B_SLICE_BYTES a slice).",
            "b_tile(stage) + rank * B_SLICE_BYTES, and rows n0 + rank * B_SLICE_ROWS.",
        ],
        prediction: None,
    },
];
