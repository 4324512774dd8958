//! The exercises of step 10 (persistent); the harness gathers them in `shared/run/exercise.rs`.
//! Each is a few exact edits of the step's kernel: `exercise start NN.K` writes the starter they make
//! into `exercises/` (proven by `tests/exercises.rs`).

use crate::run::edit::Edit;
#[allow(unused_imports)]
use crate::run::exercise::{Exercise, Kind, Prediction};
use crate::run::registry::Targets;

pub const EXERCISES: &[Exercise] = &[
    Exercise {
        id: "10.1",
        step: 10,
        targets: Targets::Hopper,
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
        answer: Some("Inside a group the index runs down the rows first: tile_m = first_m + within % rows, tile_n = within / rows. Swapped, the clusters computed the transposed set of tiles: on a square grid of tiles that is every tile all the same (in another order), but at 257 × 255 (3 × 1 tiles of 128 × 256) the second and third clusters computed tiles (0, 1) and (0, 2), past N, and rows 128.. of C were never written."),
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
        targets: Targets::Hopper,
        kind: Kind::PredictThenMeasure,
        title: "Row-major order",
        name: "row_major_order",
        intro: "Step 10's Hopper kernel with the tiles in plain row-major order, GROUP_M = 1 instead of the 16 hopper.rs sets. Before `exercise check 10.2`, count the slabs of A and B one turn of the clusters needs in each order, and predict the time as a multiple of step 10's own. The check prints the measured ratio.",
        edits: &[
            Edit {
                find: concat!(
                    "#error \"GROUP_M (tile-rows per group of the tile order) is set by step.rs\"\n",
                    "#endif\n",
                ),
                replace: concat!(
                    "#error \"GROUP_M (tile-rows per group of the tile order) is set by step.rs\"\n",
                    "#endif\n",
                    "// exercise 10.2: row-major tile order, GROUP_M = 1 instead of the 16 that step.rs sets.\n",
                    "#undef GROUP_M\n",
                    "#define GROUP_M 1\n",
                ),
            },
        ],
        answer: None,
        hints: &[
            "With GROUP_M = 1 the numbers run along whole tile-rows: at 4096³ (32 × 16 tiles of 128 × 256, 128 clusters) one turn covers eight whole rows of tiles.",
            "Count the slabs one turn needs in each order (of A: 128 rows × all of K, 1 MiB at K = 4096; of B: 256 rows, 2 MiB), and compare their bytes with the L2.",
            "Grouped: 16 slabs of A and 8 of B, 32 MiB; row-major: 8 of A and all 16 of B, 40 MiB; both inside L2, and what the SMs ask of L2 does not depend on the order. Predict a ratio close to 1.",
        ],
        prediction: Some(Prediction {
            question: "How many times step 10's own time (GROUP_M = 16) does the row-major tile order (GROUP_M = 1) take at 4096³ (`exercise check 10.2 --size 4096`)?",
            unit: "× the step's time",
            chapter_answer: "About 1×. At 4096³ there are 32 × 16 tiles of 128 × 256 and 128 clusters: a grouped turn (tiles 0–127) needs 16 slabs of A (1 MiB each) and 8 of B (2 MiB each), 32 MiB; a row-major turn eight whole tile-rows, 8 slabs of A and all 16 of B, 40 MiB. Both fit in the H200's 60 MiB of L2, and the traffic from L2 to the SMs (384 MiB a turn) is the same in both orders. At 8192³ a grouped turn needs 68 MiB, a row-major one 138: about 2.0 bytes of DRAM per thousand flops, still a fraction of what DRAM delivers. Little difference at either size.",
        }),
    },
    Exercise {
        id: "10.3",
        step: 10,
        targets: Targets::Ampere,
        kind: Kind::FindTheBug,
        title: "Square shapes only (sm80)",
        name: "tile_order_sm80",
        intro: "Step 10's sm80 twin with one planted bug in its tile schedule, the Hopper twin's schedule code. `exercise check 10.3` passes at some shapes and fails at others: compare the shapes it fails at with those it passes (the twin's tile is 256 × 128), then read the `schedule` part.",
        edits: &[Edit {
            find: concat!("tile_m = first_m + within % rows;\n", "        tile_n = within / rows;"),
            replace: concat!("tile_n = first_m + within % rows;\n", "        tile_m = within / rows;"),
        }],
        answer: Some("Inside a group the index runs down the rows first: tile_m = first_m + within % rows, tile_n = within / rows. Swapped, the blocks computed the transposed set of tiles: with 256 × 128 tiles, 257 × 255 is 2 × 2 tiles and passes, but 97 × 131 (1 × 2 tiles) and a square shape (N/128 columns of tiles, twice M/256) leave tiles of C unwritten."),
        hints: &[
            "Count the tiles down M and along N at each shape the check uses, with the twin's 256 × 128 tile. Which shapes give a square grid of tiles?",
            "TileOrder::locate turns a tile number into (tile row, tile column). Inside a group the numbers run down the rows first: which of the two changes fastest?",
            "tile_m = first_m + within % rows; tile_n = within / rows. Swapped, the blocks compute the transposed set of tiles, the same set only on a square grid of tiles.",
        ],
        prediction: None,
    },
    Exercise {
        id: "10.4",
        step: 10,
        targets: Targets::Ampere,
        kind: Kind::PredictThenMeasure,
        title: "Row-major order (sm80)",
        name: "row_major_order_sm80",
        intro: "Step 10's sm80 twin with the tiles in plain row-major order, GROUP_M = 1 instead of the 8 step.rs sets (the Hopper twin's schedule code, the twin's 256 × 128 tiles). Before `exercise check 10.4`, count the slabs of A and B one turn of the blocks needs in each order (at most one block a multiprocessor; the plan line the check prints says how many), compare their bytes with your GPU's L2, and predict the time as a multiple of step 10's own. The check prints the measured ratio.",
        edits: &[Edit {
            find: concat!(
                "#error \"GROUP_M (tile rows per group of the tile order) is set by step.rs\"\n",
                "#endif\n",
            ),
            replace: concat!(
                "#error \"GROUP_M (tile rows per group of the tile order) is set by step.rs\"\n",
                "#endif\n",
                "// exercise 10.4: row-major tile order, GROUP_M = 1 instead of the 8 that step.rs sets.\n",
                "#undef GROUP_M\n",
                "#define GROUP_M 1\n",
            ),
        }],
        answer: None,
        hints: &[
            "With GROUP_M = 1 the numbers run along whole tile rows: at 4096³ there are 16 × 32 tiles of 256 × 128, and one turn of the blocks is as many tiles as there are blocks (the plan line `step 10 (sm80) at …` says how many: 128 on an H200, four turns of 128 tiles).",
            "Count the slabs one turn needs in each order (of A: 256 rows × all of K, 2 MiB at K = 4096; of B: 128 rows, 1 MiB), and compare their bytes with the L2 (60 MiB on an H200, 50 on an H100, 40 on an A100).",
            "On an H200 (128 blocks), grouped: 8 slabs of A and 16 of B, 32 MiB; row-major: 4 of A and all 32 of B, 40 MiB; both inside L2, and what the SMs ask of L2 does not depend on the order. Predict a ratio close to 1 there; a GPU whose L2 holds one turn's slabs in one order only is where the order shows.",
        ],
        prediction: Some(Prediction {
            question: "How many times step 10's own time (GROUP_M = 8) does the row-major tile order (GROUP_M = 1) take at 4096³ (`exercise check 10.4 --size 4096`)?",
            unit: "× the step's time",
            chapter_answer: "About 1× on an H200. At 4096³ there are 16 × 32 tiles of 256 × 128, and the step runs them as four turns of 128 blocks: a grouped turn (tiles 0–127) needs 8 slabs of A (2 MiB each) and 16 of B (1 MiB each), 32 MiB; a row-major turn four whole tile rows, 4 slabs of A and all 32 of B, 40 MiB. Both fit in the H200's 60 MiB of L2, and the traffic from L2 to the SMs is the same in both orders: little difference, the Hopper twin's 10.2 reasoning with the twin's tile. Where a row-major turn's slabs are about the L2's size and a grouped turn's are not (an A100 has 40 MiB of L2), the order may show.",
        }),
    },
];
