//! The exercises of step 03 (register_tiling); the harness gathers them in `shared/run/exercise.rs`.
//! Starters here, reference solutions under `tests/exercises/` (proven by `tests/exercises.rs`).

#[allow(unused_imports)]
use crate::run::exercise::{Exercise, Kind, Prediction};

pub const EXERCISES: &[Exercise] = &[
    Exercise {
        id: "03.1",
        step: 3,
        kind: Kind::PredictThenMeasure,
        title: "Three blocks per SM",
        starter_path: "steps/step03_register_tiling/exercises/03_1_three_blocks_per_sm.cu",
        starter: include_str!("03_1_three_blocks_per_sm.cu"),
        solution_path: "tests/exercises/03_1_three_blocks_per_sm.cu",
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
        kind: Kind::FillTheGap,
        title: "Read B from shared memory",
        starter_path: "steps/step03_register_tiling/exercises/03_2_read_b.cu",
        starter: include_str!("03_2_read_b.cu"),
        solution_path: "tests/exercises/03_2_read_b.cu",
        hints: &[
            "The loop over As just above reads 4 values of A with one float4; do the same for B.",
            "Bs is transposed like As: Bs[cur][k][n]. This thread's columns start at tx * TN.",
            "const float4 v = *reinterpret_cast<const float4*>(&Bs[cur][k][tx * TN + q]); then b[q] = v.x; ... b[q + 3] = v.w;",
        ],
        prediction: None,
    },
];
