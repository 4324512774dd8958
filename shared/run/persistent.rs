//! What the persistent kernels share (steps 10 and 11, their alternatives and their Blackwell twins):
//! - [`PersistentGemm`], the launch builder: a block's tile, its cluster (which operand the cluster's
//!   blocks share), the grid of as many clusters as fit on the GPU at once (asked of the driver once per
//!   kernel), optionally trimmed to as few as take the same number of turns ([`balanced`]); the caller
//!   makes the launch cooperative ([`Launch::co_resident`]) where its blocks wait for each other;
//! - [`tensor_map`] and [`store_map_for_c`], one cache of the tensor maps every launch passes, keyed by
//!   all that an encoded map depends on (operand, element, shape, box, swizzle);
//! - [`Workspace`], the one global-memory workspace a [`crate::run::session::Session`] owns for the
//!   launches that need one (step 10's stream-K partials and flags, step 11's converted B), handed to
//!   each launch as a [`WorkspaceView`] in its [`crate::run::registry::GemmOperands`], with a new epoch.
//!
//! A step whose kernels need workspace says how much for a shape ([`crate::run::registry::Step::workspace`]);
//! the session sizes the workspace when it loads the step, before any launch. A launch takes what it
//! needs with [`WorkspaceView::flags`] and [`WorkspaceView::scratch`], which refuse in one line when
//! the workspace is smaller than that.

use crate::check::problem::Shape;
use crate::encoding::tma::{self, TensorMap, TmaElement, TmaSwizzle};
use crate::error::{Error, Result};
use crate::run::registry::{max_active_clusters, Launch};
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, DevicePtr, LaunchConfig};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

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
        // A function the loader does not know is asked every time (every kernel of the crate is known).
        let Some(load) = crate::run::loader::load_of(function) else {
            return max_active_clusters(function, stream, &self.launch(1));
        };
        let key = (load, self.threads, self.smem, self.blocks());
        let known = CLUSTERS_FIT
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .and_then(|fit| fit.get(&key).copied());
        if let Some(clusters) = known {
            return Ok(clusters);
        }
        let clusters = max_active_clusters(function, stream, &self.launch(1))?;
        CLUSTERS_FIT
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(std::collections::HashMap::new)
            .insert(key, clusters);
        Ok(clusters)
    }

    /// How many blocks of this kernel fit on the GPU at once, for a kernel without clusters (the sm80
    /// twin's: GPUs before sm_90 have none): blocks per SM (the driver's occupancy calculator) × SMs.
    /// Kept per load as [`PersistentGemm::clusters_fit`] keeps its answer.
    pub fn blocks_fit(&self, function: &CudaFunction, stream: &CudaStream) -> Result<u32> {
        assert_eq!(self.blocks(), 1, "a kernel in clusters asks clusters_fit");
        let Some(load) = crate::run::loader::load_of(function) else {
            return self.ask_blocks_fit(function, stream);
        };
        let key = (load, self.threads, self.smem, 1);
        let known = CLUSTERS_FIT
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .and_then(|fit| fit.get(&key).copied());
        if let Some(blocks) = known {
            return Ok(blocks);
        }
        let blocks = self.ask_blocks_fit(function, stream)?;
        CLUSTERS_FIT
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert_with(std::collections::HashMap::new)
            .insert(key, blocks);
        Ok(blocks)
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
/// (64, every turn full), and the SMs left idle draw no power, which under the board's power limit is
/// clock the others can use.
pub fn balanced(launch: Launch, tiles: usize) -> Launch {
    let cluster_size = launch.cluster_size().max(1);
    let clusters = (launch.config.grid_dim.0 / cluster_size).max(1) as usize;
    let turns = tiles.max(1).div_ceil(clusters);
    let mut launch = launch;
    launch.config.grid_dim.0 = (tiles.max(1).div_ceil(turns) as u32) * cluster_size;
    launch
}

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

// ---------------------------------------------------------------------------------------------
// The workspace
// ---------------------------------------------------------------------------------------------

/// What a kernel needs of the session's workspace at a shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WorkspaceNeed {
    /// Bytes of flags: 32-bit words that hold epochs and nothing else (zeroed when the workspace is
    /// allocated; a launch raises a flag to its epoch, so flags are never cleared).
    pub flag_bytes: u64,
    /// Bytes of scratch, which a launch writes before it reads them (partial sums, a converted operand).
    pub scratch_bytes: u64,
}

