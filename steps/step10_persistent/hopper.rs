//! The Hopper kernel's tile, roles, schedule and launch (step 09's kernel, made persistent): here its
//! tile shapes, compilations and alternatives; the model that chooses among the plans is in
//! `plans.rs`, the launch in `launch.rs`.

use super::*;

#[path = "launch.rs"]
mod launch;
#[path = "plans.rs"]
mod plans;

pub use launch::workspace;
use launch::{launch_chosen, launch_tile, ALL_CLUSTERS, MODELLED, OFF};
use plans::*;

/// Rows of `C` per block: two consumer warpgroups of 64 rows.
pub const BM: u32 = 128;
/// Columns of `C` per block of the default tile: one `wgmma … m64n256k16` covers them.
pub const BN: u32 = 256;
/// Depth of the K tile: 64 bf16 = one 128-byte swizzled row.
pub const BK: u32 = 64;
/// A producer warpgroup and two consumer warpgroups.
pub const THREADS: u32 = 3 * 128;
/// Tiles of A and B in the ring of the default tile (48 KiB each), as in step 09.
pub const STAGES: u32 = 4;
/// wgmma groups a consumer leaves in flight when it waits, as in step 09: 1. Waiting for all of
/// them and releasing the stage a K tile sooner is timed beside the step as the `wait-all`
/// alternative; the records made before the timing loop rotated its order cannot tell the two
/// apart (the alternative's slot won either way), so the 1 is step 09's reason, not a measured gain.
pub const MMA_IN_FLIGHT: u32 = 1;
/// Registers a thread after `setmaxnreg`: 40 for the producer and 232 for each consumer (step 09
/// has 48 / 224), for the consumer's 128 accumulators, 64 held values and its loop. The default
/// tile's compilation still spills 72 bytes a thread (its records' `local_bytes`); the narrower
/// tiles' do not.
pub const PRODUCER_REGISTERS: u32 = 40;
pub const CONSUMER_REGISTERS: u32 = 232;
/// Blocks per cluster along M in the default tile: one. Steps 07–09 paired blocks to share each B
/// tile; once blocks are persistent the pair no longer pays (recorded: the `pairs` alternative).
/// The grid is one row of clusters (`persistent::PersistentGemm`), so a cluster is
/// `(cluster_m, 1, 1)`.
pub const CLUSTER_M: u32 = 1;
// ANCHOR: group
/// Tile rows per group of the tile order: inside a group the tiles run down M first, so the
/// clusters working at the same moment share rows of A and columns of B in L2.
pub const GROUP_M: u32 = 16;
// ANCHOR_END: group
/// A store box of `C`, and a chunk of the epilogue: one consumer's 64 rows × 64 columns.
pub const C_BOX_ROWS: u32 = 64;
pub const C_BOX_COLS: u32 = 64;
/// Staging buffers per consumer warpgroup, and consumer warpgroups.
pub const C_BUFFERS: u32 = 2;
pub const CONSUMERS: u32 = 2;
/// Shared memory of a ring of `stages` tiles of BM + `bn` rows and `c_buffers` staging buffers
/// per consumer.
pub const fn smem_bytes(stages: u32, c_buffers: u32, bn: u32) -> u32 {
    1024 + stages * (BM + bn) * BK * 2 + CONSUMERS * c_buffers * C_BOX_ROWS * C_BOX_COLS * 2 + 2 * stages * 8
}
/// wgmma descriptor templates: 128-byte swizzle, K-major; SBO = 8 rows × 128 bytes.
pub const A_DESC: u64 = sm90::smem_descriptor(0, 16, 1024, SmemSwizzle::B128);
pub const B_DESC: u64 = sm90::smem_descriptor(0, 16, 1024, SmemSwizzle::B128);

// ANCHOR: tile_shapes
/// A tile shape the launch may choose: columns of `C` per block (one `wgmma … m64nBNk16`), blocks
/// per cluster along M (sharing each B tile) or along N (sharing each A tile), and the deepest ring
/// that fits beside them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tile {
    pub bn: u32,
    pub cluster_m: u32,
    pub cluster_n: u32,
    pub stages: u32,
}

