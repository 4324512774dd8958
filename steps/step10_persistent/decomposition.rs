//! How the Hopper kernel shares a shape's tiles among the clusters: the decomposition (whole tiles,
//! stream-K), the choice of tile, and the workspace the stream-K fixup needs.

use super::tiles::*;
use super::*;
use crate::run::workspace::WorkspaceNeed;

// ANCHOR: decomposition
/// What one partial sum costs the cluster that finishes its tile, in K tiles of main loop: a
/// 128×256 fp32 partial per block (128 KiB) written by one cluster and read back by the other,
/// with the extra epilogue and the tile's operands loaded twice. A round figure fitted to
/// development runs on an H100 (1024³ in runs of 4 K tiles, 3 partials a tile, ran 15 % slower
/// than whole tiles; the last wave of 8192³, at most 2 partials a tile, 2 % faster).
pub const FIXUP_K_TILES: u64 = 8;

/// How a shape's tiles are shared among the clusters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decomposition {
    pub tiles: u32,
    pub k_tiles: u32,
    /// Clusters launched.
    pub clusters: u32,
    /// Tiles computed whole, one cluster each: the first `dp_tiles` of the order.
    pub dp_tiles: u32,
    /// Clusters sharing the K tiles of the remaining tiles (0: none).
    pub sk_clusters: u32,
}

impl Decomposition {
    /// The decomposition of `tiles` tiles of `k_tiles` K tiles each over at most `fit` clusters.
    /// The tiles of the last, partial wave (all of them, if there are fewer tiles than
    /// clusters) are shared out by K tiles, in equal runs over as many clusters as the model finds
    /// cheapest (each run's K tiles plus a fixup per partial), when that costs less than a turn
    /// of whole tiles; otherwise every tile is whole.
    pub fn choose(tiles: u32, k_tiles: u32, fit: u32, stream_k: bool) -> Decomposition {
        // Whole tiles on as few clusters as take the same number of turns as all `fit` would
        // (`persistent::balanced`): the idle SMs' power is clock for the others under the power limit.
        let data_parallel = Decomposition {
            tiles,
            k_tiles,
            clusters: tiles.max(1).div_ceil(tiles.max(1).div_ceil(fit.max(1))),
            dp_tiles: tiles,
            sk_clusters: 0,
        };
        let sk_tiles = tiles % fit.max(1);
        if !stream_k || sk_tiles == 0 {
            return data_parallel;
        }
        // The last wave costs one turn of whole tiles: k_tiles. Shared by c clusters it costs a
        // run of ⌈sk_tiles · k_tiles / c⌉ K tiles, plus a fixup for each partial the finisher of
        // a tile adds: a tile cut by runs of r K tiles has up to ⌈k_tiles / r⌉ of them.
        let sk_k_tiles = sk_tiles as u64 * k_tiles as u64;
        let cost = |c: u64| {
            let run = sk_k_tiles.div_ceil(c);
            run + FIXUP_K_TILES * (k_tiles as u64).div_ceil(run)
        };
        let best = (1..=fit as u64).min_by_key(|&c| (cost(c), c)).unwrap_or(1);
        if cost(best) >= k_tiles as u64 {
            return data_parallel;
        }
        Decomposition {
            tiles,
            k_tiles,
            clusters: fit,
            dp_tiles: tiles - sk_tiles,
            sk_clusters: best as u32,
        }
    }

    /// The longest list of K tiles a cluster works through: the model of the time.
    pub fn k_tiles_per_cluster(&self) -> u64 {
        let k = self.k_tiles as u64;
        let dp_turns = (self.dp_tiles as u64).div_ceil(self.clusters as u64);
        let sk = if self.sk_clusters == 0 {
            0
        } else {
            ((self.tiles - self.dp_tiles) as u64 * k).div_ceil(self.sk_clusters as u64)
        };
        dp_turns * k + sk
    }

    /// What the model charges for it, in K tiles: the longest list, and where tiles are shared
    /// a fixup for each run a tile is cut into (as `choose` weighs them).
    pub fn modelled_k_tiles(&self) -> u64 {
        let k = self.k_tiles as u64;
        if self.sk_clusters == 0 {
            return self.k_tiles_per_cluster();
        }
        let run = ((self.tiles - self.dp_tiles) as u64 * k).div_ceil(self.sk_clusters as u64);
        self.k_tiles_per_cluster() + FIXUP_K_TILES * k.div_ceil(run)
    }

    /// One line for the console and the record.
    pub fn describe(&self) -> String {
        if self.sk_clusters == 0 {
            format!(
                "data-parallel: {} tiles of {} K tiles over {} clusters ({} turns, {} K tiles a cluster)",
                self.tiles,
                self.k_tiles,
                self.clusters,
                self.tiles.div_ceil(self.clusters),
                self.k_tiles_per_cluster()
            )
        } else {
            let sk_tiles = self.tiles - self.dp_tiles;
            format!(
                "stream-K: {} of {} tiles whole over {} clusters, then {} tiles × {} K tiles shared by {} clusters (≤ {} K tiles a cluster in all)",
                self.dp_tiles,
                self.tiles,
                self.clusters,
                sk_tiles,
                self.k_tiles,
                self.sk_clusters,
                self.k_tiles_per_cluster()
            )
        }
    }
}
// ANCHOR_END: decomposition

