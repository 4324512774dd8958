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
            "The MMAs, the tile order and the epilogue are step 10's; the wrong values are off by powers of two, so look at the conversions, convert_a and convert_b, and the scales they look up.",
            "A K tile is 64 elements of K: two 32-element scale blocks, block0 and block0 + 1. Slices q = 0, 1 take the first scale, q = 2, 3 the second. Does every converter look up both?",
            "In convert_b, scale[1] must be the scale of block block0 + 1; the planted kernel looks up block0 twice.",
        ],
        prediction: None,
    },
    Exercise {
        id: "11.2",
        step: 11,
        kind: Kind::FillTheGap,
        title: "Permute B",
        starter_path: "steps/step11_mxfp8/exercises/11_2_permute_b.cu",
        starter: include_str!("11_2_permute_b.cu"),
        solution_path: "tests/exercises/11_2_permute_b.cu",
        hints: &[
            "The `____` are compile errors until you write them. __byte_perm(x, y, s): byte i of the result is byte number (nibble i of s) of the eight bytes x (0 .. 3) then y (4 .. 7).",
            "w0 holds k = 0 .. 3 of the slice, w1 k = 4 .. 7, w2 8 .. 11, w3 12 .. 15, one byte each. Positions 0 .. 3 of the converted row must hold k = 0, 1, 4, 5 and positions 8 .. 11 k = 2, 3, 6, 7: the order ldmatrix gives A.",
            "0x5410 for p0 and p1, 0x7632 for p2 and p3.",
        ],
        prediction: None,
    },
];
