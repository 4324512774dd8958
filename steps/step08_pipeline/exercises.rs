//! The exercises of step 08 (pipeline); the harness gathers them in `shared/run/exercise.rs`.
//! Each is a few exact edits of the step's kernel: `exercise start NN.K` writes the starter they make
//! into `exercises/` (proven by `tests/exercises.rs`).

use crate::run::edit::Edit;
#[allow(unused_imports)]
use crate::run::exercise::{Exercise, Kind, Prediction};
use crate::run::registry::Targets;

pub const EXERCISES: &[Exercise] = &[
    Exercise {
        id: "08.1",
        step: 8,
        targets: Targets::Hopper,
        kind: Kind::FindTheBug,
        title: "The first pass",
        name: "the_first_pass",
        intro: "Step 08's Hopper kernel with one planted bug in its ring: `exercise check 08.1` never sees the kernel finish, and reports it as hung (exit code 3) after GEMM_LADDER_HANG_SECONDS. Work out which wait is the first that can never return, and who was supposed to let it through.",
        edits: &[
            Edit {
                find: "mbarrier_wait(&empty[stage], parity ^ 1);",
                replace: "mbarrier_wait(&empty[stage], parity);",
            },
        ],
        answer: Some("Before it fills stage s for round n the producer waits for phase n − 1 of empty[s]. For n = 0 that is the phase before the first, parity 1, which a fresh barrier reports as complete: parity ^ 1. Waiting with `parity` asked for phase 0, which only the consumers' releases complete, and they wait on `full` for a tile the producer never loads."),
        hints: &[
            "It hangs at every shape, before a single tile is computed. Which thread waits first, and on which barrier?",
            "Before filling stage s for round n the producer waits for phase n − 1 of empty[s]. For n = 0 that is the phase before the first, parity 1, which a fresh mbarrier reports as complete.",
            "mbarrier_wait(&empty[stage], parity ^ 1). The planted producer waits with `parity`, for phase 0, which only the consumers' releases complete, and they are waiting for a tile it never loads.",
        ],
        prediction: None,
    },
    Exercise {
        id: "08.2",
        step: 8,
        targets: Targets::Hopper,
        kind: Kind::FillTheGap,
        title: "Release the previous stage",
        name: "release_the_previous_stage",
        intro: "Step 08's Hopper kernel without the consumers' release inside the main loop (the `consumer` part). Until you write it, `exercise check 08.2` stops at NVRTC's error on the `____` line. Which stage has this consumer finished reading once `wgmma_wait<1>()` returns, and is there one at t = 0?",
        edits: &[
            Edit {
                find: "if (t > 0) release((t - 1) % STAGES);",
                replace: concat!(
                    "// TODO(exercise 08.2): give a stage back to the producer (release(stage) arrives on its\n",
                    "            // `empty` barrier in every block of the cluster). Which one may go now?\n",
                    "            ____;",
                ),
            },
        ],
        answer: Some("wgmma_wait<1>() leaves at most the group just issued (K tile t) running, so the group of K tile t − 1 has finished reading its stage, (t − 1) % STAGES: release it while the tensor cores work on t. At t = 0 there is no previous tile; the last stage is released after the loop, after wgmma_wait<0>."),
        hints: &[
            "The `____` is a compile error until you write it. A stage never released stops the producer once the ring has gone round: with more K tiles than stages the check reports a hang.",
            "After wgmma_wait<1>() at most the group just issued (K tile t) is running: the group of K tile t − 1 has finished reading its stage. Is there a previous tile at t = 0?",
            "if (t > 0) release((t - 1) % STAGES); the last stage is released after the loop, after wgmma_wait<0>().",
        ],
        prediction: None,
    },
    Exercise {
        id: "08.3",
        step: 8,
        targets: Targets::Hopper,
        kind: Kind::PredictThenMeasure,
        title: "Two stages",
        name: "two_stages",
        intro: "Step 08's Hopper kernel with a ring of two stages instead of the three step.rs sets (the shared memory step.rs asks for still has room for three; the kernel uses two). Before `exercise check 08.3`, predict its time as a multiple of step 08's own: how far ahead of the MMAs can the producer now run, and how long does one K tile of MMAs take an SM? The check prints the measured ratio.",
        edits: &[
            Edit {
                find: concat!(
                    "#error \"STAGES (depth of the ring of shared-memory tiles) is set by step.rs\"\n",
                    "#endif\n",
                ),
                replace: concat!(
                    "#error \"STAGES (depth of the ring of shared-memory tiles) is set by step.rs\"\n",
                    "#endif\n",
                    "// exercise 08.3: two stages instead of the STAGES = 3 that step.rs sets.\n",
                    "#undef STAGES\n",
                    "#define STAGES 2\n",
                    "\n",
                ),
            },
        ],
        answer: None,
        hints: &[
            "With S stages the producer can run S − 1 K tiles ahead of the tile the consumers are computing: it refills a stage only when the consumers release it, one tile behind.",
            "One K tile of a block is 2·128·256·64 = 4.2 Mflop: 1024 cycles of an SM's tensor cores (4096 flops a cycle), 0.56 µs at the datasheet's 1.83 GHz, about 0.66 µs at the 1.5–1.6 GHz the timed loops run at under the power limit. A TMA copy takes hundreds of clocks before its first bytes land, and a 48 KiB stage longer.",
            "Two stages give a copy about one K tile of MMA time to land, three about two. Expect the tensor cores to wait part of every K tile: slower than the step, by a fraction rather than by half.",
        ],
        prediction: Some(Prediction {
            question: "How many times step 08's own time (three stages) does the kernel with a two-stage ring take at 4096³ (`exercise check 08.3 --size 4096`)?",
            unit: "× the step's time",
            chapter_answer: "Above 1×, by a modest fraction. The producer refills a stage when the consumers release it, one K tile behind (wgmma_wait<1>), so with two stages the copy of K tile t + 1 starts as the MMAs of tile t start and has one tile of MMA time to land: 2·128·256·64 = 4.2 Mflop, 1024 cycles of an SM's tensor cores: 0.56 µs at the datasheet's 1.83 GHz, about 0.66 µs at the clock the timed loop runs at (the step's timing line gives it). A TMA copy of a 48 KiB stage from L2 takes hundreds of clocks before its first bytes land, so some of that lead is used up every tile and the tensor cores idle for the rest; three stages give about two tiles (1.1 to 1.3 µs) of lead.",
        }),
    },
    Exercise {
        id: "08.4",
        step: 8,
        targets: Targets::Ampere,
        kind: Kind::FindTheBug,
        title: "One tile too far",
        name: "one_tile_too_far",
        intro: "Step 08's sm80 twin with one planted bug in its ring: `exercise check 08.4` fails at every shape with more than one K tile. No mbarrier here: the ring is counted in commit groups (`cp_async_wait<STAGES - 2>`) and freed by the block barrier. Which K tile should the copies issued in iteration t fetch, and into which slot does it land?",
        edits: &[Edit {
            find: "        if (t + STAGES - 1 < k_tiles) load_stage(t + STAGES - 1);\n",
            replace: "        if (t + STAGES < k_tiles) load_stage(t + STAGES);\n",
        }],
        answer: Some("The prologue puts tiles 0 .. STAGES − 2 in flight, so iteration t refills with tile t + STAGES − 1, into slot (t − 1) % STAGES: the slot of tile t − 1, which every warp finished reading before the barrier of iteration t − 1 (its last slice's fragments were in registers by then). Tile t + STAGES lands in slot t % STAGES, the one being multiplied in this iteration, and tile t + STAGES − 1 is never fetched."),
        hints: &[
            "The prologue commits STAGES − 1 groups: tiles 0 .. STAGES − 2. When iteration t starts, past the barrier of iteration t − 1, which tiles are in the ring, and which slot is free?",
            "Tile u goes to slot u % STAGES. The slot free when iteration t starts held tile t − 1: which tile number maps to it?",
            "if (t + STAGES - 1 < k_tiles) load_stage(t + STAGES - 1); tile t + STAGES overwrites tile t, the one being read.",
        ],
        prediction: None,
    },
    Exercise {
        id: "08.5",
        step: 8,
        targets: Targets::Ampere,
        kind: Kind::FillTheGap,
        title: "The slot to refill",
        name: "slot_to_refill",
        intro: "Step 08's sm80 twin without the slot a K tile is copied into (the `ring` part). Until you write it, `exercise check 08.5` stops at NVRTC's error on the `____` line. The MMAs read tile t from slot t % STAGES; the copies must put it there, and must not overwrite a slot some warp still reads.",
        edits: &[Edit {
            find: "    auto load_stage = [&](int t) {\n        const u32 a_tile = ring + (t % STAGES) * STAGE_BYTES;\n",
            replace: concat!(
                "    auto load_stage = [&](int t) {\n",
                "        // TODO(exercise 08.5): the slot of the ring that K tile t is copied into.\n",
                "        const u32 a_tile = ring + (____) * STAGE_BYTES;\n",
            ),
        }],
        answer: Some("Slot t % STAGES, the slot the MMAs read tile t from. Iteration t copies tile t + STAGES − 1 into slot (t − 1) % STAGES, that of tile t − 1; the copy is issued after the barrier of iteration t − 1, which every warp reaches only once it has read all of tile t − 1's fragments into registers. The block barrier is the ring's empty barrier."),
        hints: &[
            "The `____` is a compile error until you write it. The MMAs of iteration t read `ring + (t % STAGES) * STAGE_BYTES`.",
            "The ring has STAGES slots and tile numbers grow without end; the same slot comes round every STAGES tiles.",
            "t % STAGES. It is free to overwrite after the barrier because every warp has left the tile that used it before.",
        ],
        prediction: None,
    },
    Exercise {
        id: "08.6",
        step: 8,
        targets: Targets::Ampere,
        kind: Kind::PredictThenMeasure,
        title: "Two stages (sm80)",
        name: "two_stages_sm80",
        intro: "Step 08's sm80 twin with a ring of two stages. Where a block may have 163 KiB or more (A100, A30, Orin, H100, H200) the step's launch takes a three-stage compilation, of the step's file or of your edit of it alike; this edit sets two stages in the file, whatever the GPU holds (step.rs still allocates three there). Before `exercise check 08.6`, predict its time as a multiple of step 08's own on your GPU: how many K tiles of copies are in flight while the MMAs of one run, and how long do those MMAs take? The check prints the measured ratio.",
        edits: &[Edit {
            find: concat!("#error \"STAGES (K tiles in the ring) is set by step.rs\"\n", "#endif\n"),
            replace: concat!(
                "#error \"STAGES (K tiles in the ring) is set by step.rs\"\n",
                "#endif\n",
                "// exercise 08.6: two stages, whatever the GPU holds.\n",
                "#undef STAGES\n",
                "#define STAGES 2\n",
            ),
        }],
        answer: None,
        hints: &[
            "With S stages the copies of K tile t + S − 1 are issued as iteration t starts, and must have landed by the barrier before the last slice of iteration t + S − 2: 4(S − 1) − 1 slices of MMAs to land in.",
            "One K tile of a block is 2·256·128·64 = 4.2 Mflop; the chapter's table gives the twin's rate, hence the MMA time per tile. A cp.async from L2 takes hundreds of clocks before its first bytes land, and 48 KiB at the SM's share of L2's bandwidth some more.",
            "On a 99 KiB part (RTX 30/40/50, L4) the step itself has two stages: expect exactly 1×. On a GPU that holds three, the copies get three slices of lead instead of seven: slower if three slices of MMAs are not enough time for a tile's copies to land.",
        ],
        prediction: Some(Prediction {
            question: "How many times step 08's own time does the two-stage ring take at 4096³ (`exercise check 08.6 --size 4096`)?",
            unit: "× the step's time",
            chapter_answer: "Exactly 1× on a 99 KiB part, whose step has two stages too. Where the step has three (A100, H100, H200) above 1×, by the part of each K tile's copies the third stage hid: with two stages the copies of tile t + 1 are issued as iteration t starts and must have landed by the barrier before its last slice, three slices of MMA time (3.1 Mflop a block), against seven slices with three stages. Three slices are about a thousand clocks of MMAs on an H100 or H200 (1.05 Mflop a slice a block), not far above what a tile's 48 KiB take to come from L2 while every SM copies at once: expect a visible fraction above 1× on the H100 and H200 too, more on a GPU whose L2 is farther in clocks.",
        }),
    },
];
