//! The exercises of step 07 (multicast); the harness gathers them in `shared/run/exercise.rs`.
//! Each is a few exact edits of the step's kernel: `exercise start NN.K` writes the starter they make
//! into `exercises/` (proven by `tests/exercises.rs`).

use crate::run::edit::Edit;
#[allow(unused_imports)]
use crate::run::exercise::{Exercise, Kind, Prediction};
use crate::run::registry::Targets;

pub const EXERCISES: &[Exercise] = &[
    Exercise {
        id: "07.1",
        step: 7,
        targets: Targets::Hopper,
        kind: Kind::FindTheBug,
        title: "The cluster hangs",
        name: "multicast_mask",
        intro: "Step 07's Hopper kernel with one planted bug in how B is shared: `exercise check 07.1` never sees the kernel finish, and reports it as hung (exit code 3) after GEMM_LADDER_HANG_SECONDS. Count the bytes that reach each block's `full` barrier per stage against the bytes it expects.",
        edits: &[
            Edit {
                find: "n0 + rank * B_SLICE_ROWS, CLUSTER_MASK);",
                replace: "n0 + rank * B_SLICE_ROWS, 1u << rank);",
            },
        ],
        answer: Some("Each block loads half of the B tile and must multicast it to every block of the cluster: CLUSTER_MASK = 0b11. With the mask 1 << rank a block's slice landed in its own shared memory only, so its `full` barrier received A (16 KiB) + its own half of B (8 KiB) = 24 KiB of the 32 KiB announced, and the phase never completed."),
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
        targets: Targets::Hopper,
        kind: Kind::FillTheGap,
        title: "Which slice of B?",
        name: "which_slice_of_b",
        intro: "Step 07's Hopper kernel without the two numbers that say which slice of B this block loads for the cluster and where in every block's stage it lands (the `tma_load` part). Until you write them, `exercise check 07.2` stops at NVRTC's errors on the `____` lines.",
        edits: &[
            Edit {
                find: concat!(
                    "tma_load_2d_multicast(b_tile(stage) + rank * B_SLICE_BYTES, &b_map, &full[stage], t * BK,\n",
                    "                              n0 + rank * B_SLICE_ROWS, CLUSTER_MASK);",
                ),
                replace: concat!(
                    "// TODO(exercise 07.2): which rows of B this block loads for the whole cluster (the box of b_map\n",
                    "        // is B_SLICE_ROWS rows × 64 bf16), and where in the B tile of every block they land.\n",
                    "        tma_load_2d_multicast(b_tile(stage) + ____, &b_map, &full[stage], t * BK,\n",
                    "                              n0 + ____, CLUSTER_MASK);",
                ),
            },
        ],
        answer: Some("Block `rank` of the cluster loads rows n0 + rank·B_SLICE_ROWS .. of B (B_SLICE_ROWS = 64, the box of b_map) and writes them rank·B_SLICE_BYTES into the B tile of every block, so that the slices of the two blocks tile the 128 rows exactly once."),
        hints: &[
            "The two `____` are compile errors until you write them. The blocks of a cluster share n0, and together must load all BN = 128 rows of the B tile, each half exactly once, into both blocks.",
            "rank (cluster_ctarank) is 0 or 1; b_map's box is B_SLICE_ROWS = 64 rows of 64 bf16; a row of the tile takes 128 bytes of shared memory (B_SLICE_BYTES a slice).",
            "b_tile(stage) + rank * B_SLICE_BYTES, and rows n0 + rank * B_SLICE_ROWS.",
        ],
        prediction: None,
    },
];
