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

use crate::encoding::tma::{self, TmaSwizzle};
use crate::encoding::{sm90, SmemSwizzle};
use crate::error::Result;
use crate::run::persistent::PersistentGemm;
use crate::run::registry::{
    launch_maps_then, launch_with_maps_in, tell_plan, Alternative, Format, GemmOperands, KernelFile, KernelText, Plan,
    Step, Targets,
};
use cudarc::driver::{CudaFunction, CudaStream};

/// The Hopper kernel's tile, roles, schedule and launch (step 09's kernel, made persistent).
mod hopper {
    use super::*;
    use crate::encoding::tma::{TensorMap, TmaElement};
    use crate::error::Error;
    use crate::run::persistent::{Decomposition, MatrixMap, StreamK, FIXUP_K_TILES};
    use crate::run::workspace::WorkspaceNeed;
    use std::sync::Mutex;

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

    // ANCHOR: choice
    /// The rate at which a stream-K run's K tiles are modelled to come from L2: half the 64 bytes a
    /// cycle of [`k_tile_cycles`]. Fitted to a random sweep on the H200 (`step10 --sweep random --seed
    /// 1`, chapter 10b): the clusters of a stream-K wave work at different K offsets of different tiles,
    /// so the loads of neighbouring clusters stop meeting in L2, and a block that loads more per K tile
    /// (the 128×256 block alone: 384 rows of A and B) suffers most. With 64, the model preferred
    /// stream-K on single blocks where pairs of blocks (half the B rows each) or whole tiles measured
    /// up to 24 % faster.
    pub const STREAM_K_L2_BYTES_PER_CYCLE: u32 = 32;

    /// [`k_tile_cycles`] for a K tile of a stream-K run: L2 at [`STREAM_K_L2_BYTES_PER_CYCLE`].
    pub const fn stream_k_tile_cycles(t: Tile) -> u64 {
        let l2 = ((BM / t.cluster_n + t.bn / t.cluster_m) * BK * 2 / STREAM_K_L2_BYTES_PER_CYCLE) as u64;
        let whole = k_tile_cycles(t);
        if l2 > whole {
            l2
        } else {
            whole
        }
    }

    /// The modelled time of `d` on tile `t`, in cycles: the whole tiles' turns at [`k_tile_cycles`],
    /// the stream-K run at [`stream_k_tile_cycles`], and a fixup of `FIXUP_K_TILES` for each run a
    /// shared tile is cut into.
    pub fn modelled_cycles(t: Tile, d: &Decomposition) -> u64 {
        let k = d.k_tiles as u64;
        let turns = (d.dp_tiles as u64).div_ceil(d.clusters.max(1) as u64);
        let mut cycles = turns * k * k_tile_cycles(t);
        if d.sk_clusters > 0 {
            let run = ((d.tiles - d.dp_tiles) as u64 * k).div_ceil(d.sk_clusters as u64);
            cycles += run * stream_k_tile_cycles(t) + FIXUP_K_TILES * k.div_ceil(run) * k_tile_cycles(t);
        }
        cycles
    }

    /// The plans the launch chooses from: every tile with the decomposition `Decomposition::choose`
    /// models best for it, then the default tile whole (no stream-K) and the default tile with the
    /// last wave shared by every cluster.
    pub fn candidate_plans() -> impl Iterator<Item = (usize, StreamK)> {
        (0..TILES.len())
            .map(|i| (i, StreamK::Modelled))
            .chain([(0, StreamK::Off), (0, StreamK::AllClusters)])
    }

    /// A plan: a tile of [`TILES`], how it shares the last wave, and the decomposition that gives.
    pub type TilePlan = (usize, StreamK, Decomposition);

    /// The decomposition of `shape`'s tiles of `TILES[i]` over `fit` clusters.
    fn decomposition(shape: crate::check::problem::Shape, i: usize, fit: u32, stream_k: StreamK) -> Decomposition {
        let t = TILES[i];
        let tiles = shape.tiles(t.cluster_m * BM, t.cluster_n * t.bn) as u32;
        Decomposition::choose(tiles, shape.k.div_ceil(BK as usize) as u32, fit, stream_k)
    }

    /// The candidates ([`candidate_plans`]) with their decompositions over the clusters that fit
    /// (`fits[i]` for `TILES[i]`, asked of the driver), least modelled time ([`modelled_cycles`])
    /// first; on a tie, the earlier in the list. A tile of which no cluster fits (0) is left out, and
    /// so is a candidate that launches the same tile and decomposition as one before it.
    pub fn ranked_plans(shape: crate::check::problem::Shape, fits: [u32; 6]) -> Vec<TilePlan> {
        let mut costed: Vec<((u64, usize), TilePlan)> = candidate_plans()
            .enumerate()
            .filter(|(_, (i, _))| fits[*i] > 0)
            .map(|(place, (i, stream_k))| {
                let d = decomposition(shape, i, fits[i], stream_k);
                ((modelled_cycles(TILES[i], &d), place), (i, stream_k, d))
            })
            .collect();
        costed.sort_by_key(|(cost_then_place, _)| *cost_then_place);
        let mut ranked: Vec<TilePlan> = Vec::new();
        for (_, plan) in costed {
            if !ranked.iter().any(|p| same_launch(p, &plan)) {
                ranked.push(plan);
            }
        }
        ranked
    }

    /// Whether two plans launch the same kernel with the same grid and split.
    fn same_launch(a: &TilePlan, b: &TilePlan) -> bool {
        (a.0, a.2) == (b.0, b.2)
    }

    /// The model's plan for `shape`: the first of [`ranked_plans`]; `None` if no tile fits.
    pub fn choose_plan(shape: crate::check::problem::Shape, fits: [u32; 6]) -> Option<TilePlan> {
        ranked_plans(shape, fits).into_iter().next()
    }

