//! The exercises of step 05 (swizzle128); the harness gathers them in `shared/run/exercise.rs`.
//! Each is a few exact edits of the step's kernel: `exercise start NN.K` writes the starter they make
//! into `exercises/` (proven by `tests/exercises.rs`).

use crate::run::edit::Edit;
#[allow(unused_imports)]
use crate::run::exercise::{Exercise, Kind, Prediction};
use crate::run::registry::Targets;

pub const EXERCISES: &[Exercise] = &[
    Exercise {
        id: "05.1",
        step: 5,
        targets: Targets::Hopper,
        kind: Kind::FillTheGap,
        title: "The descriptor's step along K",
        name: "descriptor_step",
        intro: "Step 05's Hopper kernel without the descriptor's step along K (the `descriptors` part). Until you write it, `exercise check 05.1` stops at NVRTC's error on the `____` line. The swizzle scatters the slice's chunks: does the step have to know about that?",
        edits: &[
            Edit {
                find: "const u64 b_desc0 = B_DESC | ((smem_address(b_tile) & 0x3FFFF) >> 4);\n",
                replace: concat!(
                    "const u64 b_desc0 = B_DESC | ((smem_address(b_tile) & 0x3FFFF) >> 4);\n",
                    "    // TODO(exercise 05.1): how many bytes further along a swizzled 128-byte row does k16 slice s\n",
                    "    // start? (Bytes, not descriptor units: the lambdas below shift by 4.)\n",
                    "    constexpr int SLICE_BYTES = ____;\n",
                ),
            },
            Edit {
                find: "return a_desc0 + ((half * 64 * SWIZZLE_BYTES + slice * 32) >> 4);",
                replace: "return a_desc0 + ((half * 64 * SWIZZLE_BYTES + slice * SLICE_BYTES) >> 4);",
            },
            Edit {
                find: "return b_desc0 + ((slice * 32) >> 4);",
                replace: "return b_desc0 + ((slice * SLICE_BYTES) >> 4);",
            },
        ],
        answer: Some("16 bf16 = 32 bytes per k16 slice, as if unswizzled: the hardware applies the XOR to the final address of every chunk, and the 1024-byte-aligned tile makes that the TMA's XOR."),
        hints: &[
            "A k16 slice is 16 bf16 of one row. How many bytes is that?",
            "The swizzle XORs address bits 4..6 with bits 7..9 of the final address; the descriptor's start is swizzled by the hardware too.",
            "32: a plain +32 bytes per slice (+2 in the descriptor's 16-byte units), as if there were no swizzle.",
        ],
        prediction: None,
    },
    Exercise {
        id: "05.2",
        step: 5,
        targets: Targets::Hopper,
        kind: Kind::FindTheBug,
        title: "The lower half",
        name: "lower_half",
        intro: "Step 05's Hopper kernel with one planted bug among its wgmma descriptors: `exercise check 05.2` fails verification. Look at which rows of C the first bad element lies in (row mod 128), then at what each descriptor's start address counts.",
        edits: &[
            Edit {
                find: "half * 64 * SWIZZLE_BYTES + slice * 32",
                replace: "half * 64 * BK + slice * 32",
            },
        ],
        answer: Some("The lower 64 rows of the A tile start 64 rows × 128 bytes further on. The starter added 64 × BK, elements for bytes: 4096 bytes = 32 rows, so rows 64–127 of every block's C were computed from rows 32–95 of A (still 1024-byte aligned, so the swizzle itself was read right)."),
        hints: &[
            "The first bad element the check reports: which row of C, modulo 128, does it lie in?",
            "Rows 64–127 of every block come from the second wgmma tile, whose A descriptor starts further into the A tile. How much further?",
            "64 rows × SWIZZLE_BYTES (128 bytes), not 64 × BK: BK counts elements, the descriptor counts bytes.",
        ],
        prediction: None,
    },
];
