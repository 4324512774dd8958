//! The Hopper kernel's plans: the model that ranks a tile and its decomposition for a shape, the
//! plans the first launch at a shape times, and a plan in words.

use super::*;
use crate::run::persistent::{Decomposition, StreamK, FIXUP_K_TILES};

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

/// `128×256 ×2 along M, stream-K on 66 clusters`: a plan in a few words, for the list of trials.
pub(super) fn plan_label(plan: &TilePlan) -> String {
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
pub(super) fn plan_text(shape: crate::check::problem::Shape, tile: Tile, d: &Decomposition) -> String {
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
pub(super) fn told_plan_among(
    shape: crate::check::problem::Shape,
    ranked: &[TilePlan],
    told: &str,
) -> Option<TilePlan> {
    ranked.iter().copied().find(|(i, _, d)| {
        let text = plan_text(shape, TILES[*i], d);
        told == text || told.starts_with(&format!("{text};"))
    })
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