    // ANCHOR_END: choice

    // ANCHOR: trials
    /// Plans the model ranks best that the first launch at a shape times ([`trial_plans`]): every
    /// candidate, in practice. With only its best three, the fastest plan at 2 of 40 random shapes was
    /// never tried (development run, seed 7).
    pub const MODEL_TRIALS: usize = 8;
    /// Timed launches of each trial plan, at least (whole periods of the rotation: [`trial_rounds`]).
    pub const TRIAL_LAUNCHES: u32 = 3;

    /// The plans the first launch at `shape` times before it chooses: the model's [`MODEL_TRIALS`]
    /// best, its first guess first, then the default tile whole (data-parallel, the plan that needs
    /// no model) unless it is one of them. Empty if no tile fits.
    pub fn trial_plans(shape: crate::check::problem::Shape, fits: [u32; 6]) -> Vec<TilePlan> {
        let mut trials: Vec<TilePlan> = ranked_plans(shape, fits).into_iter().take(MODEL_TRIALS).collect();
        if fits[0] > 0 {
            let whole = (0, StreamK::Off, decomposition(shape, 0, fits[0], StreamK::Off));
            if !trials.iter().any(|p| same_launch(p, &whole)) {
                trials.push(whole);
            }
        }
        trials
    }

    /// The order of the trial launches of `plans` plans, round by round: the timing loop's rotation
    /// (`rounds::round_order`), so that over the timed rounds every plan holds every slot, and follows
    /// every other plan, equally often. The first round warms up, untimed; then whole periods of the
    /// rotation, at least [`TRIAL_LAUNCHES`] rounds.
    pub fn trial_rounds(plans: usize) -> Vec<Vec<usize>> {
        use crate::run::rounds::{rotation_period, round_order};
        let period = rotation_period(plans);
        let timed = period * TRIAL_LAUNCHES.div_ceil(period);
        (0..=timed).map(|r| round_order(r, plans)).collect()
    }
    // ANCHOR_END: trials

    // ANCHOR: workspace
    /// Blocks a launch has flags for: more than any GPU holds at once (one block per SM).
    const FLAG_BLOCKS: u64 = 1024;

    /// What step 10 needs of the session's workspace (`persistent::Workspace`): one flag per consumer
    /// warpgroup of every block, then a 128×BN fp32 partial tile per block, for as many blocks as the
    /// GPU holds at once (one per SM) of the widest tile (128 KiB each). The session allocates it,
    /// zeroed, before the step's first launch, grows it and never shrinks it, and frees it with the
    /// context. The flags come first, at fixed places, so a launch of another tile shape (or another
    /// step) finds only flags there, raised to older epochs, never partial sums.
    pub fn workspace(_shape: crate::check::problem::Shape, sms: u32) -> WorkspaceNeed {
        WorkspaceNeed {
            flag_bytes: FLAG_BLOCKS * CONSUMERS as u64 * 4,
            scratch_bytes: sms as u64 * (BM * BN * 4) as u64,
        }
    }

    /// The partials' and the flags' addresses for `blocks` blocks of a tile `bn` columns wide. Each
    /// launch raises its flags to its own epoch (`ops.workspace.epoch`, newer than any earlier
    /// launch's), so they never need clearing.
    fn stream_k_workspace(ops: &GemmOperands, blocks: u32, bn: u32) -> Result<(u64, u64)> {
        let who = format!("step 10's stream-K ({blocks} blocks of 128×{bn})");
        let flags = ops.workspace.flags(blocks as u64 * CONSUMERS as u64 * 4, &who)?;
        let partials = ops.workspace.scratch(blocks as u64 * (BM * bn * 4) as u64, &who)?;
        Ok((partials, flags))
    }
    // ANCHOR_END: workspace

    /// The tensor maps of A, B and C for a tile shape (kept by `persistent::tensor_map`): each block
    /// loads its rows of A and B, or its slice of the operand its cluster shares.
    fn tensor_maps(ops: &GemmOperands, tile: Tile) -> Result<([TensorMap; 3], bool)> {
        let s = ops.shape;
        let (a_rows, b_rows) = tile.gemm().box_rows();
        let bf16 = |name, address, rows, box_rows| MatrixMap {
            name,
            element: TmaElement::Bf16,
            address,
            rows,
            cols: s.k,
            box_rows,
            box_cols: BK,
            swizzle: TmaSwizzle::B128,
        };
        let a_map = crate::run::persistent::tensor_map(bf16("A", ops.a, s.m, a_rows))?;
        let b_map = crate::run::persistent::tensor_map(bf16("B", ops.b, s.n, b_rows))?;
        let (c_map, use_tma_store) = crate::run::persistent::store_map_for_c(MatrixMap {
            name: "C",
            cols: s.n,
            box_cols: C_BOX_COLS,
            ..bf16("C", ops.c, s.m, C_BOX_ROWS)
        })?;
        Ok(([a_map, b_map, c_map], use_tma_store))
    }

    /// `128×256 ×2 along M, stream-K on 66 clusters`: a plan in a few words, for the list of trials.
    fn plan_label(plan: &TilePlan) -> String {
        let (i, _, d) = plan;
        let tile = TILES[*i];
        let pairing = match (tile.cluster_m, tile.cluster_n) {
            (1, 1) => String::new(),
            (m, 1) => format!(" ×{m} along M"),
            (_, n) => format!(" ×{n} along N"),
        };
        let split = match d.sk_clusters {
            0 => "data-parallel".to_string(),
            sk => format!("stream-K on {sk} clusters"),
        };
        format!("{BM}×{}{pairing}, {split}", tile.bn)
    }

