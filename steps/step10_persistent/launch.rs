//! The Hopper kernel's launch: the tensor maps, the tile chosen for the shape (told once), and the
//! grid on the shared persistent launch.

use super::decomposition::*;
use super::tiles::*;
use super::*;
use crate::encoding::tma::{TensorMap, TmaElement};
use crate::error::Error;
use crate::run::persistent::MatrixMap;
use std::sync::Mutex;

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

/// Tells the harness the tile and decomposition chosen for a shape, and how many clusters of
/// that tile fit (`fit`): printed, kept in the record.
fn announce(shape: crate::check::problem::Shape, tile: Tile, d: &Decomposition, fit: u32) {
    let pairing = match (tile.cluster_m, tile.cluster_n) {
        (1, 1) => "on their own".to_string(),
        (m, 1) => format!("in clusters of {m} along M"),
        (_, n) => format!("in clusters of {n} along N"),
    };
    let text = format!(
        "step 10 at {shape}: {BM}×{} blocks {pairing}, {}",
        tile.bn,
        d.describe()
    );
    let clusters_fit = Some(crate::run::registry::ClustersFit {
        cluster_blocks: tile.blocks(),
        clusters: fit,
    });
    tell_plan(&KERNEL, shape, Plan { text, clusters_fit });
}

/// The tile chosen for `shape`, once per GPU context and shape: choosing loads every tile's
/// kernel and asks the driver how many of its clusters fit, which a timing loop's launches
/// should not each do.
fn chosen_tile(func: &CudaFunction, stream: &CudaStream, shape: crate::check::problem::Shape) -> Result<usize> {
    type Key = (usize, crate::check::problem::Shape);
    static CHOSEN: Mutex<Vec<(Key, usize)>> = Mutex::new(Vec::new());
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
    let Some((best, d)) = choose_tile(shape, fits) else {
        return Err(
            first_refusal.unwrap_or_else(|| Error::Other(format!("no tile of step 10 fits on this GPU at {shape}")))
        );
    };
    announce(shape, TILES[best], &d, fits[best]);
    CHOSEN.lock().unwrap_or_else(|e| e.into_inner()).push((key, best));
    Ok(best)
}

/// The step's launch: the tile shape `choose_tile` picks for the shape, each shape's kernel
/// compiled and loaded on first use. A function compiled from another text (an exercise's edited
/// kernel, a build with timeline stamps) is launched as it is, with the default tile.
pub(super) fn launch_chosen(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
    if !crate::run::loader::compiled_from(func, &KERNEL) {
        return launch_with(func, stream, ops, TILES[0], true);
    }
    match chosen_tile(func, stream, ops.shape)? {
        0 => launch_with(func, stream, ops, TILES[0], true),
        best => {
            let f = crate::run::loader::function_in(stream, &TILE_KERNELS[best])?;
            launch_with(&f, stream, ops, TILES[best], true)
        }
    }
}

/// One tile shape, always (the alternatives).
pub(super) fn launch_tile<const T: usize, const STREAM_K: bool>(
    func: &CudaFunction,
    stream: &CudaStream,
    ops: &GemmOperands,
) -> Result<()> {
    launch_with(func, stream, ops, TILES[T], STREAM_K)
}

fn launch_with(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands, tile: Tile, stream_k: bool) -> Result<()> {
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
