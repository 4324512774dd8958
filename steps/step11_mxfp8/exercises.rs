//! The exercises of step 11 (mxfp8); the harness gathers them in `shared/run/exercise.rs`.
//! Each is a few exact edits of the step's kernel: `exercise start NN.K` writes the starter they make
//! into `exercises/` (proven by `tests/exercises.rs`).

use crate::run::edit::Edit;
#[allow(unused_imports)]
use crate::run::exercise::{Exercise, Kind, Prediction};
use crate::run::registry::Targets;

pub const EXERCISES: &[Exercise] = &[
    Exercise {
        id: "11.1",
        step: 11,
        targets: Targets::Hopper,
        kind: Kind::FindTheBug,
        title: "Powers of two",
        name: "which_scale",
        intro: "Step 11's Hopper kernel with one planted bug in the conversion of an operand: `exercise check 11.1` fails at every shape, but C is not garbage: it is wrong by powers of two, in some places. Which elements of K does a K tile of 64 cover, and how many scales is that?",
        edits: &[
            Edit {
                find: "factor[r][b] = scale_bf16x2(scale[r][b], wide);",
                replace: "factor[r][b] = scale_bf16x2(scale[r][0], wide);",
            },
        ],
        answer: Some("A K tile of 64 elements spans two 32-element scale blocks: elements 0..31 of the tile (slices 0, 1) take the first scale, elements 32..63 (slices 2, 3) the second. With scale[r][0] for both blocks, A's second half of every K tile was scaled by its first half's scale."),
        hints: &[
            "The MMAs, the tile order and the epilogue come from step 10's pipeline and know nothing of scales; the wrong values are off by powers of two, so look at the conversions, dequantize_b and convert_a, and the scales they multiply by.",
            "A K tile is 64 elements of K: two 32-element scale blocks. Slices 0, 1 take the first scale, slices 2, 3 the second. Does every converter build a factor from both?",
            "In convert_a, factor[r][b] must come from scale[r][b]; the planted kernel builds both blocks' factors from scale[r][0].",
        ],
        prediction: None,
    },
    Exercise {
        id: "11.2",
        step: 11,
        targets: Targets::Hopper,
        kind: Kind::FillTheGap,
        title: "Even bytes, odd bytes",
        name: "even_and_odd",
        intro: "Step 11's Hopper kernel without the two registers of A's fragment that each converted word goes to (in `convert_a`). Until you write them, `exercise check 11.2` stops at NVRTC's errors on the `____` line. A wrong pair compiles, and then C is wrong: the pre-pass has already decided B's order of K.",
        edits: &[
            Edit {
                find: "e4m3x4_to_bf16x4(raw[pair][m], factor[row8][slice / 2], wide, a[slice][row8], a[slice][row8 + 2]);",
                replace: concat!(
                    "// TODO(exercise 11.2): which of this slice's four fragment registers take the word's even\n",
                    "                    // pair and its odd pair? (a[slice][0] .. a[slice][3]; row8 is 0 for row g, 1 for g + 8)\n",
                    "                    e4m3x4_to_bf16x4(raw[pair][m], factor[row8][slice / 2], wide, a[slice][____], a[slice][____]);",
                ),
            },
        ],
        answer: Some("ldmatrix gives thread t the word of bytes 4t .. 4t+3 of a slice, for rows g (raw[pair][m], m even) and g + 8 (m odd). The conversion turns it into the pair (4t, 4t+2) and the pair (4t+1, 4t+3). The pre-pass puts a word's even pair of B at positions 2t, 2t+1 of the slice and its odd pair at 2t+8, 2t+9; in the fragment those are a[0] (a[1] for row g + 8) and a[2] (a[3]): a[slice][row8] and a[slice][row8 + 2]."),
        hints: &[
            "The `____` are compile errors until you write them. The wgmma's A fragment for one k16 slice is four registers: a[0] row g, positions 2t, 2t+1; a[1] row g + 8, the same positions; a[2] row g, positions 2t+8, 2t+9; a[3] row g + 8, those positions.",
            "e4m3x4_to_bf16x4 returns the word's even bytes (4t, 4t+2) first and its odd bytes (4t+1, 4t+3) second. The pre-pass (dequantize_b) writes a word's even pair of B to positions 2t, 2t+1 and its odd pair to 2t+8, 2t+9.",
            "a[slice][row8] and a[slice][row8 + 2].",
        ],
        prediction: None,
    },
    Exercise {
        id: "11.3",
        step: 11,
        targets: Targets::Hopper,
        kind: Kind::PredictThenMeasure,
        title: "After the pre-pass",
        name: "after_the_pre_pass",
        intro: "Step 11's Hopper kernel with the pre-pass's `griddepcontrol.launch_dependents` taken out: the GEMM is still launched as a programmatic dependent of the pre-pass, but without the trigger it may start only once every block of the pre-pass has exited, as two ordinary launches would. The result is still right (the GEMM's producer waits with `griddepcontrol.wait` either way). Predict how its time compares with the step's at 4096³, then measure.",
        edits: &[Edit {
            find: "    asm volatile(\"griddepcontrol.launch_dependents;\");\n",
            replace: concat!(
                "    // exercise 11.3: no trigger, so the GEMM starts only after the pre-pass has ended.\n",
                "    // asm volatile(\"griddepcontrol.launch_dependents;\");\n",
            ),
        }],
        answer: None,
        hints: &[
            "What can the GEMM do before the converted B is complete? Its producer waits with griddepcontrol.wait before the first load; its blocks can only be scheduled, initialise their barriers, prefetch the tensor maps and set their registers.",
            "How long is that, against the step's time at 4096³ (its table gives it)? And the pre-pass's last partial wave of blocks: how much of the GPU does it leave idle, and for how long?",
            "A few microseconds at most, against a step of hundreds of microseconds: predict a ratio within a percent or so of 1, about as large as the loop's noise.",
        ],
        prediction: Some(Prediction {
            question: "How many times step 11's own time does the kernel whose pre-pass does not trigger the GEMM's early start take at 4096³ (`exercise check 11.3 --size 4096`)?",
            unit: "× the step's time",
            chapter_answer: "About 1×, slightly above. The early start can hide only what the GEMM does before its first load of B (being scheduled, barrier set-up, tensor-map prefetch, setmaxnreg) and the idle SMs of the pre-pass's last partial wave: a few microseconds against a step of hundreds of microseconds at 4096³, within a percent, about the size of the loop's noise. The development runs behind the chapter saw about +0.5 % at 4096³ and nothing measurable at 8192³ (unrecorded).",
        }),
    },
    Exercise {
        id: "11.4",
        step: 11,
        targets: Targets::Ampere,
        kind: Kind::FindTheBug,
        title: "Powers of two (sm80)",
        name: "which_scale_sm80",
        intro: "Step 11's sm80 twin with one planted bug in the conversion of an operand: `exercise check 11.4` fails at every shape, but C is not garbage: it is wrong by powers of two, in some places. Which elements of K does a K tile of 128 cover, and how many scales is that?",
        edits: &[Edit {
            find: "a_factor[i][down] = factor_of<WIDE>(scales, a_rows + 16 * i + 8 * down + g, s);",
            replace: "a_factor[i][down] = factor_of<WIDE>(scales, a_rows + 16 * i + 8 * down + g, 0);",
        }],
        answer: Some("A K tile of 128 elements spans four 32-element scale blocks, and mma_block multiplies one of them, s, at a time: A's factors must come from block s of the row's four scale bytes. With block 0's for every s, elements 32..127 of every K tile of A were scaled by the first block's scale: wrong by a power of two wherever the blocks' scales differ."),
        hints: &[
            "The MMAs, the tile order and the epilogue are step 10's and know nothing of scales; the wrong values are off by powers of two, so look at the factors the conversion multiplies by.",
            "A K tile is 128 elements: four scale blocks, s = 0 .. 3, one call of mma_block each. Do B's factors and A's both come from block s?",
            "In mma_block, a_factor must come from factor_of(scales, row, s); the planted kernel takes block 0 for every s.",
        ],
        prediction: None,
    },
    Exercise {
        id: "11.5",
        step: 11,
        targets: Targets::Ampere,
        kind: Kind::FillTheGap,
        title: "Even bytes, odd bytes (sm80)",
        name: "even_and_odd_sm80",
        intro: "Step 11's sm80 twin without the two registers of the `mma.sync` A fragment that the converted word of row g goes to (in `a_operand`). Until you write them, `exercise check 11.5` stops at NVRTC's errors on the `____` line. A wrong pair compiles, and then C is wrong: B's conversion has already decided the order of K.",
        edits: &[Edit {
            find: "e4m3x4_to_bf16x4(top, top_factor, WIDE, a[0], a[2]);",
            replace: concat!(
                "// TODO(exercise 11.5): which of the fragment's four registers take row g's even pair and its\n",
                "    // odd pair? (a[0] .. a[3]; row g + 8's go to a[1] and a[3])\n",
                "    e4m3x4_to_bf16x4(top, top_factor, WIDE, a[____], a[____]);",
            ),
        }],
        answer: Some("ldmatrix gives lane (g, t) bytes 4t .. 4t+3 of row g's k16 slice; the conversion returns the pair (4t, 4t+2) and the pair (4t+1, 4t+3). B's conversion puts a word's even pair in b0 (the MMA's k = 2t, 2t+1) and its odd pair in b1 (k = 2t+8, 2t+9); A must agree: row g's even pair in a[0], its odd pair in a[2] (row g + 8's in a[1] and a[3]). Then every k of the slice meets its own partner, in a permuted order the dot product does not see."),
        hints: &[
            "The `____` are compile errors until you write them. The m16n8k16 A fragment is four registers: a[0] row g, k = 2t, 2t+1; a[1] row g + 8, the same k; a[2] row g, k = 2t+8, 2t+9; a[3] row g + 8, those k.",
            "e4m3x4_to_bf16x4 returns the word's even bytes (4t, 4t+2) first and its odd bytes (4t+1, 4t+3) second; mma_block hands B's even pair to the MMA as b0 (k = 2t, 2t+1) and its odd pair as b1 (k = 2t+8, 2t+9).",
            "a[0] and a[2].",
        ],
        prediction: None,
    },
];
