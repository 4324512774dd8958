//! What the persistent kernels share (steps 10 and 11, their alternatives and their Blackwell twins):
//! - [`PersistentGemm`], the launch builder: a block's tile, its cluster (which operand the cluster's
//!   blocks share), the grid of as many clusters as fit on the GPU at once (asked of the driver once per
//!   kernel), optionally trimmed to as few as take the same number of turns ([`balanced`]); the caller
//!   makes the launch cooperative ([`Launch::co_resident`]) where its blocks wait for each other;
//! - [`Decomposition`], how a shape's tiles are shared among the clusters (whole, or the last wave by
//!   K tiles: stream-K), the schedule step 10 and its twins launch, and [`stream_k_workspace`], where
//!   a stream-K launch's partial tiles and flags lie in the session's workspace;
//! - [`tensor_map`] and [`store_map_for_c`], one cache of the tensor maps every launch passes, keyed by
//!   all that an encoded map depends on (operand, element, shape, box, swizzle).
//!
//! The session's workspace, which step 10's stream-K and step 11's converted B take their flags and
//! scratch from, is [`crate::run::workspace`].

use crate::check::problem::Shape;
use crate::encoding::tma::{self, TensorMap, TmaElement, TmaSwizzle};
use crate::error::{Error, Result};
use crate::run::registry::{max_active_clusters, GemmOperands, Launch};
use cudarc::driver::{CudaFunction, CudaStream, LaunchConfig};
use std::sync::Mutex;

// ---------------------------------------------------------------------------------------------
// The launch builder
// ---------------------------------------------------------------------------------------------

/// A persistent GEMM kernel's launch geometry: one row of clusters, each block a `bm`×`bn` tile of `C`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PersistentGemm {
    /// Rows and columns of `C` per block.
    pub bm: u32,
    pub bn: u32,
    /// Blocks per cluster along M (they share each B tile, each loading `bn / cluster_m` of its rows
    /// for all of them) and along N (they share each A tile likewise). One of the two is 1.
    pub cluster_m: u32,
    pub cluster_n: u32,
    pub threads: u32,
    /// Dynamic shared memory per block, in bytes.
    pub smem: u32,
}

impl PersistentGemm {
    /// Blocks per cluster.
    pub const fn blocks(&self) -> u32 {
        self.cluster_m * self.cluster_n
    }

    /// The cluster tiles of `C` at `shape`: what the clusters share out.
    pub fn tiles(&self, shape: Shape) -> usize {
        shape.tiles(self.cluster_m * self.bm, self.cluster_n * self.bn)
    }

    /// The rows of A and of B each block loads per K tile: its own tile's, or its slice of the
    /// operand its cluster shares (the TMA boxes' rows).
    pub const fn box_rows(&self) -> (u32, u32) {
        (self.bm / self.cluster_n, self.bn / self.cluster_m)
    }

    /// How many clusters of this kernel fit on the GPU at once: asked of the driver
    /// (`cuOccupancyMaxActiveClusters`) once per kernel and configuration, and kept, since the GPU does
    /// not change during a run and the launches of a timing loop should not each ask. A kernel of which
    /// no cluster fits is refused in one line.
    pub fn clusters_fit(&self, function: &CudaFunction, stream: &CudaStream) -> Result<u32> {
        self.kept_fit(function, self.blocks(), || {
            max_active_clusters(function, stream, &self.launch(1))
        })
    }

    /// How many blocks of this kernel fit on the GPU at once, for a kernel without clusters (the sm80
    /// twin's: GPUs before sm_90 have none): blocks per SM (the driver's occupancy calculator) × SMs.
    /// Kept per load as [`PersistentGemm::clusters_fit`] keeps its answer.
    pub fn blocks_fit(&self, function: &CudaFunction, stream: &CudaStream) -> Result<u32> {
        assert_eq!(self.blocks(), 1, "a kernel in clusters asks clusters_fit");
        self.kept_fit(function, 1, || self.ask_blocks_fit(function, stream))
    }

    /// The driver's answer `ask` gives for `function` in this configuration, asked once per load
    /// (`loader::load_of`) and kept; a function the loader does not know is asked every time (every
    /// kernel of the crate is known).
    fn kept_fit(&self, function: &CudaFunction, blocks: u32, ask: impl FnOnce() -> Result<u32>) -> Result<u32> {
        let Some(load) = crate::run::loader::load_of(function) else {
            return ask();
        };
        let key = (load, self.threads, self.smem, blocks);
        let known = CLUSTERS_FIT
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .and_then(|fit| fit.get(&key).copied());
        if let Some(fit) = known {
            return Ok(fit);
        }
        let fit = ask()?;
        CLUSTERS_FIT
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(std::collections::HashMap::new)
            .insert(key, fit);
        Ok(fit)
    }

