//! The exercises of step 04 (tma_mma); the harness gathers them in `shared/run/exercise.rs`.
//! Each is a few exact edits of the step's kernel: `exercise start NN.K` writes the starter they make
//! into `exercises/` (proven by `tests/exercises.rs`).

use crate::run::edit::Edit;
#[allow(unused_imports)]
use crate::run::exercise::{Exercise, Kind, Prediction};
use crate::run::registry::Targets;

pub const EXERCISES: &[Exercise] = &[
    Exercise {
        id: "04.1",
        step: 4,
        targets: Targets::Hopper,
        kind: Kind::FindTheBug,
        title: "The kernel hangs",
        name: "the_kernel_hangs",
        intro: "Step 04's Hopper kernel with one planted bug around its mbarrier: `exercise check 04.1` never sees the kernel finish, and reports it as hung (exit code 3) after GEMM_LADDER_HANG_SECONDS (10 s by default for `exercise`). Work out which wait can never return, and why.",
        edits: &[
            Edit {
                find: "mbarrier_init(loaded, 1);",
                replace: "mbarrier_init(loaded, 2);",
            },
        ],
        answer: Some("A phase completes when its pending arrivals reach zero and its expected bytes have arrived. Only thread 0 arrives (mbarrier_arrive_expect_bytes), once per tile: initialised with a count of 2, phase 0 waits for a second arrival forever, and so does every thread in mbarrier_wait."),
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
        targets: Targets::Hopper,
        kind: Kind::FillTheGap,
        title: "Expect the bytes",
        name: "expect_the_bytes",
        intro: "Step 04's Hopper kernel without the byte count its mbarrier expects per K tile (the `tma_load` part). Until you write it, `exercise check 04.2` stops at NVRTC's error on the `____` line. A count that is too large hangs (reported as hung); think about boxes that hang over the edge.",
        edits: &[
            Edit {
                find: "mbarrier_arrive_expect_bytes(loaded, A_TILE_BYTES + B_TILE_BYTES);",
                replace: concat!(
                    "// TODO(exercise 04.2): arrive, announcing how many bytes the two copies below deliver.\n",
                    "            mbarrier_arrive_expect_bytes(loaded, ____);",
                ),
            },
        ],
        answer: Some("Both boxes, whole: BM·BK and BN·BK bf16. The TMA counts the zeros it writes past M, N or K as bytes too, so the count is the same for every tile, edge or not."),
        hints: &[
            "The barrier's phase completes once the announced bytes have arrived: announce exactly what the two tma_load_3d calls deliver.",
            "The constants at the top of the file already count the bytes of one A box and one B box.",
            "A_TILE_BYTES + B_TILE_BYTES: the TMA counts the zeros it writes past the edges too, so edge tiles are no different.",
        ],
        prediction: None,
    },
    Exercise {
        id: "04.3",
        step: 4,
        targets: Targets::Ampere,
        kind: Kind::FindTheBug,
        title: "Which column each lane names",
        name: "which_column_each_lane_names",
        intro: "Step 04's sm80 twin (`sm80.cu`: cp.async, ldmatrix, mma.sync) with one planted bug in the addresses its lanes hand to ldmatrix (the `addresses` part): `exercise check 04.3` fails verification. An ldmatrix.x4 reads four 8×8 matrices, and lane l names row l % 8 of matrix l / 8. Which matrices make up the A fragment of one m16n8k16, and which 16-byte column of the tile is each in?",
        edits: &[Edit {
            find: "a_tile + (lane >> 4) * A_COLUMN_BYTES",
            replace: "a_tile + (lane >> 5) * A_COLUMN_BYTES",
        }],
        answer: Some("The A fragment is four matrices: rows 0–7 and 8–15 of k 0–7, then of k 8–15. Lanes 16–31 name the second pair, which lies in the next 16-byte column of the slice: column l / 16. With l / 32 every lane named column 0, so k 8–15 of A were read as k 0–7 again and multiplied by k 8–15 of B (at K = 8 those B values are the zero fill, which is why that shape still passes)."),
        hints: &[
            "A wrong result at every square shape, yet K = 8 passes: what is different about k 8–15 when K is 8?",
            "Lanes 0–15 name the two matrices of k 0–7 (rows 0–15), lanes 16–31 the two of k 8–15: in which 16-byte column are those?",
            "lane >> 4, not lane >> 5: lanes 16–31 read the slice's second 16-byte column.",
        ],
        prediction: None,
    },
    Exercise {
        id: "04.4",
        step: 4,
        targets: Targets::Ampere,
        kind: Kind::FillTheGap,
        title: "Zeros past the edge",
        name: "zeros_past_the_edge",
        intro: "Step 04's sm80 twin without the test that decides which 16-byte pieces of A and B are copied and which arrive as zeros (the `load` part): the TMA did this for the Hopper twin, here every thread does it for its own pieces. Until you write it, `exercise check 04.4` stops at NVRTC's error on the `____` line. The check runs ragged shapes: think of M, N and K.",
        edits: &[Edit {
            find: "const bool inside = global_row < rows && k < K;",
            replace: concat!(
                "// TODO(exercise 04.4): is this 16-byte piece inside the matrix (copied) or past its edge\n",
                "        // (zeros, src_size 0)?\n",
                "        const bool inside = ____;",
            ),
        }],
        answer: Some("A piece is inside when its row is (global_row < rows, rows being M for A and N for B) and its first k is (k < K). The contract K % 8 == 0 makes a piece of 8 bf16 wholly in or wholly out, so no piece is partly inside; the zeros past K add nothing to the dot products, and the rows past M or N are never stored."),
        hints: &[
            "Two edges can cut a tile: the last rows (M for A, N for B) and the end of K.",
            "A 16-byte piece holds 8 consecutive k, and K is a multiple of 8: a piece is wholly in or wholly out.",
            "global_row < rows && k < K",
        ],
        prediction: None,
    },
];