impl Tile {
    /// Blocks per cluster.
    pub const fn blocks(&self) -> u32 {
        self.cluster_m * self.cluster_n
    }

    /// Its persistent launch: the tile, the cluster, the roles' threads, the ring's shared memory.
    pub const fn gemm(&self) -> PersistentGemm {
        PersistentGemm {
            bm: BM,
            bn: self.bn,
            cluster_m: self.cluster_m,
            cluster_n: self.cluster_n,
            threads: THREADS,
            smem: smem_bytes(self.stages, C_BUFFERS, self.bn),
        }
    }
}

const fn tile(bn: u32, cluster_m: u32, cluster_n: u32, stages: u32) -> Tile {
    Tile {
        bn,
        cluster_m,
        cluster_n,
        stages,
    }
}

/// The default first (128×256 blocks on their own), then steps 07–09's pairs of them, and narrower
/// blocks for shapes that leave SMs idle or the default's columns empty, on their own before in
/// pairs (cuBLAS's pairs of 128×64 blocks along N, sharing A, last). Each ring as deep as fits.
pub const TILES: [Tile; 6] = [
    tile(BN, CLUSTER_M, 1, STAGES),
    tile(256, 2, 1, 4),
    tile(128, 1, 1, 6),
    tile(128, 2, 1, 6),
    tile(64, 1, 1, 8),
    tile(64, 1, 2, 8),
];

/// What one block's K tile costs, in SM cycles at full rate, for the three resources it uses: the
/// tensor cores (BM · BN · BK multiply-adds at 2048 a cycle: 989 TFLOPS at 1.83 GHz over 132
/// SMs), the shared memory (the two consumers' `wgmma` reads of A and B, and the TMA writes of
/// the stage, at 128 bytes a cycle), and L2 (the A tile and this block's slice of B, at 64 bytes
/// a cycle an SM). The 128×256 tile is at the first two limits at once (1024 cycles), paired or
/// not: the model ties them, and the list puts the block on its own first. A model for choosing,
/// not a prediction of time: the recorded runs put the tiles in the order it gives, not at its
/// ratios.
pub const fn k_tile_cycles(t: Tile) -> u64 {
    let mma = (BM * t.bn * BK / 2048) as u64;
    let smem = ((CONSUMERS * (64 + t.bn) + BM + t.bn) * BK * 2 / 128) as u64;
    let l2 = ((BM / t.cluster_n + t.bn / t.cluster_m) * BK * 2 / 64) as u64;
    let most = if mma > smem { mma } else { smem };
    if most > l2 {
        most
    } else {
        l2
    }
}
// Every tile's ring is as deep as fits: Hopper allows a block the same 227 KiB as Blackwell (the
// default tile: step 09's budget, 4 · 48 + 32 + 1 = 225 KiB).
const _: () = {
    let mut i = 0;
    while i < TILES.len() {
        let t = TILES[i];
        assert!(smem_bytes(t.stages, C_BUFFERS, t.bn) <= crate::encoding::sm100::SMEM_PER_BLOCK_MAX);
        assert!(smem_bytes(t.stages + 1, C_BUFFERS, t.bn) > crate::encoding::sm100::SMEM_PER_BLOCK_MAX);
        i += 1;
    }
};
// ANCHOR_END: tile_shapes

/// The kernel file of `$tile` with `$c_buffers` staging buffers per consumer and the given
/// register split, launched by `$launch`.
macro_rules! kernel {
    ($tile:expr, $c_buffers:expr, $producer:expr, $consumer:expr, $launch:expr, $group:expr, $in_flight:expr) => {
        KernelFile {
            path: "steps/step10_persistent/sm90.cu",
            text: KernelText::File,
            targets: Targets::Hopper,
            entry: "gemm",
            defines: &[
                ("BM", BM as u64),
                ("BN", $tile.bn as u64),
                ("BK", BK as u64),
                ("STAGES", $tile.stages as u64),
                ("CLUSTER_M", $tile.cluster_m as u64),
                ("CLUSTER_N", $tile.cluster_n as u64),
                ("GROUP_M", $group as u64),
                ("MMA_IN_FLIGHT", $in_flight as u64),
                ("C_BUFFERS", $c_buffers as u64),
                ("PRODUCER_REGISTERS", $producer as u64),
                ("CONSUMER_REGISTERS", $consumer as u64),
                ("A_DESC", A_DESC),
                ("B_DESC", B_DESC),
            ],
            max_dynamic_smem: smem_bytes($tile.stages, $c_buffers, $tile.bn),
            launch: $launch,
        }
    };
}

