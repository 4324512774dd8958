//! The exercises of step 11 (mxfp8); the harness gathers them in `shared/run/exercise.rs`.
//! Starters here, reference solutions under `tests/exercises/` (proven by `tests/exercises.rs`).

#[allow(unused_imports)]
use crate::run::exercise::{Exercise, Kind, Prediction};

pub const EXERCISES: &[Exercise] = &[
    Exercise {
        id: "11.1",
        step: 11,
        kind: Kind::FindTheBug,
        title: "Powers of two",
        starter_path: "steps/step11_mxfp8/exercises/11_1_which_scale.cu",
        starter: include_str!("11_1_which_scale.cu"),
        solution_path: "tests/exercises/11_1_which_scale.cu",
        hints: &[
            "The MMAs, the tile order and the epilogue are step 10's; the wrong values are off by powers of two, so look at the conversions, dequantize_b and convert_a, and the scales they multiply by.",
            "A K tile is 64 elements of K: two 32-element scale blocks. Slices 0, 1 take the first scale, slices 2, 3 the second. Does every converter build a factor from both?",
            "In convert_a, factor[r][b] must come from scale[r][b]; the planted kernel builds both blocks' factors from scale[r][0].",
        ],
        prediction: None,
    },
    Exercise {
        id: "11.2",
        step: 11,
        kind: Kind::FillTheGap,
        title: "Even bytes, odd bytes",
        starter_path: "steps/step11_mxfp8/exercises/11_2_even_and_odd.cu",
        starter: include_str!("11_2_even_and_odd.cu"),
        solution_path: "tests/exercises/11_2_even_and_odd.cu",
        hints: &[
            "The `____` are compile errors until you write them. The wgmma's A fragment for one k16 slice is four registers: a[0] row g, positions 2t, 2t+1; a[1] row g + 8, the same positions; a[2] row g, positions 2t+8, 2t+9; a[3] row g + 8, those positions.",
            "e4m3x4_to_bf16x4 returns the word's even bytes (4t, 4t+2) first and its odd bytes (4t+1, 4t+3) second. The pre-pass (dequantize_b) writes a word's even pair of B to positions 2t, 2t+1 and its odd pair to 2t+8, 2t+9.",
            "a[slice][row8] and a[slice][row8 + 2].",
        ],
        prediction: None,
    },
];
