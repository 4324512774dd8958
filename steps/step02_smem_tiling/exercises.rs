//! The exercises of step 02 (smem_tiling); the harness gathers them in `shared/run/exercise.rs`.
//! Each is a few exact edits of the step's kernel: `exercise start NN.K` writes the starter they make
//! into `exercises/` (proven by `tests/exercises.rs`).

use crate::run::edit::Edit;
#[allow(unused_imports)]
use crate::run::exercise::{Exercise, Kind, Prediction};
use crate::run::registry::Targets;

pub const EXERCISES: &[Exercise] = &[
    Exercise {
        id: "02.1",
        step: 2,
        targets: Targets::AnyGpu,
        kind: Kind::FillTheGap,
        title: "Load the tile",
        name: "load_the_tile",
        intro: "Step 02's kernel without the copy of the tiles into shared memory (the `load_tile` part). Until you write it, `exercise check 02.1` stops at NVRTC's error on the `____` line.",
        edits: &[
            Edit {
                find: concat!(
                    "As[ty][tx] = (a_row < M && k < K) ? bf16_to_float(A[(i64)a_row * K + k]) : 0.0f;\n",
                    "        Bs[ty][tx] = (b_row < N && k < K) ? bf16_to_float(B[(i64)b_row * K + k]) : 0.0f;",
                ),
                replace: concat!(
                    "// TODO(exercise 02.1): copy this thread's element of the A tile into As[ty][tx] and of the B\n",
                    "        // tile into Bs[ty][tx], converted to fp32, with 0.0f where the element lies past M, N or K.\n",
                    "        ____;",
                ),
            },
        ],
        answer: Some("One element of A and one of B per thread per slice; zeros past the edges, so the last, partial slice of K and the tiles hanging over M and N add nothing."),
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
        targets: Targets::AnyGpu,
        kind: Kind::FindTheBug,
        title: "Which tile of B?",
        name: "which_tile_of_b",
        intro: "Step 02's kernel with one planted bug in the copy of the tiles: `exercise check 02.2` fails verification (which blocks of C are still right is a clue). Find it and fix it.",
        edits: &[
            Edit {
                find: "const int b_row = block_col + ty;",
                replace: "const int b_row = block_row + ty;",
            },
        ],
        answer: Some("The B tile of block (y, x) holds rows block_col .. block_col + BN − 1 of B (columns of C); the starter took rows block_row + ty, right only for the blocks on the diagonal, where they agree."),
        hints: &[
            "The compute loop and the barriers are step 02's own; the bug is in the load_tile part.",
            "Which rows of B does block (blockIdx.y, blockIdx.x) need? Columns of C are rows of B.",
            "b_row must start at block_col, not block_row: the two agree only on the diagonal blocks.",
        ],
        prediction: None,
    },
];