/// The step's kernel: the default tile's compilation, whose launch picks the tile for the shape.
pub const KERNEL: KernelFile = kernel!(
    TILES[0],
    C_BUFFERS,
    PRODUCER_REGISTERS,
    CONSUMER_REGISTERS,
    launch_chosen,
    GROUP_M,
    MMA_IN_FLIGHT
);

/// Each tile shape compiled, for the launch that chooses it (the default's is `KERNEL` itself).
macro_rules! tile_kernel {
    ($i:literal) => {
        kernel!(
            TILES[$i],
            C_BUFFERS,
            PRODUCER_REGISTERS,
            CONSUMER_REGISTERS,
            launch_tile::<$i, MODELLED>,
            GROUP_M,
            MMA_IN_FLIGHT
        )
    };
}
pub static TILE_KERNELS: [KernelFile; 6] = [
    tile_kernel!(0),
    tile_kernel!(1),
    tile_kernel!(2),
    tile_kernel!(3),
    tile_kernel!(4),
    tile_kernel!(5),
];

/// Experiments timed beside the kernel in its own loop: every tile whole (what stream-K gains or
/// loses at each shape), the main loop that waits for every wgmma group, and each tile shape
/// fixed (what the choice gains or loses at each shape).
pub const ALTERNATIVES: &[Alternative] = &[
    Alternative {
        name: "data-parallel",
        design: "the default tile, every tile whole, one cluster each, as many turns as it takes (no stream-K)",
        kernel: kernel!(
            TILES[0],
            C_BUFFERS,
            PRODUCER_REGISTERS,
            CONSUMER_REGISTERS,
            launch_tile::<0, OFF>,
            GROUP_M,
            MMA_IN_FLIGHT
        ),
        plan: true,
    },
    Alternative {
        name: "stream-k",
        design: "the default tile, whole turns on every cluster that fits, then the last wave's K tiles shared by all of them (the best hybrid on the whole GPU)",
        kernel: kernel!(
            TILES[0],
            C_BUFFERS,
            PRODUCER_REGISTERS,
            CONSUMER_REGISTERS,
            launch_tile::<0, ALL_CLUSTERS>,
            GROUP_M,
            MMA_IN_FLIGHT
        ),
        plan: true,
    },
    Alternative {
        name: "wait-all",
        design: "the default tile with every wgmma group waited for and its stage released at once, a K tile sooner (MMA_IN_FLIGHT = 0)",
        kernel: kernel!(
            TILES[0],
            C_BUFFERS,
            PRODUCER_REGISTERS,
            CONSUMER_REGISTERS,
            launch_tile::<0, MODELLED>,
            GROUP_M,
            0
        ),
        plan: false,
    },
    Alternative {
        name: "pairs",
        design: "always 128×256 blocks in pairs sharing each B tile by multicast (steps 07–09's tile)",
        kernel: tile_kernel!(1),
        plan: true,
    },
    Alternative {
        name: "tile-128x128",
        design: "always 128×128 blocks on their own, a ring of 6",
        kernel: tile_kernel!(2),
        plan: true,
    },
    Alternative {
        name: "tile-128x128-pairs",
        design: "always 128×128 blocks in pairs along M sharing B, a ring of 6",
        kernel: tile_kernel!(3),
        plan: true,
    },
    Alternative {
        name: "tile-128x64-pairs-n",
        design: "always 128×64 blocks in pairs along N sharing A (cuBLAS's pairing), a ring of 8",
        kernel: tile_kernel!(5),
        plan: true,
    },
    Alternative {
        name: "tile-128x64",
        design: "always 128×64 blocks on their own, a ring of 8",
        kernel: tile_kernel!(4),
        plan: true,
    },
];
