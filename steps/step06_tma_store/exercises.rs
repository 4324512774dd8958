//! The exercises of step 06 (tma_store); the harness gathers them in `shared/run/exercise.rs`.
//! Each is a few exact edits of the step's kernel: `exercise start NN.K` writes the starter they make
//! into `exercises/` (proven by `tests/exercises.rs`).

use crate::run::edit::Edit;
#[allow(unused_imports)]
use crate::run::exercise::{Exercise, Kind, Prediction};
use crate::run::registry::Targets;

pub const EXERCISES: &[Exercise] = &[
    Exercise {
        id: "06.1",
        step: 6,
        targets: Targets::Hopper,
        kind: Kind::FillTheGap,
        title: "Swizzle the staging tile",
        name: "swizzle_the_staging_tile",
        intro: "Step 06's Hopper kernel without the address, inside its store box, at which each lane's stmatrix row lands (the `stmatrix` part). Until you write it, `exercise check 06.1` stops at NVRTC's error on the `____` line. The TMA store reads the box back through C's tensor map, which was built with the 128-byte swizzle: the staging tile must be written in that layout. Only the square shape takes the TMA-store path (the ragged shapes have N % 8 != 0 and store directly), so a wrong address shows there.",
        edits: &[
            Edit {
                find: concat!(
                    "const u32 address =\n",
                    "                    staging_address + (chunk / 8) * C_BOX_BYTES + swizzle_128b_offset(row, chunk % 8);",
                ),
                replace: concat!(
                    "// TODO(exercise 06.1): the byte offset of 16-byte chunk (chunk % 8) of `row` inside its\n",
                    "                // 128-byte-swizzled store box (row 0 of the box at offset 0).\n",
                    "                const u32 address =\n",
                    "                    staging_address + (chunk / 8) * C_BOX_BYTES + ____;",
                ),
            },
        ],
        answer: Some("Chunk c % 8 (16 bytes) of row `row` of a 128-byte swizzled box lies at row·128 + ((c % 8) XOR (row % 8))·16: swizzle_128b_offset(row, chunk % 8), the layout the TMA wrote the operand tiles in and the one C's tensor map (TmaSwizzle::B128) reads back."),
        hints: &[
            "The TMA store reads each box back through C's tensor map, which step.rs builds with the 128-byte swizzle (`store_map_for_c`): the staging box must be written in the layout the TMA wrote A and B in (chapter 05). The `____` is a compile error until you write it.",
            "In a 128-byte swizzled box, row r starts at r · 128 and its 16-byte chunk c sits at position c XOR (r % 8) of that row. stmatrix.cuh has a helper that computes it.",
            "swizzle_128b_offset(row, chunk % 8). Only the square shape takes the TMA-store path (the ragged ones have N % 8 != 0), so that is where a wrong offset fails.",
        ],
        prediction: None,
    },
    Exercise {
        id: "06.2",
        step: 6,
        targets: Targets::Hopper,
        kind: Kind::FindTheBug,
        title: "Where the boxes go",
        name: "store_box_coordinates",
        intro: "Step 06's Hopper kernel with one planted bug in its epilogue. `exercise check 06.2` passes at the ragged shapes and fails at the square one: find what only the TMA-store path gets wrong.",
        edits: &[
            Edit {
                find: "n0 + b * C_BOX_COLUMNS, m0);",
                replace: "m0, n0 + b * C_BOX_COLUMNS);",
            },
        ],
        answer: Some("A tensor map's coordinates run innermost dimension first: (x, y) = (column, row), as in the loads (t·BK, m0). The store of box b goes to column n0 + 64·b, row m0; with (m0, n0 + 64·b) every box landed at the transposed block's place, 64 columns wide where 128 rows were meant."),
        hints: &[
            "The ragged shapes pass: their N is not a multiple of 8, so they take step 05's direct stores. Look at what only the TMA-store path does.",
            "A tensor map's coordinates are given innermost dimension first. Compare the stores with the loads tma_load_2d(..., t * BK, m0).",
            "tma_store_2d(map, source, x, y): x is the column, n0 + b · C_BOX_COLUMNS, and y the row, m0. The planted store has them swapped.",
        ],
        prediction: None,
    },
    Exercise {
        id: "06.3",
        step: 6,
        targets: Targets::Ampere,
        kind: Kind::FillTheGap,
        title: "Where a lane's pair goes",
        name: "where_a_lanes_pair_goes",
        intro: "Step 06's sm80 twin without the shared-memory address of a lane's bf16 pair in the staging tile (the `stage` part): stmatrix, which finds rows for the Hopper twin, is sm_90 and newer. Until you write it, `exercise check 06.3` stops at NVRTC's error on the `____` line. The threads that send the tile to C read it as BN / 64 boxes of BM rows × 128 bytes, swizzled (the `store` part): write where they will look.",
        edits: &[Edit {
            find: "return staging + (col / 64) * (BM * ROW_BYTES) + swizzle_128b_offset(row, (col % 64) / 8) +\n                   2 * (col % 8);",
            replace: concat!(
                "// TODO(exercise 06.3): the byte address of element (row, col) of the tile: box col / 64,\n",
                "            // its row `row`, the swizzled 16-byte chunk of col, and the pair's place in that chunk.\n",
                "            return staging + ____;",
            ),
        }],
        answer: Some("staging + (col / 64) · BM · 128 + swizzle_128b_offset(row, (col % 64) / 8) + 2 · (col % 8): the box, the swizzled chunk of the row, then 2 bytes per element within the chunk. It must be the layout the store loop reads; the swizzle also spreads a warp's 8 rows × 16 bytes over all 32 banks."),
        hints: &[
            "The store part reads chunk c of row r of box b at staging + b · BM · 128 + swizzle_128b_offset(r, c).",
            "Column col is in box col / 64, chunk (col % 64) / 8, and element col % 8 of that chunk: 2 bytes each.",
            "(col / 64) * (BM * ROW_BYTES) + swizzle_128b_offset(row, (col % 64) / 8) + 2 * (col % 8)",
        ],
        prediction: None,
    },
    Exercise {
        id: "06.4",
        step: 6,
        targets: Targets::Ampere,
        kind: Kind::FindTheBug,
        title: "Where the 16-byte pieces go",
        name: "where_the_pieces_go",
        intro: "Step 06's sm80 twin with one planted bug in where its threads write the staged tile into C (the `store` part): `exercise check 06.4` fails verification. The first bad element: which column of the block's tile is it in, and was it written at all (NaN) or written wrong?",
        edits: &[Edit {
            find: "const int global_row = m0 + row, col = n0 + 8 * chunk;",
            replace: "const int global_row = m0 + row, col = n0 + 8 * (chunk % 8);",
        }],
        answer: Some("A row of the tile is BN / 8 = 16 pieces of 16 bytes; piece `chunk` goes to column n0 + 8 · chunk. With chunk % 8 the second box's pieces (columns 64–127) were written over the first box's columns, and columns 64–127 of every block stayed NaN. The shared-memory address (chunk / 8, chunk % 8) was right: only the global column was wrong."),
        hints: &[
            "The bad elements are NaN: some columns of C are never written. Which ones, modulo 128?",
            "Each row of the tile leaves as BN / 8 = 16 pieces: which global column does piece `chunk` start at?",
            "col = n0 + 8 * chunk: the box is for the staging tile's address, not for C.",
        ],
        prediction: None,
    },
];
