//! The exercises of step 09 (epilogue_double_buffer); the harness gathers them in `shared/run/exercise.rs`.
//! Each is a few exact edits of the step's kernel: `exercise start NN.K` writes the starter they make
//! into `exercises/` (proven by `tests/exercises.rs`).

use crate::run::edit::Edit;
#[allow(unused_imports)]
use crate::run::exercise::{Exercise, Kind, Prediction};
use crate::run::registry::Targets;

pub const EXERCISES: &[Exercise] = &[
    Exercise {
        id: "09.1",
        step: 9,
        targets: Targets::Hopper,
        kind: Kind::FillTheGap,
        title: "Which buffer?",
        name: "which_buffer",
        intro: "Step 09's Hopper kernel without the choice of staging buffer for chunk c (the `chunks` part). Until you write it, `exercise check 09.1` stops at NVRTC's error on the `____` line. The wait before a chunk, tma_store_wait_read<C_BUFFERS - 1>(), only protects the right choice.",
        edits: &[
            Edit {
                find: "const int buffer = c % C_BUFFERS;",
                replace: concat!(
                    "// TODO(exercise 09.1): which of this consumer's C_BUFFERS staging buffers chunk c uses.\n",
                    "                const int buffer = ____;",
                ),
            },
        ],
        answer: Some("Chunk c goes through buffer c % C_BUFFERS: chunks alternate between the two buffers, so the store that last read buffer c % 2 is chunk c − 2's, older than the newest group, and tma_store_wait_read<1>() (at most one group still reading) guarantees it is done."),
        hints: &[
            "The `____` is a compile error until you write it. Each consumer has C_BUFFERS = 2 staging buffers of one 64-column chunk (8 KiB) and stores chunks c = 0 .. 3.",
            "Before packing chunk c (c ≥ 2) the storing thread waits until at most one store group, the newest (chunk c − 1), is still reading. Which buffer must chunk c use so that this wait protects it?",
            "const int buffer = c % C_BUFFERS; chunk c − 2 used the same buffer, and its store is older than the newest group.",
        ],
        prediction: None,
    },
    Exercise {
        id: "09.2",
        step: 9,
        targets: Targets::Hopper,
        kind: Kind::PredictThenMeasure,
        title: "Three stages, double-buffered",
        name: "three_stages",
        intro: "Step 09's Hopper kernel with the double-buffered epilogue but only three stages of the ring, as in step 08 (step.rs still allocates four; the kernel uses three). Before `exercise check 09.2`, predict its time as a multiple of step 09's own: which half of the step do you take away, and how much of the step's gain over step 08 was it? The check prints the measured ratio.",
        edits: &[
            Edit {
                find: concat!(
                    "#error \"STAGES (depth of the ring of shared-memory tiles) is set by step.rs\"\n",
                    "#endif\n",
                ),
                replace: concat!(
                    "#error \"STAGES (depth of the ring of shared-memory tiles) is set by step.rs\"\n",
                    "#endif\n",
                    "// exercise 09.2: three stages instead of the STAGES = 4 that step.rs sets.\n",
                    "#undef STAGES\n",
                    "#define STAGES 3\n",
                    "\n",
                ),
            },
        ],
        answer: None,
        hints: &[
            "Step 09 does two things: a double-buffered epilogue, and a fourth stage of the ring, paid for with the staging it shrank (the chapter's shared-memory table). This kernel keeps the first and takes away the second.",
            "At 4096³ a block runs 64 K slices of main loop and one epilogue: the epilogue is a small part of its time; the ring's depth acts on the main loop.",
            "Compare with step 08 (three stages, whole-tile epilogue): expect a ratio above 1, a good part of the way to step 08's time over step 09's.",
        ],
        prediction: Some(Prediction {
            question: "How many times step 09's own time (four stages) does its kernel with three stages take at 4096³ (`exercise check 09.2 --size 4096`)?",
            unit: "× the step's time",
            chapter_answer: "Above 1×: most of what step 09 gained over step 08. Halving the staging (2 consumers × 2 buffers × 8 KiB = 32 KiB instead of 64) and the 18 KiB step 08 left unused pay for a fourth 48 KiB stage: 4 · 48 + 32 + 1 = 225 KiB of the 227 a block may have. A block at 4096³ runs 64 K slices of main loop and one epilogue, so the double buffer's direct gain can only be small, while the deeper ring helps the main loop, which is most of the time; taking the stage away gives back the larger share.",
        }),
    },
    Exercise {
        id: "09.3",
        step: 9,
        targets: Targets::Ampere,
        kind: Kind::FillTheGap,
        title: "Which chunk?",
        name: "which_chunk",
        intro: "Step 09's sm80 twin without the choice of staging chunk for chunk c = 2i + down of a warp's C (the `chunks` part). Until you write it, `exercise check 09.3` stops at NVRTC's error on the `____` line. Each warp has two private chunks and one `__syncwarp()` between packing a chunk and draining it; there is no block barrier in the epilogue.",
        edits: &[Edit {
            find: "const u32 chunk = staging + ((2 * i + down) % 2) * CHUNK_BYTES;",
            replace: concat!(
                "// TODO(exercise 09.3): which of this warp's two chunks chunk c = 2i + down uses.\n",
                "                const u32 chunk = staging + (____) * CHUNK_BYTES;",
            ),
        }],
        answer: Some("Chunk c goes through chunk (2i + down) % 2: the chunks alternate. A lane that packs chunk c has passed the __syncwarp after chunk c − 1's packing, which every lane reaches only after draining chunk c − 2, the last user of the same buffer; so one warp barrier per chunk protects both buffers, as tma_store_wait_read<1> does on Hopper."),
        hints: &[
            "The `____` is a compile error until you write it. A warp stores 8 chunks (i = 0..3, down = 0, 1) through two buffers of 8 rows × 64 columns.",
            "Between packing chunk c and draining it there is one __syncwarp. Which earlier chunk must have been drained by every lane before chunk c is packed, and what guarantees it?",
            "(2 * i + down) % 2: chunk c − 2 used the same buffer, and every lane drained it before the __syncwarp of chunk c − 1.",
        ],
        prediction: None,
    },
    Exercise {
        id: "09.4",
        step: 9,
        targets: Targets::Ampere,
        kind: Kind::PredictThenMeasure,
        title: "One stage fewer (sm80)",
        name: "one_stage_fewer_sm80",
        intro: "Step 09's sm80 twin with one stage fewer where its staging chunks sit beside the ring: two stages and the full 16 KiB of chunks, the ring step 09 would have if the chunks had cost a stage (step.rs still allocates three; the kernel uses two). On a 99 KiB part the step already has two stages with the chunks carved from the ring, and the edit leaves that alone. Before `exercise check 09.4`, predict its time as a multiple of step 09's own on your GPU: what did the third stage buy step 08's twin, and does the epilogue change that? The check prints the measured ratio.",
        edits: &[Edit {
            find: concat!(
                "#error \"STAGING_IN_RING (1: the epilogue's chunks are carved from the ring, on a 99 KiB part) is set by step.rs\"\n",
                "#endif\n",
            ),
            replace: concat!(
                "#error \"STAGING_IN_RING (1: the epilogue's chunks are carved from the ring, on a 99 KiB part) is set by step.rs\"\n",
                "#endif\n",
                "// exercise 09.4: one stage fewer where the chunks sit beside the ring (three stages there),\n",
                "// the chunks kept whole; a 99 KiB part's two stages, chunks in the ring, stay as they are.\n",
                "#if !STAGING_IN_RING\n",
                "#undef STAGES\n",
                "#define STAGES 2\n",
                "#endif\n",
            ),
        }],
        answer: None,
        hints: &[
            "Where a block may have 163 KiB or more, step 09's twin has step 08's three stages of 48 KiB and 16 KiB of chunks beside them (160 KiB). This kernel keeps the chunks and takes away the third stage: step 08's `sm80-two-stages` alternative, with step 09's epilogue.",
            "The epilogue runs once per tile, after 64 K tiles of main loop at 4096³; the ring's depth acts on the main loop. Step 08's chapter table times the two-stage ring beside the three-stage one: that ratio is the best guide.",
            "On a 99 KiB part expect exactly 1× (nothing changed). Elsewhere expect about what two stages cost step 08's twin, within the loop's noise of it.",
        ],
        prediction: Some(Prediction {
            question: "How many times step 09's own time (three stages where the GPU holds them) does its twin with two stages and the chunks kept take at 4096³ (`exercise check 09.4 --size 4096`)?",
            unit: "× the step's time",
            chapter_answer: "Exactly 1× on a 99 KiB part, where the step itself has two stages and the edit changes nothing. Where the step has three stages (A100, H100, H200), about what two stages cost step 08's twin: the epilogue is once per tile and the chunks stay, so only the main loop's copies lose one K tile of lead. With two stages the copies of tile t + 1 have one tile of MMAs (4.2 Mflop a block) to land, with three they have two. Step 08's chapter reads its `sm80-two-stages` alternative against the step in the H200's record. Unlike the Hopper twin's 09.2, where the freed memory had bought the stage, this twin's chunks never cost one where it holds three, so taking a stage away undoes nothing step 09 gained.",
        }),
    },
];
