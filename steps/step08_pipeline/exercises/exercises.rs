//! The exercises of step 08 (pipeline); the harness gathers them in `shared/run/exercise.rs`.
//! Starters here, reference solutions under `tests/exercises/` (proven by `tests/exercises.rs`).

#[allow(unused_imports)]
use crate::run::exercise::{Exercise, Kind, Prediction};

pub const EXERCISES: &[Exercise] = &[
    Exercise {
        id: "08.1",
        step: 8,
        kind: Kind::FindTheBug,
        title: "The first pass",
        starter_path: "steps/step08_pipeline/exercises/08_1_the_first_pass.cu",
        starter: include_str!("08_1_the_first_pass.cu"),
        solution_path: "tests/exercises/08_1_the_first_pass.cu",
        hints: &[
            "It hangs at every shape, before a single tile is computed. Which thread waits first, and on which barrier?",
            "Before filling stage s for round n the producer waits for phase n − 1 of empty[s]. For n = 0 that is the phase before the first, parity 1, which a fresh mbarrier reports as complete.",
            "mbarrier_wait(&empty[stage], parity ^ 1). The planted producer waits with `parity`, for phase 0, which only the consumers' releases complete, and they are waiting for a tile it never loads.",
        ],
        prediction: None,
    },
    Exercise {
        id: "08.2",
        step: 8,
        kind: Kind::FillTheGap,
        title: "Release the previous stage",
        starter_path: "steps/step08_pipeline/exercises/08_2_release_the_previous_stage.cu",
        starter: include_str!("08_2_release_the_previous_stage.cu"),
        solution_path: "tests/exercises/08_2_release_the_previous_stage.cu",
        hints: &[
            "The `____` is a compile error until you write it. A stage never released stops the producer once the ring has gone round: with more K tiles than stages the check reports a hang.",
            "After wgmma_wait<1>() at most the group just issued (K tile t) is running: the group of K tile t − 1 has finished reading its stage. Is there a previous tile at t = 0?",
            "if (t > 0) release((t - 1) % STAGES); the last stage is released after the loop, after wgmma_wait<0>().",
        ],
        prediction: None,
    },
    Exercise {
        id: "08.3",
        step: 8,
        kind: Kind::PredictThenMeasure,
        title: "Two stages",
        starter_path: "steps/step08_pipeline/exercises/08_3_two_stages.cu",
        starter: include_str!("08_3_two_stages.cu"),
        solution_path: "tests/exercises/08_3_two_stages.cu",
        hints: &[
            "With S stages the producer can run S − 1 K tiles ahead of the tile the consumers are computing: it refills a stage only when the consumers release it, one tile behind.",
            "One K tile of a block is 2·128·256·64 = 4.2 Mflop; at about 990 TFLOPS over 132 SMs an SM does it in about 0.56 µs. A TMA copy takes hundreds of clocks before its first bytes land, and a 48 KiB stage longer.",
            "Two stages give a copy about one K tile of MMA time to land, three about two. Expect the tensor cores to wait part of every K tile: slower than the step, by a fraction rather than by half.",
        ],
        prediction: Some(Prediction {
            question: "How many times step 08's own time (three stages) does the kernel with a two-stage ring take at 4096³ (`exercise check 08.3 --size 4096`)?",
            unit: "× the step's time",
            chapter_answer: "Above 1×, by a modest fraction. The producer refills a stage when the consumers release it, one K tile behind (wgmma_wait<1>), so with two stages the copy of K tile t + 1 starts as the MMAs of tile t start and has one tile of MMA time to land: 2·128·256·64 = 4.2 Mflop, at about 990 TFLOPS / 132 SMs ≈ 7.5 TFLOPS an SM, about 0.56 µs. A TMA copy of a 48 KiB stage from L2 takes hundreds of clocks before its first bytes land, so some of that lead is used up every tile and the tensor cores idle for the rest; three stages give about two tiles (1.1 µs) of lead.",
        }),
    },
];
