//! The exercises of step 03 (register_tiling); the harness gathers them in `shared/run/exercise.rs`.
//! Each is a few exact edits of the step's kernel: `exercise start NN.K` writes the starter they make
//! into `exercises/` (proven by `tests/exercises.rs`).

use crate::run::edit::Edit;
#[allow(unused_imports)]
use crate::run::exercise::{Exercise, Kind, Prediction};
use crate::run::registry::Targets;

pub const EXERCISES: &[Exercise] = &[
    Exercise {
        id: "03.1",
        step: 3,
        targets: Targets::AnyGpu,
        kind: Kind::PredictThenMeasure,
        title: "Three blocks per SM",
        name: "three_blocks_per_sm",
        intro: "Step 03's kernel asking for three blocks per SM: `__launch_bounds__(THREADS, 3)` instead of 2. Before `exercise check 03.1`, predict the registers per thread the compiler may use now (65 536 registers per SM, THREADS = 256, handed out in groups of 8), and what that does to the 64 accumulators and 16 operands a thread keeps. The check prints the figure and the time.",
        edits: &[
            Edit {
                find: "extern \"C\" __global__ __launch_bounds__(THREADS, 2) void gemm(",
                replace: concat!(
                    "// exercise 03.1: three blocks per SM instead of two.\n",
                    "extern \"C\" __global__ __launch_bounds__(THREADS, 3) void gemm(",
                ),
            },
        ],
        answer: None,
        hints: &[
            "__launch_bounds__(THREADS, 3) promises 3 blocks of 256 threads per SM: how many of the 65 536 registers does each thread get?",
            "Registers are handed out per warp in groups of 8 per thread: round down to a multiple of 8.",
            "80 registers cannot hold 64 accumulators, 16 operands and the addresses: expect spills (local memory) and a slower kernel.",
        ],
        prediction: Some(Prediction {
            question: "How many registers per thread will the compiler use with __launch_bounds__(THREADS, 3)?",
            unit: "registers per thread",
            chapter_answer: "65 536 / (3 · 256) ≈ 85, in practice 80 (groups of 8): fewer than the 64 accumulators and 16 operands need with everything else, so the kernel spills to local memory.",
        }),
    },
    Exercise {
        id: "03.2",
        step: 3,
        targets: Targets::AnyGpu,
        kind: Kind::FillTheGap,
        title: "Read B from shared memory",
        name: "read_b",
        intro: "Step 03's kernel without the read of B from shared memory in the `register_tile` part. Until you write it, `exercise check 03.2` stops at NVRTC's error on the `____` line.",
        edits: &[
            Edit {
                find: concat!(
                    "const float4 v = *reinterpret_cast<const float4*>(&Bs[cur][k][tx * TN + q]);\n",
                    "                b[q] = v.x; b[q + 1] = v.y; b[q + 2] = v.z; b[q + 3] = v.w;",
                ),
                replace: concat!(
                    "// TODO(exercise 03.2): load b[q .. q+3], this thread's values of B at row k of the\n",
                    "                // current buffer, as one 128-bit load (the loop over As just above is the model).\n",
                    "                ____;",
                ),
            },
        ],
        answer: Some("Bs is stored transposed, Bs[buf][k][n]: this thread's TN columns start at tx·TN, four floats per float4, 16-byte aligned because TN is a multiple of 4 and the array is __align__(16)."),
        hints: &[
            "The loop over As just above reads 4 values of A with one float4; do the same for B.",
            "Bs is transposed like As: Bs[cur][k][n]. This thread's columns start at tx * TN.",
            "const float4 v = *reinterpret_cast<const float4*>(&Bs[cur][k][tx * TN + q]); then b[q] = v.x; ... b[q + 3] = v.w;",
        ],
        prediction: None,
    },
];