// ANCHOR: choice
/// The tile shape for `shape`: the one whose decomposition over the clusters that fit (`fits[i]`
/// for `TILES[i]`, asked of the driver) has the least modelled time, K tiles × cycles a K tile;
/// on a tie, the earlier in the list. A tile of which no cluster fits (0) is never chosen; `None`
/// if none fits.
pub fn choose_tile(shape: crate::check::problem::Shape, fits: [u32; 6]) -> Option<(usize, Decomposition)> {
    let k_tiles = shape.k.div_ceil(BK as usize) as u32;
    TILES
        .iter()
        .zip(fits)
        .enumerate()
        .filter(|(_, (_, fit))| *fit > 0)
        .map(|(i, (t, fit))| {
            let tiles = shape.tiles(t.cluster_m * BM, t.cluster_n * t.bn) as u32;
            let d = Decomposition::choose(tiles, k_tiles, fit, true);
            ((d.modelled_k_tiles() * k_tile_cycles(*t), i), d)
        })
        .min_by_key(|(cost_then_place, _)| *cost_then_place)
        .map(|((_, i), d)| (i, d))
}
// ANCHOR_END: choice

// ANCHOR: workspace
/// Blocks a launch has flags for: more than any GPU holds at once (one block per SM).
const FLAG_BLOCKS: u64 = 1024;

/// What step 10 needs of the session's workspace (`workspace::Workspace`): one flag per consumer
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
/// launch raises its flags to its own epoch (`ops.workspace.epoch`, one more than the session's
/// last launch), so they never need clearing.
pub(super) fn stream_k_workspace(ops: &GemmOperands, blocks: u32, bn: u32) -> Result<(u64, u64)> {
    let who = format!("step 10's stream-K ({blocks} blocks of 128×{bn})");
    let flags = ops.workspace.flags(blocks as u64 * CONSUMERS as u64 * 4, &who)?;
    let partials = ops.workspace.scratch(blocks as u64 * (BM * bn * 4) as u64, &who)?;
    Ok((partials, flags))
}
// ANCHOR_END: workspace

#[cfg(test)]
mod tests {
    use super::*;

    /// The clusters the driver answers on a 132-SM H100 for each of `TILES`: pairs 66, single 132.
    fn h100_fits() -> [u32; 6] {
        TILES.map(|t| 132 / t.blocks())
    }

    #[test]
    fn big_shapes_take_the_default_tile() {
        use crate::check::problem::Shape;
        for shape in [Shape::square(4096), Shape::square(8192), Shape::new(16384, 4096, 4096)] {
            assert_eq!(choose_tile(shape, h100_fits()).unwrap().0, 0, "{shape}");
        }
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
        // 8192×128×8192: the default's 256 columns are half empty; 128 columns fill the tile.
        let (i, _) = choose_tile(Shape::new(8192, 128, 8192), h100_fits()).unwrap();
        assert_eq!(TILES[i].bn, 128);
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
        assert_eq!(Decomposition::choose(16, 16, 0, true).sk_clusters, 0);
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
        let d = Decomposition::choose(256, 64, 64, true);
        assert_eq!((d.dp_tiles, d.sk_clusters, d.clusters), (256, 0, 64));
        // Without stream-K, a small shape launches one cluster per tile.
        let off = Decomposition::choose(16, 16, 66, false);
        assert_eq!((off.dp_tiles, off.sk_clusters, off.clusters), (16, 0, 16));
    }

    #[test]
    fn a_skinny_shape_is_shared_out_by_k_tiles() {
        // 128×8192×8192 on 66 clusters: 32 tiles of 128 K tiles, one turn of 128 K tiles whole;
        // shared by 64 of the 66 clusters, every tile cut in two runs of 64 (one partial each),
        // which the model prefers to 66 runs of 63 (up to 3 partials a tile).
        let d = Decomposition::choose(32, 128, 66, true);
        assert_eq!((d.dp_tiles, d.sk_clusters, d.clusters), (0, 64, 66));
        assert_eq!(d.k_tiles_per_cluster(), 64);
    }

    #[test]
    fn short_k_tiles_keep_whole_tiles() {
        // 1024³: 16 tiles of 16 K tiles: any sharing costs more partials than it saves.
        assert_eq!(Decomposition::choose(16, 16, 66, true).sk_clusters, 0);
        // 2048³: 64 tiles for 66 clusters: one turn either way.
        assert_eq!(Decomposition::choose(64, 32, 66, true).sk_clusters, 0);
    }

    #[test]
    fn the_last_wave_is_shared_when_it_saves_more_than_the_fixups() {
        // 8192³ on 66 clusters: 1024 tiles = 15 waves + 34 tiles of 128 K tiles: shared, 66
        // K tiles a cluster instead of a 16th turn of 128.
        let d = Decomposition::choose(1024, 128, 66, true);
        assert_eq!((d.dp_tiles, d.sk_clusters), (990, 66));
        assert_eq!(d.k_tiles_per_cluster(), 15 * 128 + (34 * 128_u64).div_ceil(66));
        // 4096³: 256 tiles = 3 waves + 58 tiles of 64 K tiles; sharing would save 7 K tiles,
        // less than two fixups: whole tiles.
        assert_eq!(Decomposition::choose(256, 64, 66, true).sk_clusters, 0);
    }
}