    fn ask_blocks_fit(&self, function: &CudaFunction, stream: &CudaStream) -> Result<u32> {
        use cudarc::driver::sys::CUdevice_attribute as Attr;
        let per_sm = function
            .occupancy_max_active_blocks_per_multiprocessor(self.threads, self.smem as usize, None)
            .map_err(Error::cuda("asking how many blocks fit on an SM"))?;
        let sms = stream
            .context()
            .attribute(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(Error::cuda("reading the GPU's SM count"))? as u32;
        if per_sm == 0 {
            return Err(Error::Other(format!(
                "this GPU cannot hold a block of {} threads with {} bytes of shared memory",
                self.threads, self.smem
            )));
        }
        Ok(per_sm * sms)
    }

    /// The launch of `clusters` clusters in a row.
    pub fn launch(&self, clusters: u32) -> Launch {
        let config = LaunchConfig {
            grid_dim: (clusters.max(1) * self.blocks(), 1, 1),
            block_dim: (self.threads, 1, 1),
            shared_mem_bytes: self.smem,
        };
        Launch::clustered(config, (self.blocks(), 1, 1))
    }

    /// The persistent grid for `tiles` tiles: as many clusters as fit at once, or one per tile when
    /// there are fewer tiles.
    pub fn grid(&self, function: &CudaFunction, stream: &CudaStream, tiles: usize) -> Result<Launch> {
        let fit = self.clusters_fit(function, stream)?;
        Ok(self.launch(fit.min(tiles.max(1) as u32)))
    }

    /// [`PersistentGemm::grid`] trimmed to the fewest clusters that finish the tiles in as many turns
    /// ([`balanced`]).
    pub fn balanced_grid(&self, function: &CudaFunction, stream: &CudaStream, tiles: usize) -> Result<Launch> {
        Ok(balanced(self.grid(function, stream, tiles)?, tiles))
    }
}

/// A kernel (its load, which no other kernel shares, [`crate::run::loader::LoadId`]) and the
/// configuration the driver was asked about: threads, shared memory, blocks per cluster.
type ClusterQuestion = (crate::run::loader::LoadId, u32, u32, u32);

/// Every answer `cuOccupancyMaxActiveClusters` gave this process ([`PersistentGemm::clusters_fit`]),
/// kept so that launches reuse it and the run's record can carry it ([`clusters_fit`]).
static CLUSTERS_FIT: Mutex<Option<std::collections::HashMap<ClusterQuestion, u32>>> = Mutex::new(None);

/// What the driver answered for `function`, if this process asked: (blocks per cluster, clusters
/// that fit on the GPU at once). With several configurations asked about, the one with most clusters.
pub fn clusters_fit(function: &CudaFunction) -> Option<(u32, u32)> {
    let load = crate::run::loader::load_of(function)?;
    CLUSTERS_FIT
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()?
        .iter()
        .filter(|(asked, _)| asked.0 == load)
        .map(|(asked, clusters)| (asked.3, *clusters))
        .max_by_key(|fit| fit.1)
}

/// The same launch with as few clusters as finish the `tiles` in as many turns as all of them would:
/// ⌈tiles / ⌈tiles / clusters⌉⌉. A persistent grid whose last turn is ragged (66 clusters, 256 tiles:
/// 4 turns, the last with 58 busy) does the same work in the same number of turns with fewer clusters
/// (64, every turn full).
pub fn balanced(launch: Launch, tiles: usize) -> Launch {
    let cluster_size = launch.cluster_size().max(1);
    let clusters = (launch.config.grid_dim.0 / cluster_size).max(1) as usize;
    let turns = tiles.max(1).div_ceil(clusters);
    let mut launch = launch;
    launch.config.grid_dim.0 = (tiles.max(1).div_ceil(turns) as u32) * cluster_size;
    launch
}

// ---------------------------------------------------------------------------------------------
// The decomposition: whole tiles, and stream-K for a ragged last wave
// ---------------------------------------------------------------------------------------------

// ANCHOR: decomposition
/// What one partial sum costs the cluster that finishes its tile, in K tiles of main loop: a
/// 128×256 fp32 partial per block (128 KiB) written by one cluster and read back by the other,
/// with the extra epilogue and the tile's operands loaded twice. A round figure fitted to
/// development runs on an H100 (1024³ in runs of 4 K tiles, 3 partials a tile, ran 15 % slower
/// than whole tiles; the last wave of 8192³, at most 2 partials a tile, 2 % faster).
pub const FIXUP_K_TILES: u64 = 8;

/// Whether, and how, a decomposition shares the tiles of a ragged last wave by K tiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamK {
    /// Never: every tile whole (the `data-parallel` alternative).
    Off,
    /// Where the model expects it to pay ([`Decomposition::choose`]): the step's own launch.
    Modelled,
    /// Always, over every cluster that fits: whole turns, then the last wave's K tiles dealt out in
    /// equal runs to all the clusters (the `stream-k` alternative: the best hybrid on the whole GPU).
    AllClusters,
}

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
    pub fn choose(tiles: u32, k_tiles: u32, fit: u32, stream_k: StreamK) -> Decomposition {
        // Whole tiles on as few clusters as take the same number of turns as all `fit` would
        // ([`balanced`]).
        let data_parallel = Decomposition {
            tiles,
            k_tiles,
            clusters: tiles.max(1).div_ceil(tiles.max(1).div_ceil(fit.max(1))),
            dp_tiles: tiles,
            sk_clusters: 0,
        };
        let sk_tiles = tiles % fit.max(1);
        if stream_k == StreamK::Off || sk_tiles == 0 {
            return data_parallel;
        }
        if stream_k == StreamK::AllClusters {
            return Decomposition {
                tiles,
                k_tiles,
                clusters: fit,
                dp_tiles: tiles - sk_tiles,
                sk_clusters: fit,
            };
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
            let turns = self.tiles.div_ceil(self.clusters);
            format!(
                "data-parallel: {} tiles of {} K tiles over {} clusters ({turns} turn{}, {} K tiles a cluster)",
                self.tiles,
                self.k_tiles,
                self.clusters,
                if turns == 1 { "" } else { "s" },
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

// ANCHOR: stream_k_workspace
/// A stream-K launch's partials and flags, taken from the session's workspace (which the step's
/// `workspace` function sized): one `bm`×`bn` fp32 partial tile and `flags_per_block` flags (the
/// Hopper kernel raises one per consumer warpgroup, the sm80 twins one per block) for each of
/// `blocks` blocks. Each launch raises its flags to its own epoch (`ops.workspace.epoch`, newer than
/// any earlier launch's), so they never need clearing. `who` names the launch in the one line that
/// refuses a workspace too small. Returns the partials' address, then the flags'.
pub fn stream_k_workspace(
    ops: &GemmOperands,
    who: &str,
    blocks: u32,
    (bm, bn): (u32, u32),
    flags_per_block: u32,
) -> Result<(u64, u64)> {
    let who = format!("{who} ({blocks} blocks of {bm}×{bn})");
    let flags = ops.workspace.flags(blocks as u64 * flags_per_block as u64 * 4, &who)?;
    let partials = ops.workspace.scratch(blocks as u64 * (bm * bn * 4) as u64, &who)?;
    Ok((partials, flags))
}
// ANCHOR_END: stream_k_workspace

// ---------------------------------------------------------------------------------------------
// The tensor-map cache
// ---------------------------------------------------------------------------------------------

/// A tensor map of a row-major matrix as a launch asks for it: everything the encoded map depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MatrixMap {
    /// For messages: `A`, `B (converted)`.
    pub name: &'static str,
    pub element: TmaElement,
    pub address: u64,
    pub rows: usize,
    pub cols: usize,
    pub box_rows: u32,
    pub box_cols: u32,
    pub swizzle: TmaSwizzle,
}

/// A cached map: the request, whether it is `C`'s store map, the map, and whether `C` is stored by TMA.
type CachedMap = (MatrixMap, bool, TensorMap, bool);

/// Every map encoded in this process, up to [`MAPS_KEPT`]. A map is a function of its request alone
/// (the address included), so an entry is never stale: memory freed and allocated again at the same
/// address with the same shape has the same map.
static MAPS: Mutex<Vec<CachedMap>> = Mutex::new(Vec::new());
/// The cache is cleared when it holds this many maps (a run uses a few dozen: three per kernel and
/// input set).
const MAPS_KEPT: usize = 512;

fn cached(
    request: MatrixMap,
    store: bool,
    encode: impl FnOnce() -> Result<(TensorMap, bool)>,
) -> Result<(TensorMap, bool)> {
    let mut known = MAPS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, _, map, tma_store)) = known.iter().find(|(r, s, _, _)| *r == request && *s == store) {
        return Ok((*map, *tma_store));
    }
    let (map, tma_store) = encode()?;
    if known.len() >= MAPS_KEPT {
        known.clear();
    }
    known.push((request, store, map, tma_store));
    Ok((map, tma_store))
}

