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
    Exercise {
        id: "05.3",
        step: 5,
        targets: Targets::Ampere,
        kind: Kind::FillTheGap,
        title: "The reader swizzles too",
        name: "reader_applies_the_swizzle",
        intro: "Step 05's sm80 twin without the address each lane hands ldmatrix for A (the `addresses` part). Until you write it, `exercise check 05.3` stops at NVRTC's error on the `____` line. Exercise 05.1 asked the same of the Hopper twin's descriptor, whose answer did not need to know the swizzle: does this one?",
        edits: &[Edit {
            find: "return a_tile + swizzle_128b_offset(a_row + 16 * i, 2 * s + (lane >> 4));",
            replace: concat!(
                "// TODO(exercise 05.3): the byte address of this lane's row: row a_row + 16i of the tile,\n",
                "        // 16-byte chunk 2s + l / 16 of it, where the cp.async copies put that chunk.\n",
                "        return a_tile + ____;",
            ),
        }],
        answer: Some("a_tile + swizzle_128b_offset(a_row + 16 * i, 2 * s + (lane >> 4)): the copies stored chunk c of row r at chunk c ^ (r % 8), and on sm80 nothing undoes that for the reader, so each lane applies the same function. The opposite of exercise 05.1, where the hardware swizzles the wgmma's addresses and the step along K is a plain 32 bytes."),
        hints: &[
            "Where did load_tile put chunk c of row r?",
            "The same function, with the row this lane names (a_row + 16i) and the chunk of slice s it names (2s for lanes 0–15, 2s + 1 for lanes 16–31).",
            "swizzle_128b_offset(a_row + 16 * i, 2 * s + (lane >> 4))",
        ],
        prediction: None,
    },
    Exercise {
        id: "05.4",
        step: 5,
        targets: Targets::Ampere,
        kind: Kind::FindTheBug,
        title: "Whose rows",
        name: "whose_rows",
        intro: "Step 05's sm80 twin with one planted bug in the rows its warps read from the A tile (the `addresses` part): `exercise check 05.4` fails verification. Look at the first bad element's row and column modulo 128: which warps of the 2 × 2 compute a wrong quarter?",
        edits: &[Edit {
            find: "const int a_row = warp_row * WM + (lane & 15);",
            replace: "const int a_row = warp_column * WM + (lane & 15);",
        }],
        answer: Some("A warp's rows of A are those of its rows of C: warp_row · 64. warp_column picks the warp's columns of C, which are rows of B. With it, warps (0, 1) and (1, 0) multiplied the other half of the A tile: the upper-right and lower-left quarters of every block's C were wrong."),
        hints: &[
            "Rows 0–63 and columns 0–63 of a block's C come out right: which warps compute which quarter?",
            "Four warps as 2 × 2: warp_row picks 64 rows of C (and of A), warp_column 64 columns of C (and rows of B).",
            "a_row starts at warp_row * WM, not warp_column * WM.",
        ],
        prediction: None,
    },
];
