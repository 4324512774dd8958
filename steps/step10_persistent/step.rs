//! Step 10 · persistent: what this step launches and how.
//!
//! Hopper (`sm90.cu`): step 09's kernel, persistent: the grid is as many clusters as fit on the GPU at
//! once (the driver is asked), each cluster walks its tiles in a grouped order (`GROUP_M` tile rows
//! at a time), and the producer runs ahead into the next tile while the consumers store the last.
//! Which tile (128×256 blocks in pairs, or on their own, or 128×128 or 128×64 blocks) is chosen from
//! the shape (`choose_tile`), and the tiles of a ragged last wave are shared out by K (stream-K).
//!
//! Blackwell (`sm100.cu`, assembled, not run here): step 09's kernel, persistent in the same way (one
//! pair of blocks per place, the same grouped order), with two TMEM accumulators (2 × 256 columns) so
//! that the epilogue drains one tile while the MMA warp fills the other with the next.
//!
//! The step's files: this one (its registration), `tiles.rs` (the Hopper kernel's tile model, the
//! tile shapes a launch chooses among and the alternatives built from them), `decomposition.rs` (whole
//! tiles or stream-K, the choice of tile, the workspace), `launch.rs` (the Hopper launch) and
//! `blackwell.rs` (the Blackwell kernel).

use crate::encoding::tma::{self, TmaSwizzle};
use crate::encoding::{sm90, SmemSwizzle};
use crate::error::Result;
use crate::run::persistent::PersistentGemm;
use crate::run::registry::{
    launch_maps_then, launch_with_maps_in, tell_plan, Alternative, Format, GemmOperands, KernelFile, Plan, Step,
    Targets,
};
use cudarc::driver::{CudaFunction, CudaStream};

#[path = "blackwell.rs"]
mod blackwell;
#[path = "decomposition.rs"]
mod decomposition;
#[path = "launch.rs"]
mod launch;
#[path = "tiles.rs"]
mod tiles;

const HOPPER: KernelFile = tiles::KERNEL;

const BLACKWELL: KernelFile = blackwell::KERNEL;

pub const STEP: Step = Step {
    id: 10,
    name: "persistent",
    title: "Persistent: one cluster per place on the GPU walks its tiles in a grouped order; the producer runs ahead into the next tile",
    predecessor: Some(9),
    format: Format::Bf16,
    kernels: &[HOPPER, BLACKWELL],
    alternatives: tiles::ALTERNATIVES,
    workspace: Some(decomposition::workspace),
};
