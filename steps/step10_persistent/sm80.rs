//! The sm80 twin's tile, ring and launch: step 09's twin, persistent, with the Hopper twin's schedule.

use super::*;
use crate::run::persistent::{stream_k_workspace, Decomposition, StreamK};
use crate::run::steps::step09_epilogue_double_buffer::sm80 as step09;

pub const BM: u32 = step09::BM;
pub const BN: u32 = step09::BN;
pub const BK: u32 = step09::BK;
pub const THREADS: u32 = step09::THREADS;
pub const BLOCKS_PER_SM: u32 = step09::BLOCKS_PER_SM;
/// Tile rows per group of the tile order: the Hopper twin's 2048 rows of C (16 rows of 128), here
/// 8 rows of 256.
pub const GROUP_M: u32 = super::hopper::GROUP_M * super::hopper::BM / BM;
// ANCHOR: sm80_configs
/// The ring's stages, and whether step 09's staging chunks sit beside it. Three stages and the
/// chunks (160 KiB) where a block may have 163 KiB or more. A 99 KiB part has room for two stages
/// only, and none beside them: the next tile's copies are in flight in the ring while a tile is
/// stored, so the chunks cannot be carved from it either; there the tile is stored from registers.
pub const DEEP: (u32, bool) = (step09::DEEP.0, true);
pub const SHALLOW: (u32, bool) = (step09::SHALLOW.0, false);
pub const fn smem_bytes(config: (u32, bool)) -> u32 {
    let (stages, staging) = config;
    stages * step09::STAGE_BYTES + if staging { step09::STAGING_BYTES } else { 0 }
}
// ANCHOR_END: sm80_configs
const _: () = assert!(smem_bytes(SHALLOW) <= 99 * 1024 && smem_bytes(DEEP) <= 163 * 1024);

macro_rules! kernel {
    ($config:expr, $launch:expr) => {
        KernelFile {
            path: "steps/step10_persistent/sm80.cu",
            text: crate::run::registry::KernelText::File,
            targets: Targets::Ampere,
            entry: "gemm",
            defines: &[
                ("BM", BM as u64),
                ("BN", BN as u64),
                ("BK", BK as u64),
                ("BLOCKS_PER_SM", BLOCKS_PER_SM as u64),
                ("STAGES", $config.0 as u64),
                ("STAGING", $config.1 as u64),
                ("GROUP_M", GROUP_M as u64),
            ],
            max_dynamic_smem: smem_bytes($config),
            launch: $launch,
        }
    };
}

/// The step's kernel as registered (what every GPU holds); its launch takes the deep compilation
/// where the GPU has the shared memory for it.
pub const KERNEL: KernelFile = kernel!(SHALLOW, launch_stream_k);
pub static DEEP_KERNEL: KernelFile = kernel!(DEEP, launch_stream_k);

pub const ALTERNATIVES: &[Alternative] = &[Alternative {
    name: "sm80-data-parallel",
    design: "the sm80 twin with every tile whole, one block each, as many turns as it takes (no stream-K)",
    kernel: kernel!(SHALLOW, launch_data_parallel),
    plan: true,
}];

/// The ring and staging `func` was compiled with (the deep compilation, the registered one, or an
/// exercise's text at either); step 11's twin has the same defines.
pub fn config_of(func: &CudaFunction) -> (u32, bool) {
    let define = |name| crate::run::ring::define_of(func, name);
    match (define("STAGES"), define("STAGING")) {
        (Some(stages), Some(staging)) => (stages as u32, staging != 0),
        _ => SHALLOW,
    }
}

fn launch_stream_k(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
    launch_with(func, stream, ops, true)
}

fn launch_data_parallel(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
    launch_with(func, stream, ops, false)
}

fn launch_with(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands, stream_k: bool) -> Result<()> {
    let s = ops.shape;
    let deep = crate::run::ring::deeper(func, stream, &KERNEL, &DEEP_KERNEL)?;
    let func = deep.as_ref().unwrap_or(func);
    let config = config_of(func);
    let plan = schedule(func, stream, ops, BK, smem_bytes(config), stream_k)?;
    if stream_k {
        let text = format!(
            "step 10 (sm80) at {s}: {BM}×{BN} blocks, a ring of {} stages, {}",
            config.0, plan.text
        );
        tell_plan(
            &KERNEL,
            s,
            Plan {
                text,
                clusters_fit: plan.clusters_fit,
            },
        );
    }
    launch_maps_then(
        func,
        stream,
        &[],
        &[ops.a, ops.b, ops.c, plan.partials, plan.flags],
        ops,
        &plan.ints,
        plan.launch,
    )
}

/// A persistent launch of BM×BN tiles (this twin's, and step 11's sm80 twin's): its grid, the
/// stream-K workspace, the kernel's last three arguments (`dp_tiles`, `sk_clusters`, `epoch`) and
/// what the decomposition chose.
pub struct Schedule {
    pub launch: crate::run::registry::Launch,
    pub partials: u64,
    pub flags: u64,
    pub ints: [i32; 3],
    /// The decomposition, in words, and how many blocks fit at once.
    pub text: String,
    pub clusters_fit: Option<crate::run::registry::ClustersFit>,
}

/// The schedule of `func` (K tiles of `bk` elements, `smem` bytes of shared memory a block) at the
/// operands' shape: as many blocks as fit on the GPU at once, then the Hopper twin's decomposition
/// of the tiles over them; with `stream_k` false, every tile whole.
pub fn schedule(
    func: &CudaFunction,
    stream: &CudaStream,
    ops: &GemmOperands,
    bk: u32,
    smem: u32,
    stream_k: bool,
) -> Result<Schedule> {
    let s = ops.shape;
    // ANCHOR: sm80_grid
    // As many blocks as fit on the GPU at once (the occupancy calculator says how many), then the
    // Hopper twin's decomposition of the tiles over them.
    let gemm = PersistentGemm {
        bm: BM,
        bn: BN,
        cluster_m: 1,
        cluster_n: 1,
        threads: THREADS,
        smem,
    };
    let tiles = gemm.tiles(s) as u32;
    let k_tiles = s.k.div_ceil(bk as usize) as u32;
    let fit = gemm.blocks_fit(func, stream)?;
    let stream_k = if stream_k { StreamK::Modelled } else { StreamK::Off };
    let d = Decomposition::choose(tiles, k_tiles, fit, stream_k);
    let mut launch = gemm.launch(d.clusters);
    // ANCHOR_END: sm80_grid
    let (partials, flags) = if d.sk_clusters > 0 {
        launch = launch.co_resident();
        // One flag a block, in the workspace the step asks for (`hopper::workspace`, which holds as
        // many bytes).
        stream_k_workspace(ops, "step 10's sm80 stream-K", d.clusters, (BM, BN), 1)?
    } else {
        (0, 0)
    };
    Ok(Schedule {
        launch,
        partials,
        flags,
        ints: [d.dp_tiles as i32, d.sk_clusters as i32, ops.workspace.epoch as i32],
        text: d.describe(),
        clusters_fit: Some(crate::run::registry::ClustersFit {
            cluster_blocks: 1,
            clusters: fit,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The workspace step 10 asks for holds the sm80 twin's stream-K too: a 256×128 fp32 partial
    /// and a flag for every block the GPU holds at once.
    #[test]
    fn the_hopper_workspace_holds_the_sm80_stream_k() {
        let need = super::super::hopper::workspace(crate::check::problem::Shape::square(4096), 132);
        assert!(need.scratch_bytes >= 132 * (BM * BN * 4) as u64);
        assert!(need.flag_bytes >= 132 * 4);
    }
}