impl WorkspaceNeed {
    pub const NONE: WorkspaceNeed = WorkspaceNeed {
        flag_bytes: 0,
        scratch_bytes: 0,
    };

    /// Room for both.
    pub fn max(self, other: WorkspaceNeed) -> WorkspaceNeed {
        WorkspaceNeed {
            flag_bytes: self.flag_bytes.max(other.flag_bytes),
            scratch_bytes: self.scratch_bytes.max(other.scratch_bytes),
        }
    }

    /// Where the scratch starts: after the flags, on a 1024-byte boundary (any TMA box and swizzle may
    /// address it); and the bytes in all.
    pub fn layout(&self) -> (u64, u64) {
        let scratch_at = self.flag_bytes.next_multiple_of(WORKSPACE_ALIGN);
        (scratch_at, scratch_at + self.scratch_bytes)
    }

    fn is_none(&self) -> bool {
        *self == WorkspaceNeed::NONE
    }
}

/// Alignment of the scratch within the workspace.
pub const WORKSPACE_ALIGN: u64 = 1024;

/// What a step's kernels need of the workspace at a shape, on a GPU of `sms` SMs (the grid of a
/// persistent kernel is at most one block per SM).
pub type WorkspaceFn = fn(Shape, u32) -> WorkspaceNeed;

/// The session's workspace as one launch sees it: the flags, the scratch after them, and the launch's
/// epoch. All zero ([`Default`]) where there is none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WorkspaceView {
    /// The flags: `flag_bytes` bytes of 32-bit words holding epochs of earlier launches (or 0).
    pub flags: u64,
    pub flag_bytes: u64,
    /// The scratch: `scratch_bytes` bytes, 1024-byte aligned, of whatever an earlier launch left.
    pub scratch: u64,
    pub scratch_bytes: u64,
    /// This launch's epoch: larger than any a flag holds, by one more than the session's last launch.
    pub epoch: u32,
}

impl WorkspaceView {
    /// The flags' address, if there are at least `bytes` of them; otherwise one line naming `who`.
    pub fn flags(&self, bytes: u64, who: &str) -> Result<u64> {
        self.take(self.flags, self.flag_bytes, bytes, "flags", who)
    }

    /// The scratch's address, if there are at least `bytes` of it; otherwise one line naming `who`.
    pub fn scratch(&self, bytes: u64, who: &str) -> Result<u64> {
        self.take(self.scratch, self.scratch_bytes, bytes, "scratch", who)
    }

    fn take(&self, address: u64, held: u64, bytes: u64, what: &str, who: &str) -> Result<u64> {
        if bytes == 0 {
            return Ok(address);
        }
        if address == 0 || held < bytes {
            return Err(Error::Other(format!(
                "{who} needs {bytes} bytes of workspace {what} at this shape, and the session's workspace has {held}: \
                 its step must say so (Step::workspace), so that the session sizes the workspace before launching"
            )));
        }
        Ok(address)
    }
}

/// The one global-memory workspace of a session: flags first, at fixed places, then scratch
/// ([`WorkspaceNeed::layout`]). Allocated and zeroed on first need, grown (and zeroed again) when a
/// step needs more, never shrunk; the memory is a `CudaSlice`, which holds its context, so it is freed
/// in that context when the session ends. Each launch takes a view with a new epoch
/// ([`Workspace::next_launch`]): flags are raised to epochs, never cleared, and since every launch's
/// epoch is one more than the last, a flag left by any earlier launch (of any kernel) is older.
pub struct Workspace {
    memory: Option<CudaSlice<u8>>,
    held: WorkspaceNeed,
    epoch: AtomicU32,
}

impl Default for Workspace {
    fn default() -> Self {
        Workspace::new()
    }
}

impl Workspace {
    pub fn new() -> Workspace {
        Workspace {
            memory: None,
            held: WorkspaceNeed::NONE,
            epoch: AtomicU32::new(0),
        }
    }

    /// What it holds room for.
    pub fn held(&self) -> WorkspaceNeed {
        self.held
    }