    /// `step 10 at 1024x1024x1024: 128×64 blocks on their own, data-parallel: …`: what a plan launches.
    fn plan_text(shape: crate::check::problem::Shape, tile: Tile, d: &Decomposition) -> String {
        let pairing = match (tile.cluster_m, tile.cluster_n) {
            (1, 1) => "on their own".to_string(),
            (m, 1) => format!("in clusters of {m} along M"),
            (_, n) => format!("in clusters of {n} along N"),
        };
        format!(
            "step 10 at {shape}: {BM}×{} blocks {pairing}, {}",
            tile.bn,
            d.describe()
        )
    }

    /// The plan of `ranked` whose text ([`plan_text`]) begins `told` (a parent's record's plan, which
    /// goes on to say how it was chosen), if any.
    fn told_plan_among(shape: crate::check::problem::Shape, ranked: &[TilePlan], told: &str) -> Option<TilePlan> {
        ranked.iter().copied().find(|(i, _, d)| {
            let text = plan_text(shape, TILES[*i], d);
            told == text || told.starts_with(&format!("{text};"))
        })
    }

    /// Tells the harness the tile and decomposition chosen for a shape, how many clusters of that tile
    /// fit (`fit`), and how it was chosen (`how`): printed, kept in the record.
    fn announce(shape: crate::check::problem::Shape, tile: Tile, d: &Decomposition, fit: u32, how: &str) {
        let text = format!("{}; {how}", plan_text(shape, tile, d));
        let clusters_fit = Some(crate::run::registry::ClustersFit {
            cluster_blocks: tile.blocks(),
            clusters: fit,
        });
        tell_plan(&KERNEL, shape, Plan { text, clusters_fit });
    }

    // ANCHOR: choice_variable
    /// Set to `model`, step 10 launches the plan its model ranks first ([`choose_plan`]) and times
    /// nothing; unset (or `measured`), the first launch at a shape times the model's best plans and
    /// keeps the fastest ([`trial_plans`]).
    pub const CHOICE_VARIABLE: &str = "GEMM_LADDER_STEP10_CHOICE";
    // ANCHOR_END: choice_variable

    /// Whether the choice is measured (`true`) or the model's alone: [`CHOICE_VARIABLE`].
    fn choice_is_measured() -> Result<bool> {
        match std::env::var(CHOICE_VARIABLE).as_deref() {
            Err(_) | Ok("") | Ok("measured") => Ok(true),
            Ok("model") => Ok(false),
            Ok(other) => Err(Error::Other(format!(
                "{CHOICE_VARIABLE}={other}: step 10's choice is `measured` (the default) or `model`"
            ))),
        }
    }

    /// Times `plans` on `ops`'s operands in [`trial_rounds`], each launch into a scratch C (the
    /// caller's C keeps what it holds: the verification poisons it to catch elements no launch writes)
    /// with a workspace epoch of its own; the median of each plan's timed launches, in milliseconds.
    fn time_plans(
        func: &CudaFunction,
        stream: &CudaStream,
        ops: &GemmOperands,
        plans: &[TilePlan],
    ) -> Result<Vec<f64>> {
        use crate::device::gpu::{hang_deadline, wait_for};
        use cudarc::driver::{sys::CUevent_flags, CudaEvent, DevicePtr};
        let shape = ops.shape;
        let scratch = stream
            .context()
            .default_stream()
            .alloc_zeros::<u16>(shape.m * shape.n)
            .map_err(|e| Error::OutOfMemory(format!("step 10's scratch C for its trial launches at {shape} ({e})")))?;
        let (c, _in_use) = scratch.device_ptr(stream);
        let functions = plans
            .iter()
            .map(|&(i, _, _)| match i {
                0 => Ok(func.clone()),
                _ => crate::run::loader::function_in(stream, &TILE_KERNELS[i]),
            })
            .collect::<Result<Vec<CudaFunction>>>()?;
        let event = || {
            stream
                .context()
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(Error::cuda("creating an event"))
        };
        let record = |e: &CudaEvent| e.record(stream).map_err(Error::cuda("recording an event"));
        let rounds = trial_rounds(plans.len());
        let events = rounds[1..]
            .iter()
            .map(|_| plans.iter().map(|_| Ok((event()?, event()?))).collect())
            .collect::<Result<Vec<Vec<(CudaEvent, CudaEvent)>>>>()?;
        for (r, order) in rounds.iter().enumerate() {
            for &j in order {
                // Round 0 warms up, untimed.
                let timed = r.checked_sub(1).map(|t| &events[t][j]);
                if let Some((start, _)) = timed {
                    record(start)?;
                }
                let trial = GemmOperands {
                    c,
                    workspace: ops.workspace.renewed(),
                    ..*ops
                };
                let (i, stream_k, _) = plans[j];
                launch_with(&functions[j], stream, &trial, TILES[i], stream_k)?;
                if let Some((_, end)) = timed {
                    record(end)?;
                }
            }
        }
        let done = event()?;
        record(&done)?;
        let what = format!("step 10's trial launches at {shape}");
        wait_for(&done, &what, hang_deadline() * rounds.len() as u32)?;
        stream
            .context()
            .check_err()
            .map_err(Error::cuda(format!("running {what}")))?;
        let mut times = Vec::with_capacity(events.len() * plans.len());
        for (start, end) in events.iter().flatten() {
            times.push(start.elapsed_ms(end).map_err(Error::cuda("reading an event"))? as f64);
        }
        // Listed round by round in plan order: plan j's are every `plans.len()`th from the j-th.
        (0..plans.len())
            .map(|j| {
                let own: Vec<f64> = times.iter().skip(j).step_by(plans.len()).copied().collect();
                crate::run::rounds::median(&own)
                    .filter(|ms| ms.is_finite() && *ms > 0.0)
                    .ok_or_else(|| {
                        Error::Other(format!(
                            "{what}: the events gave no usable times for {}",
                            plan_label(&plans[j])
                        ))
                    })
            })
            .collect()
    }

