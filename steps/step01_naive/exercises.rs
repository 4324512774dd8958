//! The exercises of step 01 (naive); the harness gathers them in `shared/run/exercise.rs`.
//! Each is a few exact edits of the step's kernel: `exercise start NN.K` writes the starter they make
//! into `exercises/` (proven by `tests/exercises.rs`).

use crate::run::edit::Edit;
#[allow(unused_imports)]
use crate::run::exercise::{Exercise, Kind, Prediction};
use crate::run::registry::Targets;

pub const EXERCISES: &[Exercise] = &[
    Exercise {
        id: "01.1",
        step: 1,
        targets: Targets::AnyGpu,
        kind: Kind::FindTheBug,
        title: "Which element of B?",
        name: "which_element_of_b",
        intro: "Step 01's kernel with one planted bug, inside the dot product: `exercise check 01.1` fails verification at every shape. Find the line, fix it, check again (`exercise hint 01.1` helps).",
        edits: &[
            Edit {
                find: "const bf16* b_row = B + (i64)j * K;",
                replace: "const bf16* b_row = B + j;",
            },
            Edit {
                find: "bf16_to_float(b_row[k]);",
                replace: "bf16_to_float(b_row[(i64)k * N]);",
            },
        ],
        answer: Some("B is N×K row-major: row j of B holds the K values C[i][j] needs, contiguous (b_row). The starter walked B + j in steps of N, B[k·N + j]: element (k, j) of a K×N matrix, a column of the wrong layout. In bounds, and wrong for every element."),
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
        targets: Targets::AnyGpu,
        kind: Kind::PredictThenMeasure,
        title: "Turn the block",
        name: "turn_the_block",
        intro: "Step 01's kernel with the block turned: threadIdx.x runs along M instead of N (the `index` part). Still correct. Before you run `exercise check 01.2`, count for one warp instruction the sectors the load of A, the load of B and the store of C touch, and predict this kernel's time as a multiple of step 01's own (the check asks for the number and times both in one loop at 1024³).",
        edits: &[
            Edit {
                find: concat!(
                    "const int i = blockIdx.y * BM + threadIdx.y;  // row of C (and of A)\n",
                    "    const int j = blockIdx.x * BN + threadIdx.x;  // column of C (row of B)",
                ),
                replace: concat!(
                    "// exercise 01.2: the block turned, threadIdx.x now runs along M (BM == BN, so each block still\n",
                    "    // covers its own 32×32 tile of C and the result is the same).\n",
                    "    const int i = blockIdx.y * BM + threadIdx.x;  // row of C (and of A)\n",
                    "    const int j = blockIdx.x * BN + threadIdx.y;  // column of C (row of B)",
                ),
            },
        ],
        answer: None,
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