    /// Makes room for `need` on `stream`'s context: nothing when there is room; otherwise the old
    /// memory is freed once the stream's launches are done with it, and memory for both the old and
    /// the new need is allocated and zeroed on `stream` (so before any later launch on it).
    pub fn ensure(&mut self, stream: &Arc<CudaStream>, need: WorkspaceNeed) -> Result<()> {
        let want = self.held.max(need);
        if want == self.held && (self.memory.is_some() || want.is_none()) {
            return Ok(());
        }
        if self.memory.is_some() {
            stream.synchronize().map_err(Error::cuda("waiting for the GPU"))?;
            self.memory = None;
        }
        let (_, bytes) = want.layout();
        let fresh = stream.alloc_zeros::<u8>(bytes as usize).map_err(|e| {
            Error::OutOfMemory(format!(
                "the workspace ({} MiB: {} bytes of flags, {} of scratch) does not fit in the GPU's free memory ({e})",
                bytes.div_ceil(1 << 20),
                want.flag_bytes,
                want.scratch_bytes
            ))
        })?;
        self.memory = Some(fresh);
        self.held = want;
        Ok(())
    }

    /// One more than the last launch's epoch (the first is 1: zeroed flags are older than every launch).
    fn next_epoch(&self) -> u32 {
        self.epoch.fetch_add(1, Ordering::Relaxed).wrapping_add(1)
    }

    /// The workspace for one launch on `stream`, with a new epoch (one more than the last launch's).
    pub fn next_launch(&self, stream: &CudaStream) -> WorkspaceView {
        let epoch = self.next_epoch();
        match &self.memory {
            None => WorkspaceView {
                epoch,
                ..WorkspaceView::default()
            },
            Some(memory) => {
                let (base, _recorded) = memory.device_ptr(stream);
                let (scratch_at, _) = self.held.layout();
                WorkspaceView {
                    flags: base,
                    flag_bytes: self.held.flag_bytes,
                    scratch: base + scratch_at,
                    scratch_bytes: self.held.scratch_bytes,
                    epoch,
                }
            }
        }
    }
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

    #[test]
    fn the_scratch_follows_the_flags_on_a_1024_byte_boundary() {
        let need = WorkspaceNeed {
            flag_bytes: 4 * 128 * 64,
            scratch_bytes: 4096 * 4096 * 2,
        };
        assert_eq!(need.layout(), (32768, 32768 + 4096 * 4096 * 2));
        let odd = WorkspaceNeed {
            flag_bytes: 4,
            scratch_bytes: 10,
        };
        assert_eq!(odd.layout(), (1024, 1034));
        assert_eq!(WorkspaceNeed::NONE.layout(), (0, 0));
        // Growing keeps room for both needs.
        let more = need.max(WorkspaceNeed {
            flag_bytes: 8,
            scratch_bytes: 1 << 30,
        });
        assert_eq!((more.flag_bytes, more.scratch_bytes), (4 * 128 * 64, 1 << 30));
    }

    #[test]
    fn a_launch_takes_what_it_needs_or_refuses_in_one_line() {
        let view = WorkspaceView {
            flags: 0x1000,
            flag_bytes: 64,
            scratch: 0x1400,
            scratch_bytes: 4096,
            epoch: 7,
        };
        assert_eq!(view.flags(64, "step 10").unwrap(), 0x1000);
        assert_eq!(view.scratch(4096, "step 10").unwrap(), 0x1400);
        let refused = view.scratch(4097, "step 10's stream-K").unwrap_err().to_string();
        assert!(
            refused.contains("step 10's stream-K needs 4097 bytes of workspace scratch") && !refused.contains('\n'),
            "{refused}"
        );
        // No workspace at all: nothing needed is fine, anything needed is refused.
        let none = WorkspaceView::default();
        assert_eq!(none.flags(0, "x").unwrap(), 0);
        assert!(none.flags(4, "x").is_err());
    }

    #[test]
    fn every_launch_has_a_new_epoch() {
        let workspace = Workspace::new();
        let epochs: Vec<u32> = (0..3).map(|_| workspace.next_epoch()).collect();
        assert_eq!(epochs, [1, 2, 3]);
        assert_eq!(workspace.held(), WorkspaceNeed::NONE);
    }
}