    /// The plan for `shape`, once per GPU context and shape: choosing loads every tile's kernel, asks
    /// the driver how many of its clusters fit, and times the best plans on `ops`'s operands
    /// ([`time_plans`]), which a timing loop's launches should not each do. The first launch at a
    /// shape is the verification's, before any timing.
    fn chosen_plan(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<(usize, StreamK)> {
        type Key = (usize, crate::check::problem::Shape);
        static CHOSEN: Mutex<Vec<(Key, (usize, StreamK))>> = Mutex::new(Vec::new());
        let shape = ops.shape;
        let key = (stream.context().cu_ctx() as usize, shape);
        if let Some((_, best)) = CHOSEN
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .find(|(k, _)| *k == key)
        {
            return Ok(*best);
        }
        // A tile the driver cannot place (no cluster of it fits, or its kernel does not load) is left
        // out of the choice (0 clusters), so long as another tile fits.
        let mut fits = [0; 6];
        let mut first_refusal = None;
        for (i, tile) in TILES.iter().enumerate() {
            let fit = if i == 0 {
                Ok(func.clone())
            } else {
                crate::run::loader::function_in(stream, &TILE_KERNELS[i])
            }
            .and_then(|f| tile.gemm().clusters_fit(&f, stream));
            match fit {
                Ok(clusters) => fits[i] = clusters,
                Err(e) => {
                    first_refusal.get_or_insert(e);
                }
            }
        }
        let Some(modelled) = choose_plan(shape, fits) else {
            return Err(first_refusal
                .unwrap_or_else(|| Error::Other(format!("no tile of step 10 fits on this GPU at {shape}"))));
        };
        let trials = trial_plans(shape, fits);
        let told = crate::run::registry::told_plan();
        let ((best, stream_k, d), how) = if let Some(told) = told {
            let plan = told_plan_among(shape, &ranked_plans(shape, fits), &told).ok_or_else(|| {
                Error::Other(format!(
                    "the plan this process was told to launch is none of step 10's here: `{told}`"
                ))
            })?;
            (plan, "the plan the parent process told".to_string())
        } else if !choice_is_measured()? {
            (modelled, format!("the model's choice ({CHOICE_VARIABLE}=model)"))
        } else {
            let times = time_plans(func, stream, ops, &trials)?;
            let fastest = (0..trials.len())
                .min_by(|&a, &b| times[a].total_cmp(&times[b]))
                .expect("the model's plan is among the trials");
            let timed: Vec<String> = trials
                .iter()
                .zip(&times)
                .map(|(plan, ms)| format!("{} {ms:.3} ms", plan_label(plan)))
                .collect();
            let how = format!(
                "measured at the first launch (the median of {} launches each, the model's first guess first): {}",
                trial_rounds(trials.len()).len() - 1,
                timed.join("; ")
            );
            (trials[fastest], how)
        };
        announce(shape, TILES[best], &d, fits[best], &how);
        CHOSEN
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((key, (best, stream_k)));
        Ok((best, stream_k))
    }

    /// The step's launch: the plan `choose_plan` picks for the shape, each shape's kernel
    /// compiled and loaded on first use. A function compiled from another text (an exercise's edited
    /// kernel, a build with timeline stamps) is launched as it is, with the default tile.
    fn launch_chosen(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
        if !crate::run::loader::compiled_from(func, &KERNEL) {
            return launch_with(func, stream, ops, TILES[0], StreamK::Modelled);
        }
        match chosen_plan(func, stream, ops)? {
            (0, stream_k) => launch_with(func, stream, ops, TILES[0], stream_k),
            (best, stream_k) => {
                let f = crate::run::loader::function_in(stream, &TILE_KERNELS[best])?;
                launch_with(&f, stream, ops, TILES[best], stream_k)
            }
        }
    }

    /// One tile shape, always (the alternatives).
    fn launch_tile<const T: usize, const STREAM_K: u8>(
        func: &CudaFunction,
        stream: &CudaStream,
        ops: &GemmOperands,
    ) -> Result<()> {
        let stream_k = match STREAM_K {
            OFF => StreamK::Off,
            MODELLED => StreamK::Modelled,
            _ => StreamK::AllClusters,
        };
        launch_with(func, stream, ops, TILES[T], stream_k)
    }

    /// [`StreamK`] as a launch's const parameter (an enum cannot be one).
    const OFF: u8 = 0;
    const MODELLED: u8 = 1;
    const ALL_CLUSTERS: u8 = 2;

    fn launch_with(
        func: &CudaFunction,
        stream: &CudaStream,
        ops: &GemmOperands,
        tile: Tile,
        stream_k: StreamK,
    ) -> Result<()> {
        let s = ops.shape;
        let (maps, use_tma_store) = tensor_maps(ops, tile)?;
        // ANCHOR: grid
        // As many clusters as fit on the GPU at once (the driver says how many), then the
        // decomposition of the tiles over them, from the shape.
        let gemm = tile.gemm();
        let tiles = gemm.tiles(s) as u32;
        let k_tiles = s.k.div_ceil(BK as usize) as u32;
        let fit = gemm.clusters_fit(func, stream)?;
        let d = Decomposition::choose(tiles, k_tiles, fit, stream_k);
        let mut launch = gemm.launch(d.clusters);
        // ANCHOR_END: grid
        let (partials, flags) = if d.sk_clusters > 0 {
            // A stream-K finisher waits for the flags of later clusters, which must be running too:
            // launched cooperatively, a grid the GPU cannot hold at once is refused, not left hanging.
            launch = launch.co_resident();
            stream_k_workspace(ops, d.clusters * tile.blocks(), tile.bn)?
        } else {
            (0, 0)
        };
        launch_maps_then(
            func,
            stream,
            &maps,
            &[ops.c, partials, flags],
            ops,
            &[
                use_tma_store as i32,
                d.dp_tiles as i32,
                d.sk_clusters as i32,
                ops.workspace.epoch as i32,
            ],
            launch,
        )
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        /// The tile [`choose_plan`] picks for `shape`, and its decomposition.
        fn choose_tile(shape: crate::check::problem::Shape, fits: [u32; 6]) -> Option<(usize, Decomposition)> {
            choose_plan(shape, fits).map(|(i, _, d)| (i, d))
        }

        /// The clusters the driver answers on a 132-SM H100 for each of `TILES`: pairs 66, single 132.
        fn h100_fits() -> [u32; 6] {
            TILES.map(|t| 132 / t.blocks())
        }

        #[test]
        fn big_shapes_take_the_wide_tile_alone_or_in_pairs() {
            use crate::check::problem::Shape;
            // 4096³: 512 tiles in four whole turns of 128 blocks; the default tile, whole.
            let (i, stream_k, d) = choose_plan(Shape::square(4096), h100_fits()).unwrap();
            assert_eq!((i, stream_k, d.clusters, d.sk_clusters), (0, StreamK::Modelled, 128, 0));
            // A ragged last wave of deep tiles is shared by pairs of blocks, whose stream-K runs load
            // half the B rows a block alone would (`STREAM_K_L2_BYTES_PER_CYCLE`).
            for shape in [Shape::square(8192), Shape::new(16384, 4096, 4096)] {
                let (i, d) = choose_tile(shape, h100_fits()).unwrap();
                assert_eq!(
                    (TILES[i].bn, TILES[i].cluster_m, d.sk_clusters > 0),
                    (256, 2, true),
                    "{shape}"
                );
            }
        }

        /// Where the whole tiles' model ties, the stream-K run's slower L2 decides: the default tile with
        /// every cluster sharing the last wave is never cheaper than its modelled decomposition.
        #[test]
        fn the_candidates_include_whole_tiles_and_the_hybrid_on_every_cluster() {
            let plans: Vec<(usize, StreamK)> = candidate_plans().collect();
            assert_eq!(plans.len(), TILES.len() + 2);
            assert!(plans.contains(&(0, StreamK::Off)) && plans.contains(&(0, StreamK::AllClusters)));
            assert_eq!(stream_k_tile_cycles(TILES[0]), 1536);
            assert_eq!(stream_k_tile_cycles(TILES[1]), 1024);
        }

        #[test]
        fn small_and_skinny_shapes_take_narrow_tiles() {
            use crate::check::problem::Shape;
            // 1024³: 32 default tiles for 132 SMs, 16 K tiles each; 128 blocks of 128×64 keep 128 SMs
            // busy at 448 cycles a K tile instead of 32 at 1024 (on their own: a tie with the pairs
            // along N, which the list breaks).
            let (i, d) = choose_tile(Shape::square(1024), h100_fits()).unwrap();
            assert_eq!(
                (TILES[i].bn, TILES[i].cluster_n, d.clusters * TILES[i].blocks()),
                (64, 1, 128)
            );
            // 8192×128×8192: the default's 256 columns are half empty; 128 blocks of 128×64, whole,
            // beat sharing 64 tiles of 128×128 by K tiles at the stream-K run's L2 rate.
            let (i, d) = choose_tile(Shape::new(8192, 128, 8192), h100_fits()).unwrap();
            assert_eq!((TILES[i].bn, d.sk_clusters, d.clusters), (64, 0, 128));
        }

        #[test]
        fn a_tile_of_which_no_cluster_fits_is_never_chosen() {
            use crate::check::problem::Shape;
            // 1024³ takes 128×64 blocks on their own; where the driver places none of them (0), the
            // next best that fits: the same blocks in pairs along N.
            let mut fits = h100_fits();
            fits[4] = 0;
            let (i, d) = choose_tile(Shape::square(1024), fits).unwrap();
            assert_eq!((i, d.clusters * TILES[i].blocks()), (5, 128));
            // 4096³ with the default tile out: never the default, and a plan over clusters that fit.
            let mut fits = h100_fits();
            fits[0] = 0;
            let (i, d) = choose_tile(Shape::square(4096), fits).unwrap();
            assert!(i != 0 && d.clusters >= 1 && d.clusters <= fits[i], "{i} {d:?}");
            // Nothing fits: no choice (the launch then reports why), and no division by zero.
            assert_eq!(choose_tile(Shape::square(1024), [0; 6]), None);
            assert_eq!(Decomposition::choose(16, 16, 0, StreamK::Modelled).sk_clusters, 0);
        }

        /// The workspace the step asks the session for holds the flags and partials of a stream-K
        /// launch of every block the GPU holds at once, of any tile; one more block is refused in one
        /// line, before any launch.
        #[test]
        fn the_workspace_holds_a_stream_k_launch_of_every_block() {
            use crate::check::problem::Shape;
            use crate::run::workspace::WorkspaceView;
            let shape = Shape::square(8192);
            let need = workspace(shape, 132);
            let (scratch_at, _) = need.layout();
            let ops = GemmOperands {
                a: 0,
                b: 0,
                c: 0,
                scale_a: 0,
                scale_b: 0,
                workspace: WorkspaceView {
                    flags: 1 << 20,
                    flag_bytes: need.flag_bytes,
                    scratch: (1 << 20) + scratch_at,
                    scratch_bytes: need.scratch_bytes,
                    epoch: 3,
                },
                shape,
            };
            for tile in TILES {
                let (partials, flags) = stream_k_workspace(&ops, 132, tile.bn).unwrap();
                assert_eq!((partials, flags), ((1 << 20) + scratch_at, 1 << 20));
            }
            let refused = stream_k_workspace(&ops, 133, BN).unwrap_err().to_string();
            assert!(
                refused.contains("step 10's stream-K (133 blocks") && !refused.contains('\n'),
                "{refused}"
            );
        }

        /// The first launch at a shape times the model's best plans, its first guess first, and the
        /// default tile whole: each launch once, only tiles that fit.
        #[test]
        fn the_trials_are_the_models_best_and_the_default_tile_whole() {
            use crate::check::problem::Shape;
            let shapes = [
                Shape::square(4096),
                Shape::square(8192),
                Shape::new(768, 512, 19456),
                Shape::new(128, 8192, 8192),
                Shape::square(1024),
            ];
            for shape in shapes {
                let trials = trial_plans(shape, h100_fits());
                assert_eq!(trials.first(), choose_plan(shape, h100_fits()).as_ref(), "{shape}");
                assert!((2..=MODEL_TRIALS + 1).contains(&trials.len()), "{shape}: {trials:?}");
                let whole = (0, StreamK::Off, decomposition(shape, 0, 132, StreamK::Off));
                assert!(trials.iter().any(|p| same_launch(p, &whole)), "{shape}: {trials:?}");
                for (n, a) in trials.iter().enumerate() {
                    assert!(trials[..n].iter().all(|b| !same_launch(a, b)), "{shape}: {trials:?}");
                }
                // The model's ranking, in order, before the data-parallel plan it may have ranked lower.
                let ranked = ranked_plans(shape, h100_fits());
                assert_eq!(
                    trials[..MODEL_TRIALS.min(trials.len())],
                    ranked[..MODEL_TRIALS.min(trials.len())]
                );
            }
            // The default tile does not fit: no data-parallel plan of it, only the model's best.
            let mut fits = h100_fits();
            fits[0] = 0;
            let trials = trial_plans(Shape::square(4096), fits);
            assert!(
                !trials.is_empty() && trials.iter().all(|(i, _, _)| *i != 0),
                "{trials:?}"
            );
            assert!(trial_plans(Shape::square(4096), [0; 6]).is_empty());
        }

        /// The trials rotate as the timing loop does: after an untimed warm-up round, every plan holds
        /// every slot equally often, in at least `TRIAL_LAUNCHES` timed rounds.
        #[test]
        fn the_trials_rotate_so_that_no_plan_has_a_favourite_slot() {
            for plans in 1..=MODEL_TRIALS + 1 {
                let rounds = trial_rounds(plans);
                let timed = &rounds[1..];
                assert!(timed.len() as u32 >= TRIAL_LAUNCHES, "{plans}: {rounds:?}");
                let mut held = vec![vec![0; plans]; plans];
                for order in &rounds {
                    let mut sorted = order.clone();
                    sorted.sort();
                    assert_eq!(sorted, (0..plans).collect::<Vec<_>>(), "each plan once a round");
                }
                for order in timed {
                    for (slot, &plan) in order.iter().enumerate() {
                        held[plan][slot] += 1;
                    }
                }
                let each = timed.len() / plans;
                assert!(held.iter().flatten().all(|&n| n == each), "{plans}: {held:?}");
            }
            // Four plans (the usual trial): a warm-up and four timed rounds.
            assert_eq!(trial_rounds(4).len(), 5);
        }

        /// A trial's label names the tile and the split without the words the record's readers look
        /// for in the chosen plan (`in clusters of`, ` over `): the list follows the chosen plan.
        #[test]
        fn a_trial_label_is_short_and_leaves_the_chosen_plan_alone() {
            use crate::check::problem::Shape;
            let shape = Shape::square(8192);
            let pairs = (1, StreamK::Modelled, decomposition(shape, 1, 66, StreamK::Modelled));
            assert_eq!(plan_label(&pairs), "128×256 ×2 along M, stream-K on 66 clusters");
            let whole = (0, StreamK::Off, decomposition(shape, 0, 132, StreamK::Off));
            assert_eq!(plan_label(&whole), "128×256, data-parallel");
            let along_n = (5, StreamK::Off, decomposition(shape, 5, 66, StreamK::Off));
            assert_eq!(plan_label(&along_n), "128×64 ×2 along N, data-parallel");
        }

        /// The profiling child launches the plan its parent's record told, however it was chosen.
        #[test]
        fn a_told_plan_is_found_among_the_candidates() {
            use crate::check::problem::Shape;
            let shape = Shape::square(8192);
            let ranked = ranked_plans(shape, h100_fits());
            for plan in &ranked {
                let (i, _, d) = plan;
                let measured = format!("{}; measured at the first launch …", plan_text(shape, TILES[*i], d));
                assert!(same_launch(&told_plan_among(shape, &ranked, &measured).unwrap(), plan));
                let bare = plan_text(shape, TILES[*i], d);
                assert!(same_launch(&told_plan_among(shape, &ranked, &bare).unwrap(), plan));
            }
            // Another shape's plan, or a truncated one, is none of these.
            let (i, _, d) = ranked[0];
            let other = plan_text(Shape::square(4096), TILES[i], &d);
            assert_eq!(told_plan_among(shape, &ranked, &other), None);
            let cut = plan_text(shape, TILES[i], &d);
            assert_eq!(told_plan_among(shape, &ranked, &cut[..cut.len() - 3]), None);
        }

        #[test]
        fn the_model_ranks_the_resources() {
            // The 128×256 tile is at the tensor cores' and the shared memory's limit at once; a pair
            // halves its L2 reads, which are not the limit; 128×128 is held by the shared memory.
            assert_eq!(k_tile_cycles(TILES[0]), 1024);
            assert_eq!(k_tile_cycles(TILES[1]), 1024);
            assert_eq!(k_tile_cycles(tile(128, 1, 1, 6)), 640);
        }

        #[test]
        fn whole_waves_stay_data_parallel() {
            // 4096³ on 64 clusters: 256 tiles, four whole turns.
            let d = Decomposition::choose(256, 64, 64, StreamK::Modelled);
            assert_eq!((d.dp_tiles, d.sk_clusters, d.clusters), (256, 0, 64));
            // Without stream-K, a small shape launches one cluster per tile.
            let off = Decomposition::choose(16, 16, 66, StreamK::Off);
            assert_eq!((off.dp_tiles, off.sk_clusters, off.clusters), (16, 0, 16));
        }

        #[test]
        fn a_skinny_shape_is_shared_out_by_k_tiles() {
            // 128×8192×8192 on 66 clusters: 32 tiles of 128 K tiles, one turn of 128 K tiles whole;
            // shared by 64 of the 66 clusters, every tile cut in two runs of 64 (one partial each),
            // which the model prefers to 66 runs of 63 (up to 3 partials a tile).
            let d = Decomposition::choose(32, 128, 66, StreamK::Modelled);
            assert_eq!((d.dp_tiles, d.sk_clusters, d.clusters), (0, 64, 66));
            assert_eq!(d.k_tiles_per_cluster(), 64);
        }

        #[test]
        fn short_k_tiles_keep_whole_tiles() {
            // 1024³: 16 tiles of 16 K tiles: any sharing costs more partials than it saves.
            assert_eq!(Decomposition::choose(16, 16, 66, StreamK::Modelled).sk_clusters, 0);
            // 2048³: 64 tiles for 66 clusters: one turn either way.
            assert_eq!(Decomposition::choose(64, 32, 66, StreamK::Modelled).sk_clusters, 0);
        }

        #[test]
        fn the_last_wave_is_shared_when_it_saves_more_than_the_fixups() {
            // 8192³ on 66 clusters: 1024 tiles = 15 waves + 34 tiles of 128 K tiles: shared, 66
            // K tiles a cluster instead of a 16th turn of 128.
            let d = Decomposition::choose(1024, 128, 66, StreamK::Modelled);
            assert_eq!((d.dp_tiles, d.sk_clusters), (990, 66));
            assert_eq!(d.k_tiles_per_cluster(), 15 * 128 + (34 * 128_u64).div_ceil(66));
            // 4096³: 256 tiles = 3 waves + 58 tiles of 64 K tiles; sharing would save 7 K tiles,
            // less than two fixups: whole tiles.
            assert_eq!(Decomposition::choose(256, 64, 66, StreamK::Modelled).sk_clusters, 0);
        }
    }
}

const HOPPER: KernelFile = hopper::KERNEL;

/// The Blackwell kernel's tile, schedule, accumulators and launch: step 09's kernel, persistent, with
/// two TMEM accumulators so that a tile's epilogue overlaps the next tile's MMAs. Assembled for
/// sm_100a by the tests; not run by this project.
mod blackwell {
    use super::*;
    use crate::encoding::sm100::{self, AccumType, InputType};
    use crate::encoding::tma::TensorMap;
    use crate::encoding::{Major, LBO_IGNORED};

