//! The Hopper kernel's launch: the workspace of its stream-K, the tensor maps, the choice of a plan
//! at the first launch at a shape (the model's, or the fastest of its best), and the launch itself.

use super::*;
use crate::encoding::tma::{TensorMap, TmaElement};
use crate::error::Error;
use crate::run::persistent::{stream_k_workspace, Decomposition, MatrixMap, StreamK};
use crate::run::workspace::WorkspaceNeed;
use std::sync::Mutex;

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
fn time_plans(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands, plans: &[TilePlan]) -> Result<Vec<f64>> {
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
        return Err(
            first_refusal.unwrap_or_else(|| Error::Other(format!("no tile of step 10 fits on this GPU at {shape}")))
        );
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
pub(super) fn launch_chosen(func: &CudaFunction, stream: &CudaStream, ops: &GemmOperands) -> Result<()> {
    if !crate::run::loader::compiled_from(func, &KERNEL) {
        return launch_with(func, stream, ops, TILES[0], StreamK::Modelled);
    }
    let (best, stream_k) = chosen_plan(func, stream, ops)?;
    let ran = match best {
        0 => func.clone(),
        _ => crate::run::loader::function_in(stream, &TILE_KERNELS[best])?,
    };
    // A record made after these launches describes the shape's compilation, not the registered one.
    crate::run::loader::note_ran(func, &ran);
    launch_with(&ran, stream, ops, TILES[best], stream_k)
}

/// One tile shape, always (the alternatives).
pub(super) fn launch_tile<const T: usize, const STREAM_K: u8>(
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
pub(super) const OFF: u8 = 0;
pub(super) const MODELLED: u8 = 1;
pub(super) const ALL_CLUSTERS: u8 = 2;

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
        // A flag per consumer warpgroup: each raises its own once its half of the partial is written.
        stream_k_workspace(
            ops,
            "step 10's stream-K",
            d.clusters * tile.blocks(),
            (BM, tile.bn),
            CONSUMERS,
        )?
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
            let (partials, flags) =
                stream_k_workspace(&ops, "step 10's stream-K", 132, (BM, tile.bn), CONSUMERS).unwrap();
            assert_eq!((partials, flags), ((1 << 20) + scratch_at, 1 << 20));
        }
        let refused = stream_k_workspace(&ops, "step 10's stream-K", 133, (BM, BN), CONSUMERS)
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("step 10's stream-K (133 blocks") && !refused.contains('\n'),
            "{refused}"
        );
    }
}