/// The tensor map of `request`, encoded once and kept: encoding three maps costs the host a few
/// microseconds a launch, as long as a 1024³ GEMM takes on the GPU.
pub fn tensor_map(request: MatrixMap) -> Result<TensorMap> {
    let m = request;
    cached(m, false, || {
        let map = tma::matrix_2d_of(
            m.element, m.name, m.address, m.rows, m.cols, m.box_rows, m.box_cols, m.swizzle,
        )?;
        Ok((map, true))
    })
    .map(|(map, _)| map)
}

/// `C`'s store map (bf16 or fp32) and whether the TMA may store it: a row stride that is not a
/// multiple of 16 bytes gets an empty map and `false` (the kernel then stores with plain writes), as
/// [`tma::store_map_for_c`] and [`tma::store_map_for_c_f32`] decide. Kept like [`tensor_map`].
pub fn store_map_for_c(request: MatrixMap) -> Result<(TensorMap, bool)> {
    let m = request;
    cached(m, true, || match m.element {
        TmaElement::F32 => tma::store_map_for_c_f32(m.address, m.rows, m.cols, m.box_rows, m.box_cols, m.swizzle),
        TmaElement::Bf16 if m.swizzle == TmaSwizzle::B128 => {
            tma::store_map_for_c(m.address, m.rows, m.cols, m.box_rows, m.box_cols)
        }
        _ => Err(Error::Other(format!(
            "tensor map {}: C is stored as bf16 with the 128-byte swizzle or as fp32 ({:?}, {:?} asked)",
            m.name, m.element, m.swizzle
        ))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(clusters: u32) -> Launch {
        PersistentGemm {
            bm: 128,
            bn: 256,
            cluster_m: 2,
            cluster_n: 1,
            threads: 384,
            smem: 0,
        }
        .launch(clusters)
    }

    #[test]
    fn a_balanced_grid_keeps_the_turns_and_drops_the_idle_clusters() {
        // 4096³ and 8192³ with 256 × 256 cluster tiles on 66 clusters: 4 and 16 turns, 64 clusters.
        assert_eq!(balanced(grid(66), 256).config.grid_dim.0, 128);
        assert_eq!(balanced(grid(66), 1024).config.grid_dim.0, 128);
        // Whole turns already: nothing changes.
        assert_eq!(balanced(grid(66), 132).config.grid_dim.0, 132);
        // Fewer tiles than clusters (the grid gave one cluster per tile): one turn.
        assert_eq!(balanced(grid(16), 16).config.grid_dim.0, 32);
        // 600 tiles: 10 turns of 66 (the last with 6), or 10 turns of 60.
        assert_eq!(balanced(grid(66), 600).config.grid_dim.0, 120);
        assert_eq!(balanced(grid(66), 600).cluster, (2, 1, 1));
    }

    #[test]
    fn a_cluster_shares_the_operand_it_lies_along() {
        let along_m = PersistentGemm {
            bm: 128,
            bn: 256,
            cluster_m: 2,
            cluster_n: 1,
            threads: 384,
            smem: 1024,
        };
        // Each block loads its 128 rows of A and half of the pair's 256 rows of B.
        assert_eq!(along_m.box_rows(), (128, 128));
        assert_eq!(along_m.tiles(Shape::square(4096)), 16 * 16);
        let along_n = PersistentGemm {
            bm: 256,
            bn: 128,
            cluster_m: 1,
            cluster_n: 2,
            ..along_m
        };
        assert_eq!(along_n.box_rows(), (128, 128));
        assert_eq!(along_n.tiles(Shape::new(4096, 1000, 64)), 16 * 4);
        let launch = along_n.launch(66);
        assert_eq!(
            (
                launch.config.grid_dim,
                launch.cluster,
                launch.config.block_dim.0,
                launch.cooperative
            ),
            ((132, 1, 1), (2, 1, 1), 384, false)
        );
    }
}
