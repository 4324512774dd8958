//! The exercises of step 07 (multicast); the harness gathers them in `shared/run/exercise.rs`.
//! Each is a few exact edits of the step's kernel: `exercise start NN.K` writes the starter they make
//! into `exercises/` (proven by `tests/exercises.rs`).

use crate::run::edit::Edit;
#[allow(unused_imports)]
use crate::run::exercise::{Exercise, Kind, Prediction};
use crate::run::registry::Targets;

pub const EXERCISES: &[Exercise] = &[
    Exercise {
        id: "07.1",
        step: 7,
        targets: Targets::Hopper,
        kind: Kind::FindTheBug,
        title: "The cluster hangs",
        name: "multicast_mask",
        intro: "Step 07's Hopper kernel with one planted bug in how B is shared: `exercise check 07.1` never sees the kernel finish, and reports it as hung (exit code 3) after GEMM_LADDER_HANG_SECONDS. Count the bytes that reach each block's `full` barrier per stage against the bytes it expects.",
        edits: &[
            Edit {
                find: "n0 + rank * B_SLICE_ROWS, CLUSTER_MASK);",
                replace: "n0 + rank * B_SLICE_ROWS, 1u << rank);",
            },
        ],
        answer: Some("Each block loads half of the B tile and must multicast it to every block of the cluster: CLUSTER_MASK = 0b11. With the mask 1 << rank a block's slice landed in its own shared memory only, so its `full` barrier received A (16 KiB) + its own half of B (8 KiB) = 24 KiB of the 32 KiB announced, and the phase never completed."),
        hints: &[
            "It hangs at every shape, on the first K tile: some block's `full` barrier never completes its phase. Compare the bytes it is told to expect with the bytes that reach it.",
            "full[stage] expects STAGE_BYTES: the A tile (16 KiB) and the whole B tile (16 KiB). Each block loads only half of B (8 KiB). Into whose shared memory does that half go?",
            "The mask is 1 << rank: the slice lands in this block only, 24 KiB of the 32 expected. Multicast to every block of the cluster: CLUSTER_MASK.",
        ],
        prediction: None,
    },
    Exercise {
        id: "07.2",
        step: 7,
        targets: Targets::Hopper,
        kind: Kind::FillTheGap,
        title: "Which slice of B?",
        name: "which_slice_of_b",
        intro: "Step 07's Hopper kernel without the two numbers that say which slice of B this block loads for the cluster and where in every block's stage it lands (the `tma_load` part). Until you write them, `exercise check 07.2` stops at NVRTC's errors on the `____` lines.",
        edits: &[
            Edit {
                find: concat!(
                    "tma_load_2d_multicast(b_tile(stage) + rank * B_SLICE_BYTES, &b_map, &full[stage], t * BK,\n",
                    "                              n0 + rank * B_SLICE_ROWS, CLUSTER_MASK);",
                ),
                replace: concat!(
                    "// TODO(exercise 07.2): which rows of B this block loads for the whole cluster (the box of b_map\n",
                    "        // is B_SLICE_ROWS rows × 64 bf16), and where in the B tile of every block they land.\n",
                    "        tma_load_2d_multicast(b_tile(stage) + ____, &b_map, &full[stage], t * BK,\n",
                    "                              n0 + ____, CLUSTER_MASK);",
                ),
            },
        ],
        answer: Some("Block `rank` of the cluster loads rows n0 + rank·B_SLICE_ROWS .. of B (B_SLICE_ROWS = 64, the box of b_map) and writes them rank·B_SLICE_BYTES into the B tile of every block, so that the slices of the two blocks tile the 128 rows exactly once."),
        hints: &[
            "The two `____` are compile errors until you write them. The blocks of a cluster share n0, and together must load all BN = 128 rows of the B tile, each half exactly once, into both blocks.",
            "rank (cluster_ctarank) is 0 or 1; b_map's box is B_SLICE_ROWS = 64 rows of 64 bf16; a row of the tile takes 128 bytes of shared memory (B_SLICE_BYTES a slice).",
            "b_tile(stage) + rank * B_SLICE_BYTES, and rows n0 + rank * B_SLICE_ROWS.",
        ],
        prediction: None,
    },
    Exercise {
        id: "07.3",
        step: 7,
        targets: Targets::Ampere,
        kind: Kind::PredictThenMeasure,
        title: "The ring, switched off",
        name: "ring_switched_off",
        intro: "Step 07's sm80 twin waiting for tile t + 1's copies as soon as it has issued them, before it multiplies tile t: the two-stage ring still holds two tiles, but nothing is in flight while the tensor cores work. One block of eight warps runs per SM, so no other block fills the wait. Before `exercise check 07.3`, predict its time as a multiple of step 07's own. The check prints the measured ratio.",
        edits: &[Edit {
            find: "        if (t + STAGES - 1 < k_tiles) load_stage(t + STAGES - 1);\n        cp_async_commit();\n",
            replace: concat!(
                "        if (t + STAGES - 1 < k_tiles) load_stage(t + STAGES - 1);\n",
                "        cp_async_commit();\n",
                "        cp_async_wait<0>();  // exercise 07.3: tile t + 1 lands before tile t is multiplied\n",
            ),
        }],
        answer: None,
        hints: &[
            "Per K tile, an SM now does one after the other what the ring did at once: fetch 48 KiB, then multiply 256 × 128 × 64.",
            "One K tile of the block is 2·256·128·64 = 4.2 Mflop; the chapter's table gives the twin's rate, hence the MMA time per tile. The copies from L2 take hundreds of clocks before the first bytes land, and 48 KiB at a share of L2's bandwidth some more.",
            "Expect the copy time to be added to every tile instead of hidden: clearly slower than the step, less than twice its time unless the copies take as long as the MMAs.",
        ],
        prediction: Some(Prediction {
            question: "How many times step 07's own time (sm80 twin, the ring working) does the kernel that waits for every copy take at 4096³ (`exercise check 07.3 --size 4096`)?",
            unit: "× the step's time",
            chapter_answer: "Above 1×, by the share of each K tile's time the copies took while the ring hid them: per K tile the kernel now waits for 48 KiB from L2 (hundreds of clocks before the first bytes land, then the bytes at the SM's share of L2 bandwidth) and only then multiplies 2·256·128·64 = 4.2 Mflop. With one block per SM nothing else runs during the wait, so the copy time adds to the MMA time rather than overlapping it: below 2× as long as a tile's copies are faster than its MMAs.",
        }),
    },
    Exercise {
        id: "07.4",
        step: 7,
        targets: Targets::Ampere,
        kind: Kind::FillTheGap,
        title: "Which rows of the tall tile",
        name: "rows_of_the_tall_tile",
        intro: "Step 07's sm80 twin without the first row of A each warp reads (the `addresses` part). The block is twice as tall as step 06's, 256 rows, computed by eight warps as 4 × 2 of 64×64. Until you write it, `exercise check 07.4` stops at NVRTC's error on the `____` line.",
        edits: &[Edit {
            find: "const int a_row = warp_row * WM + (lane & 15);",
            replace: concat!(
                "// TODO(exercise 07.4): the tile row this lane names for its warp's first 16-row tile of A.\n",
                "    const int a_row = ____ + (lane & 15);",
            ),
        }],
        answer: Some("warp_row · WM: warps are numbered along N first (warp_row = warp / 2), and each of the four warp rows computes 64 rows of the 256. Every warp of a row reads the same 64 rows of A; the two warps of a column read the same 64 rows of B. The B tile is loaded once for all four warp rows: the sharing this step is about."),
        hints: &[
            "Four warp rows of 64 rows each cover the tile's 256 rows.",
            "warp_row = warp / WARPS_N picks which 64 rows of C, and so of A, this warp computes.",
            "warp_row * WM",
        ],
        prediction: None,
    },
];
