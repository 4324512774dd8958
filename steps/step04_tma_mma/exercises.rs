//! The exercises of step 04 (tma_mma); the harness gathers them in `shared/run/exercise.rs`.
//! Each is a few exact edits of the step's kernel: `exercise start NN.K` writes the starter they make
//! into `exercises/` (proven by `tests/exercises.rs`).

use crate::run::edit::Edit;
#[allow(unused_imports)]
use crate::run::exercise::{Exercise, Kind, Prediction};
use crate::run::registry::Targets;

pub const EXERCISES: &[Exercise] = &[
    Exercise {
        id: "04.1",
        step: 4,
        targets: Targets::Hopper,
        kind: Kind::FindTheBug,
        title: "The kernel hangs",
        name: "the_kernel_hangs",
        intro: "Step 04's Hopper kernel with one planted bug around its mbarrier: `exercise check 04.1` never sees the kernel finish, and reports it as hung (exit code 3) after GEMM_LADDER_HANG_SECONDS (10 s by default for `exercise`). Work out which wait can never return, and why.",
        edits: &[
            Edit {
                find: "mbarrier_init(loaded, 1);",
                replace: "mbarrier_init(loaded, 2);",
            },
        ],
        answer: Some("A phase completes when its pending arrivals reach zero and its expected bytes have arrived. Only thread 0 arrives (mbarrier_arrive_expect_bytes), once per tile: initialised with a count of 2, phase 0 waits for a second arrival forever, and so does every thread in mbarrier_wait."),
        hints: &[
            "A hang with one mbarrier: some wait is for a phase that never completes. What completes a phase?",
            "A phase completes when its pending arrivals reach zero and its announced bytes have arrived. How many threads arrive per tile?",
            "Only thread 0 arrives, once per tile (mbarrier_arrive_expect_bytes): the barrier must be initialised with a count of 1.",
        ],
        prediction: None,
    },
    Exercise {
        id: "04.2",
        step: 4,
        targets: Targets::Hopper,
        kind: Kind::FillTheGap,
        title: "Expect the bytes",
        name: "expect_the_bytes",
        intro: "Step 04's Hopper kernel without the byte count its mbarrier expects per K tile (the `tma_load` part). Until you write it, `exercise check 04.2` stops at NVRTC's error on the `____` line. A count that is too large hangs (reported as hung); think about boxes that hang over the edge.",
        edits: &[
            Edit {
                find: "mbarrier_arrive_expect_bytes(loaded, A_TILE_BYTES + B_TILE_BYTES);",
                replace: concat!(
                    "// TODO(exercise 04.2): arrive, announcing how many bytes the two copies below deliver.\n",
                    "            mbarrier_arrive_expect_bytes(loaded, ____);",
                ),
            },
        ],
        answer: Some("Both boxes, whole: BM·BK and BN·BK bf16. The TMA counts the zeros it writes past M, N or K as bytes too, so the count is the same for every tile, edge or not."),
        hints: &[
            "The barrier's phase completes once the announced bytes have arrived: announce exactly what the two tma_load_3d calls deliver.",
            "The constants at the top of the file already count the bytes of one A box and one B box.",
            "A_TILE_BYTES + B_TILE_BYTES: the TMA counts the zeros it writes past the edges too, so edge tiles are no different.",
        ],
        prediction: None,
    },
];