    /// Blocks per cluster along M: a pair, the two halves of one 2-SM MMA.
    pub const CLUSTER_M: u32 = 2;
    /// Rows of `C` per block: half the M of the 2-SM MMA, so row i of a block's half is its TMEM lane i.
    pub const BM: u32 = 128;
    /// The M of one `tcgen05.mma.cta_group::2`: the pair's rows.
    pub const MMA_M: u32 = BM * CLUSTER_M;
    /// Columns of `C` per block (shared by the pair): the N of the MMA and the TMEM columns of one
    /// accumulator.
    pub const BN: u32 = 256;
    /// Depth of one K slice (one slot of the ring): 64 bf16 = one 128-byte swizzled row.
    pub const BK: u32 = 64;
    /// Warp 0 the producer, warp 1 the MMA issuer, warps 2..5 the epilogue (they reach all 128 lanes).
    pub const THREADS: u32 = 6 * 32;
    /// Tile rows per group of the tile order: 8 rows of 256, the same 2048 rows as the Hopper twin's
    /// 16 rows of 128.
    pub const GROUP_M: u32 = super::hopper::GROUP_M * super::hopper::BM / MMA_M;
    // ANCHOR: blackwell_tmem
    /// TMEM accumulators, filled by the MMA warp and drained by the epilogue in turn: 2 × 256 columns,
    /// all 512 of an SM's TMEM (so one pair per pair of SMs, which the shared memory enforces anyway).
    pub const ACCUMULATORS: u32 = 2;
    pub const ALLOCATED_COLUMNS: u32 = ACCUMULATORS * BN;
    const _: () = assert!(ALLOCATED_COLUMNS == crate::encoding::TMEM_COLUMNS);
    // ANCHOR_END: blackwell_tmem
    /// Slots in the ring, as in step 09.
    pub const STAGES: u32 = 6;
    /// Columns of `C` per epilogue chunk (one `tcgen05.ld … .x32`), and the store box: one warp's 32 rows
    /// × 32 columns, 64-byte rows, unswizzled (the kernel rotates its writes to keep banks apart).
    pub const CHUNK_COLS: u32 = 32;
    pub const BOX_ROWS: u32 = 32;
    /// Staging buffers for `C`: two, so that one is stored while the other is filled.
    pub const STAGING_BUFFERS: u32 = 2;
    /// One slot: this block's A tile (BM × BK) and half B tile (BN/2 × BK), 32 KiB.
    pub const SLOT_BYTES: u32 = (BM + BN / 2) * BK * 2;
    /// Step 09's budget: 6 × 32 + 16 + 1 = 209 KiB (214,016 bytes). More than half of an SM's shared
    /// memory, so one block per SM: what the persistent grid and the 512 TMEM columns both assume.
    pub const SMEM_BYTES: u32 = 1024 + STAGES * SLOT_BYTES + STAGING_BUFFERS * BM * CHUNK_COLS * 2;
    /// The barriers (2 × STAGES + 2 × ACCUMULATORS) and the TMEM address word are static shared
    /// memory; leave room.
    const _: () = assert!(SMEM_BYTES + 256 <= sm100::SMEM_PER_BLOCK_MAX);
    const _: () = assert!(SMEM_BYTES + SLOT_BYTES > sm100::SMEM_PER_BLOCK_MAX);
    /// One block per SM: a second would wait in `tcgen05.alloc` until the first exits (the end of
    /// the GEMM).
    const _: () = assert!(sm100::smem_capping_tmem(SMEM_BYTES, ALLOCATED_COLUMNS) == SMEM_BYTES);
    /// tcgen05 descriptor templates: 128-byte swizzle, K-major (step 05's), the same in every slot.
    pub const A_DESC: u64 = sm100::smem_descriptor(0, LBO_IGNORED, 1024, SmemSwizzle::B128);
    pub const B_DESC: u64 = sm100::smem_descriptor(0, LBO_IGNORED, 1024, SmemSwizzle::B128);
    /// `kind::f16` instruction descriptor of the 2-SM MMA: bf16 × bf16 → fp32, K-major, M = 256, N = BN.
    pub const IDESC: u32 = sm100::instr_descriptor_f16_2sm(
        AccumType::F32,
        InputType::BF16,
        InputType::BF16,
        Major::K,
        Major::K,
        MMA_M,
        BN,
    );

