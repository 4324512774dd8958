//! The exercises of step 10 (persistent); the harness gathers them in `shared/run/exercise.rs`.
//! Each is a few exact edits of the step's kernel: `exercise start NN.K` writes the starter they make
//! into `exercises/` (proven by `tests/exercises.rs`).

use crate::run::edit::Edit;
#[allow(unused_imports)]
use crate::run::exercise::{Exercise, Kind, Prediction};

pub const EXERCISES: &[Exercise] = &[
    Exercise {
        id: "10.1",
        step: 10,
        kind: Kind::FindTheBug,
        title: "Square shapes only",
        name: "tile_order",
        intro: "Step 10's Hopper kernel with one planted bug in its tile schedule. `exercise check 10.1` passes at some shapes and fails at others: compare the shapes it fails at with those it passes, then read the `schedule` part.",
        edits: &[
            Edit {
                find: concat!(
                    "tile_m = first_m + within % rows;\n",
                    "        tile_n = within / rows;",
                ),
                replace: concat!(
                    "tile_n = first_m + within % rows;\n",
                    "        tile_m = within / rows;",
                ),
            },
        ],
        answer: Some("Inside a group the index runs down the rows first: tile_m = first_m + within % rows, tile_n = within / rows. Swapped, the clusters computed the transposed set of tiles: on a square grid of tiles that is every tile all the same (in another order), but at 257 × 255 (2 × 1 tiles) the second cluster computed tile (0, 1), past N, and rows 256.. of C were never written."),
        hints: &[
            "Compare the shapes that fail with those that pass. At a square shape, how many tiles are there down M and along N?",
            "TileOrder::locate turns a tile number into (tile row, tile column). Inside a group the numbers run down the rows first: which of the two changes fastest?",
            "tile_m = first_m + within % rows; tile_n = within / rows. Swapped, the clusters compute the transposed set of tiles, which on a square grid is the same set in another order.",
        ],
        prediction: None,
    },
    Exercise {
        id: "10.2",
        step: 10,
        kind: Kind::PredictThenMeasure,
        title: "Row-major order",
        name: "row_major_order",
        intro: "Step 10's Hopper kernel with the tiles in plain row-major order, GROUP_M = 1 instead of the 8 step.rs sets. Before `exercise check 10.2`, count the slabs of A and B one turn of the clusters needs in each order, and predict the time as a multiple of step 10's own. The check prints the measured ratio.",
        edits: &[
            Edit {
                find: concat!(
                    "#error \"GROUP_M (tile-rows per group of the tile order) is set by step.rs\"\n",
                    "#endif\n",
                ),
                replace: concat!(
                    "#error \"GROUP_M (tile-rows per group of the tile order) is set by step.rs\"\n",
                    "#endif\n",
                    "// exercise 10.2: row-major tile order, GROUP_M = 1 instead of the 8 that step.rs sets.\n",
                    "#undef GROUP_M\n",
                    "#define GROUP_M 1\n",
                ),
            },
        ],
        answer: None,
        hints: &[
            "With GROUP_M = 1 the numbers run along whole tile-rows: at 4096³ (16 × 16 tiles, 66 clusters) one turn covers four whole rows of tiles and two tiles of a fifth.",
            "Count the slabs (256 rows × all of K, 2 MiB at K = 4096) of A and of B one turn needs in each order, and compare their bytes with the L2.",
            "17 against 21 slabs, 34 against 42 MiB a turn, both inside L2; what the SMs ask of L2 does not depend on the order. Predict a ratio close to 1.",
        ],
        prediction: Some(Prediction {
            question: "How many times step 10's own time (GROUP_M = 8) does the row-major tile order (GROUP_M = 1) take at 4096³ (`exercise check 10.2 --size 4096`)?",
            unit: "× the step's time",
            chapter_answer: "About 1×. At 4096³ there are 16 × 16 tiles and 66 clusters: a grouped turn (tiles 0–65) needs 8 slabs of A and 9 of B, 17 in all; a row-major turn four whole tile-rows and two tiles of a fifth, 5 of A and all 16 of B, 21. A slab is 256 rows × 4096 × 2 bytes = 2 MiB: 34 against 42 MiB a turn, both within the H200's 60 MiB of L2, and the traffic from L2 to the SMs (264 MiB a turn) is the same in both orders. At 8192³ a grouped turn needs 17 slabs of 4 MiB, a row-major one 35: about 2.1 bytes of DRAM per thousand flops, still a fraction of what DRAM delivers. Little difference at either size.",
        }),
    },
];
