//! Step 10 · persistent: what this step launches and how.
//!
//! Hopper (`sm90.cu`): step 09's kernel, persistent: the grid is as many clusters as fit on the GPU at
//! once (the driver is asked), each cluster walks its tiles in a grouped order (`GROUP_M` tile rows
//! at a time), and the producer runs ahead into the next tile while the consumers store the last.
//! Which tile (128×256 blocks in pairs, or on their own, or 128×128 or 128×64 blocks) and whether the
//! tiles of a ragged last wave are shared out by K (stream-K) is chosen per shape: a model ranks the
//! plans (`choose_plan`), and the first launch at a shape times the best few (`trial_plans`).
//!
//! Blackwell (`sm100.cu`, assembled, not run here): step 09's kernel, persistent in the same way (one
//! pair of blocks per place, the same grouped order), with two TMEM accumulators (2 × 256 columns) so
//! that the epilogue drains one tile while the MMA warp fills the other with the next.
//!
//! sm80 twin (`sm80.cu`): step 09's twin, persistent: one 256×128 block per place on the GPU (the
//! occupancy calculator says how many), the Hopper twin's grouped order, decomposition (stream-K) and
//! workspace, used from `hopper` here rather than copied; the copies run `STAGES − 1` K tiles ahead of
//! the MMAs across tiles, so the next tile's first copies fly during a tile's epilogue.
//!
//! The step's files: this one (the registration), `hopper.rs` (the Hopper kernel's tile shapes,
//! compilations and alternatives), `plans.rs` (the model that ranks the plans, the trials, a plan in
//! words), `launch.rs` (the workspace, the choice at the first launch, the launch), `blackwell.rs` (the
//! Blackwell kernel's tile and TMEM accumulators) and `sm80.rs` (the sm80 twin's ring and schedule).

use crate::encoding::tma::{self, TmaSwizzle};
use crate::encoding::{sm90, SmemSwizzle};
use crate::error::Result;
use crate::run::persistent::PersistentGemm;
use crate::run::registry::{
    launch_maps_then, launch_with_maps_in, tell_plan, Alternative, Format, GemmOperands, KernelFile, KernelText, Plan,
    Step, Targets,
};
use cudarc::driver::{CudaFunction, CudaStream};

#[path = "hopper.rs"]
mod hopper;

const HOPPER: KernelFile = hopper::KERNEL;

#[path = "blackwell.rs"]
mod blackwell;

/// The step's workspace (stream-K's partial tiles and flags), which step 11's sm80 twin needs too.
pub use hopper::workspace;

const BLACKWELL: KernelFile = blackwell::KERNEL;

#[path = "sm80.rs"]
pub mod sm80;

const SM80: KernelFile = sm80::KERNEL;

/// The Hopper twin's alternatives, then the sm80 twin's: each is timed beside its own twin.
const ALTERNATIVES: [Alternative; hopper::ALTERNATIVES.len() + sm80::ALTERNATIVES.len()] =
    crate::run::registry::alternatives_of_both(hopper::ALTERNATIVES, sm80::ALTERNATIVES);

pub const STEP: Step = Step {
    id: 10,
    name: "persistent",
    title: "Persistent: one cluster per place on the GPU walks its tiles in a grouped order; the producer runs ahead into the next tile",
    predecessor: Some(9),
    format: Format::Bf16,
    // The sm80 twin last: a GPU takes the first file that serves it, so Hopper keeps its own.
    kernels: &[HOPPER, BLACKWELL, SM80],
    alternatives: &ALTERNATIVES,
    workspace: Some(hopper::workspace),
};