    pub const KERNEL: KernelFile = KernelFile {
        path: "steps/step10_persistent/sm100.cu",
        text: KernelText::File,
        targets: Targets::Blackwell,
        entry: "gemm",
        defines: &[
            ("BM", BM as u64),
            ("BN", BN as u64),
            ("BK", BK as u64),
            ("THREADS", THREADS as u64),
            ("CLUSTER_M", CLUSTER_M as u64),
            ("STAGES", STAGES as u64),
            ("GROUP_M", GROUP_M as u64),
            ("ACCUMULATORS", ACCUMULATORS as u64),
            ("A_DESC", A_DESC),
            ("B_DESC", B_DESC),
            ("IDESC", IDESC as u64),
        ],
        max_dynamic_smem: SMEM_BYTES,
        launch,
    };

    fn launch(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
        let s = ops.shape;
        let a_map = tma::matrix_2d("A", ops.a, s.m, s.k, BM, BK, TmaSwizzle::B128)?;
        // Each block of a pair loads half of the pair's B tile: boxes of BN / 2 rows.
        let b_map = tma::matrix_2d("B", ops.b, s.n, s.k, BN / 2, BK, TmaSwizzle::B128)?;
        // A TMA store writes whole 16-byte pieces of a row: C's row stride must be a multiple of 16
        // bytes. The boxes are 32 × 32 and unswizzled (`tma::store_map_for_c` makes 128-byte swizzled
        // ones, for 64-column boxes).
        let (c_map, use_tma_store) = if s.n.is_multiple_of(8) {
            let map = tma::matrix_2d("C", ops.c, s.m, s.n, BOX_ROWS, CHUNK_COLS, TmaSwizzle::None)?;
            (map, true)
        } else {
            (TensorMap([0; 16]), false)
        };
        // ANCHOR: blackwell_grid
        // One pair per place on the GPU, or one per tile: the Hopper twin's mechanism. The occupancy
        // calculator knows nothing of TMEM; the shared memory keeps it to one block per SM.
        let gemm = PersistentGemm {
            bm: BM,
            bn: BN,
            cluster_m: CLUSTER_M,
            cluster_n: 1,
            threads: THREADS,
            smem: SMEM_BYTES,
        };
        let launch = gemm.grid(func, stream, gemm.tiles(s))?;
        // ANCHOR_END: blackwell_grid
        launch_with_maps_in(
            func,
            stream,
            &[a_map, b_map, c_map],
            ops,
            &[use_tma_store as i32],
            launch,
        )
    }
}

/// The step's workspace (stream-K's partial tiles and flags), which step 11's sm80 twin needs too.
pub use hopper::workspace;

const BLACKWELL: KernelFile = blackwell::KERNEL;

/// The sm80 twin's tile, ring and launch: step 09's twin, persistent, with the Hopper twin's schedule.
pub mod sm80 {
    use super::*;
    use crate::run::persistent::{Decomposition, StreamK};
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

    /// The partials' and the flags' addresses for `blocks` blocks: one BM×BN fp32 tile and one flag a
    /// block, in the workspace the step asks for (`hopper::workspace`, which holds as many bytes).
    fn stream_k_workspace(ops: &GemmOperands, blocks: u32) -> Result<(u64, u64)> {
        let who = format!("step 10's sm80 stream-K ({blocks} blocks of {BM}×{BN})");
        let flags = ops.workspace.flags(blocks as u64 * 4, &who)?;
        let partials = ops.workspace.scratch(blocks as u64 * (BM * BN * 4) as u64, &who)?;
        Ok((partials, flags))
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
            stream_k_workspace(ops, d.clusters)?
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
}

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
