//! The size sweep (`stepNN --sweep`, `ladder --sweep`): one step against cuBLAS over a fixed list of
//! shapes, square and LLM-like. At every shape the step is verified exactly as a plain run verifies it
//! (against its predecessor and cuBLAS bf16), then timed against cuBLAS in one alternating loop
//! ([`crate::run::timing::measure`]), and recorded with `sweep: true`. The book draws the records as a
//! figure of the ratio to cuBLAS per shape (`figures/sweep-<gpu>.svg`, [`crate::book::figure_sweep`]) and a
//! table (`{{#ladder-sweep-figure}}`, `{{#ladder-sweep-table}}`).
//!
//! The random sweep (`--sweep random[:N]`) tests a choice made by a model (step 10's tile and
//! decomposition) away from the shapes it was tuned on: N shapes drawn by a seeded generator
//! ([`random_shapes`], the run's seed, printed, `--seed` repeats it), each verified and timed with the
//! step's alternatives in the same loop as the fixed sweep. Its records carry the generator's seed
//! ([`StepRecord::random_sweep`]) and how far the chosen plan was from the fastest plan timed beside it.

use crate::check::problem::Shape;
use crate::device::gpu::Gpu;
use crate::error::{Error, Result};
use crate::run::registry::{Step, Twin};
use crate::run::results::{significant, StepRecord};
use crate::run::session::{RunOptions, Session};
use std::time::Instant;

/// The shapes of the sweep, M×N×K, in the order they run and are drawn: square sizes from one that
/// cannot fill the GPU to one that holds it for a long time, then shapes of LLM layers (a wide
/// feed-forward projection, a short K, a tall M), then two skinny ones with a single row or column
/// of tiles (a few tokens through a large layer, and its transpose: bandwidth-bound).
pub const SHAPES: [Shape; 11] = [
    Shape::square(1024),
    Shape::square(2048),
    Shape::square(4096),
    Shape::square(6144),
    Shape::square(8192),
    Shape::square(16384),
    Shape::new(4096, 14336, 4096),
    Shape::new(8192, 8192, 1024),
    Shape::new(16384, 4096, 4096),
    Shape::new(128, 8192, 8192),
    Shape::new(8192, 128, 8192),
];

/// Which shapes a sweep runs: the fixed list, or `count` shapes drawn from a seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Fixed,
    Random { count: usize },
}

/// Shapes a random sweep draws when `random` names no count.
pub const RANDOM_COUNT: usize = 40;

impl Family {
    /// `fixed` (or nothing), `random`, `random:N`: what `--sweep` takes.
    pub fn parse(word: &str) -> std::result::Result<Family, String> {
        match word.split_once(':') {
            _ if word.is_empty() || word == "fixed" => Ok(Family::Fixed),
            None if word == "random" => Ok(Family::Random { count: RANDOM_COUNT }),
            Some(("random", n)) => match n.parse::<usize>() {
                Ok(count @ 1..=1000) => Ok(Family::Random { count }),
                _ => Err(format!("`random:{n}`: the count is a number from 1 to 1000")),
            },
            _ => Err(format!(
                "`{word}`: a sweep is `fixed` (the default), `random` or `random:N`"
            )),
        }
    }

    /// The shapes of this family for `seed`.
    pub fn shapes(self, seed: u64) -> Vec<Shape> {
        match self {
            Family::Fixed => SHAPES.to_vec(),
            Family::Random { count } => random_shapes(seed, count),
        }
    }
}

// ANCHOR: random_shapes
/// The most multiply-adds a random shape may take (2^41: about 6 ms of an H100 at full rate), so that
/// forty shapes, each timed with all of step 10's alternatives, take minutes rather than an hour.
pub const RANDOM_MAX_MACS: u128 = 1 << 41;

/// `count` distinct shapes drawn from `seed`, in four families taken in turn:
/// - cubes from 1024³ to 8192³ in steps of 256 (most of them end in a partial wave of tiles);
/// - LLM layers: M tokens from 512 to 16384 (a multiple of 16), N and K widths of models' layers
///   (2048 … 16384, and K up to 28672);
/// - deep K, as in a weight gradient: M and N from 512 to 4096 (multiples of 256), K from 8192 to
///   32768 (multiples of 512);
/// - anything: M and N from 512 to 16384 and K from 512 to 32768, log-uniform, multiples of 64.
///
/// A draw of more than [`RANDOM_MAX_MACS`] multiply-adds is drawn again. Every shape keeps the
/// contract (K a multiple of 8).
pub fn random_shapes(seed: u64, count: usize) -> Vec<Shape> {
    const WIDTHS: [usize; 13] = [
        2048, 2560, 3072, 4096, 5120, 6144, 7168, 8192, 11008, 12288, 13824, 14336, 16384,
    ];
    const DEEP: [usize; 3] = [18432, 28672, 24576];
    let mut rng = Draws { seed, draw: 0 };
    let mut shapes: Vec<Shape> = Vec::with_capacity(count);
    let mut family = 0;
    while shapes.len() < count {
        let shape = match family % 4 {
            0 => Shape::square(rng.log_uniform(1024, 8192, 256)),
            1 => {
                let m = rng.log_uniform(512, 16384, 16);
                let n = WIDTHS[rng.index(WIDTHS.len())];
                let k = match rng.index(WIDTHS.len() + DEEP.len()) {
                    i if i < WIDTHS.len() => WIDTHS[i],
                    i => DEEP[i - WIDTHS.len()],
                };
                Shape::new(m, n, k)
            }
            2 => Shape::new(
                rng.log_uniform(512, 4096, 256),
                rng.log_uniform(512, 4096, 256),
                rng.log_uniform(8192, 32768, 512),
            ),
            _ => Shape::new(
                rng.log_uniform(512, 16384, 64),
                rng.log_uniform(512, 16384, 64),
                rng.log_uniform(512, 32768, 64),
            ),
        };
        let macs = shape.m as u128 * shape.n as u128 * shape.k as u128;
        if macs <= RANDOM_MAX_MACS && !shapes.contains(&shape) {
            shapes.push(shape);
            family += 1;
        }
    }
    shapes
}
// ANCHOR_END: random_shapes

/// The random sweep's generator: draw `i` of a seed is SplitMix64's finaliser of both, like the inputs'.
struct Draws {
    seed: u64,
    draw: u64,
}

impl Draws {
    fn next(&mut self) -> u64 {
        self.draw += 1;
        crate::check::problem::mix(self.seed ^ crate::check::problem::mix(self.draw))
    }

    /// One of `0..n`.
    fn index(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// Uniform in [lo, hi] on a log scale, rounded down to a multiple of `step` (at least `lo`).
    fn log_uniform(&mut self, lo: usize, hi: usize, step: usize) -> usize {
        let unit = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        let x = (lo as f64).ln() + unit * ((hi as f64).ln() - (lo as f64).ln());
        ((x.exp() as usize) / step * step).clamp(lo, hi)
    }
}

/// `4096³` for a cube, `4096×14336×4096` otherwise: how the book and the figure name a shape.
pub fn label(shape: Shape) -> String {
    if shape.m == shape.n && shape.n == shape.k {
        format!("{}³", shape.m)
    } else {
        format!("{}×{}×{}", shape.m, shape.n, shape.k)
    }
}

/// What `--help` says about `--sweep`, the shapes listed from [`SHAPES`].
pub fn help() -> String {
    let list: Vec<String> = SHAPES.iter().map(|s| s.to_string()).collect();
    format!(
        "Size sweep: verify and time the step against cuBLAS at each of M×N×K = {}, record the results \
         (marked as a sweep) and draw figures/sweep-<gpu>.svg. `--sweep random[:N]` instead draws N \
         shapes (default {RANDOM_COUNT}) from the seed (--seed repeats them): cubes, LLM layers, deep K \
         and any, M and N up to 16384, K up to 32768. Replaces --size/--m/--n/--k",
        list.join(", ")
    )
}

/// Where `shape` sits on the sweep figure's axis: its place in [`SHAPES`]; a shape from an older list
/// comes after them, in (M, N, K) order.
pub fn axis_order(shapes: impl IntoIterator<Item = Shape>) -> Vec<Shape> {
    let mut all: Vec<Shape> = shapes.into_iter().collect();
    all.sort_by_key(|s| (SHAPES.iter().position(|t| t == s).unwrap_or(SHAPES.len()), *s));
    all.dedup();
    all
}

/// What a sweep did.
pub struct Outcome {
    /// The GPU, handed back for recording.
    pub gpu: Gpu,
    /// One record per shape that passed and was timed (none with `--check`), `sweep` set.
    pub records: Vec<StepRecord>,
    /// `step10 4096x4096x4096` for each shape that failed verification.
    pub failures: Vec<String>,
    /// Shapes skipped because they did not fit in the GPU's memory.
    pub skipped: Vec<Shape>,
}

/// Runs `step`'s kernel of `twin` (`None`: the GPU's own) at every shape of [`SHAPES`]: verify, then (unless `options.check_only`) time against
/// cuBLAS. Progress goes to stderr, one line before and one after each shape. A shape that fails
/// verification is named in [`Outcome::failures`] and the sweep goes on; a shape that does not fit in
/// the GPU's memory is skipped with a note; any other error (a hang, a CUDA error) ends the sweep.
pub fn run(
    gpu: Gpu,
    step: &'static Step,
    twin: Option<Twin>,
    seed: u64,
    family: Family,
    options: &RunOptions,
) -> Result<Outcome> {
    let shapes = family.shapes(seed);
    let total = shapes.len();
    let mut records = Vec::new();
    let mut failures = Vec::new();
    let mut skipped = Vec::new();
    let mut gpu = Some(gpu);
    let random_sweep = matches!(family, Family::Random { .. }).then_some(seed);
    for (i, &shape) in shapes.iter().enumerate() {
        let what = format!("[{}/{total}] {} {shape}", i + 1, step.binary());
        let started = Instant::now();
        eprintln!(
            "{what}: verifying{} …",
            if options.check_only { "" } else { ", timing" }
        );
        let mut session = match Session::new(gpu.take().expect("returned after every shape"), shape, seed) {
            Ok(session) => session.with_twin(twin),
            Err(e @ Error::OutOfMemory(_)) => {
                eprintln!("{what}: skipped: {e}");
                skipped.push(shape);
                // The failed session took the GPU with it; open it again for the next shape.
                gpu = Some(Gpu::open()?);
                continue;
            }
            Err(e) => return Err(e),
        };
        match session.run_step(step.id, options) {
            Ok(outcome) => {
                let checks: Vec<String> = outcome
                    .checks
                    .iter()
                    .map(|c| format!("{:.1e} vs {}", c.rel_fro, c.against))
                    .collect();
                let timed = outcome
                    .record
                    .as_ref()
                    .map(|r| {
                        let headline = r.headline();
                        let choice = r
                            .choice
                            .as_ref()
                            .map(|c| {
                                format!(
                                    "; fastest plan: {} (the chosen one took {}× its time)",
                                    c.fastest,
                                    significant(c.time_over_fastest, 3)
                                )
                            })
                            .unwrap_or_default();
                        format!(
                            "; {} TFLOPS, {} {} TFLOPS: {}×{choice}",
                            significant(r.time.tflops, 3),
                            headline.baseline.label(),
                            significant(headline.cublas.tflops, 3),
                            significant(headline.ratio, 3)
                        )
                    })
                    .unwrap_or_default();
                eprintln!(
                    "{what}: passed (rel. error {}){timed} [{:.1} s]",
                    checks.join(", "),
                    started.elapsed().as_secs_f64()
                );
                records.extend(outcome.record.map(|r| StepRecord {
                    sweep: true,
                    random_sweep,
                    ..r
                }));
            }
            Err(e @ Error::Verification(_)) => {
                eprintln!("{what}: error: {e}");
                failures.push(format!("{} {shape}", step.binary()));
            }
            Err(e @ Error::OutOfMemory(_)) => {
                eprintln!("{what}: skipped: {e}");
                skipped.push(shape);
            }
            Err(e) => return Err(e),
        }
        gpu = Some(session.into_gpu());
    }
    Ok(Outcome {
        gpu: gpu.expect("returned after the last shape"),
        records,
        failures,
        skipped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shapes_are_the_ones_the_book_explains_and_keep_the_contract() {
        let labels: Vec<String> = SHAPES.iter().map(|&s| label(s)).collect();
        assert_eq!(
            labels,
            [
                "1024³",
                "2048³",
                "4096³",
                "6144³",
                "8192³",
                "16384³",
                "4096×14336×4096",
                "8192×8192×1024",
                "16384×4096×4096",
                "128×8192×8192",
                "8192×128×8192"
            ]
        );
        for s in SHAPES {
            assert!(s.contract_violation().is_none(), "{s}");
        }
        // No shape twice: records are keyed by shape.
        assert_eq!(axis_order(SHAPES).len(), SHAPES.len());
        // The largest inputs, two bf16 operands of 16384 × 16384 or 16384 × 4096 … , are 1 GiB a copy.
        let biggest = SHAPES.iter().map(|s| 2 * (s.m * s.k + s.n * s.k)).max().unwrap();
        assert_eq!(biggest, 1 << 30);
    }

    #[test]
    fn a_random_sweep_is_reproducible_varied_and_keeps_the_contract() {
        let shapes = random_shapes(7, RANDOM_COUNT);
        assert_eq!(shapes, random_shapes(7, RANDOM_COUNT));
        assert_ne!(shapes, random_shapes(8, RANDOM_COUNT));
        assert_eq!(axis_order(shapes.clone()).len(), RANDOM_COUNT, "distinct");
        for s in &shapes {
            assert!(s.contract_violation().is_none(), "{s}");
            assert!((512..=16384).contains(&s.m) && (512..=16384).contains(&s.n), "{s}");
            assert!((512..=32768).contains(&s.k), "{s}");
            assert!(s.m as u128 * s.n as u128 * s.k as u128 <= RANDOM_MAX_MACS, "{s}");
        }
        // Every family is there: cubes, deep K (K at least twice M and N), and shapes that are neither.
        let cubes = shapes.iter().filter(|s| s.m == s.n && s.n == s.k).count();
        let deep = shapes.iter().filter(|s| s.k >= 2 * s.m.max(s.n)).count();
        assert!(
            cubes >= RANDOM_COUNT / 4 && deep >= RANDOM_COUNT / 4,
            "{cubes} cubes, {deep} deep: {shapes:?}"
        );
    }

    #[test]
    fn sweep_families_parse() {
        assert_eq!(Family::parse(""), Ok(Family::Fixed));
        assert_eq!(Family::parse("fixed"), Ok(Family::Fixed));
        assert_eq!(Family::parse("random"), Ok(Family::Random { count: RANDOM_COUNT }));
        assert_eq!(Family::parse("random:12"), Ok(Family::Random { count: 12 }));
        assert!(Family::parse("random:0").is_err());
        assert!(Family::parse("random:x").is_err());
        assert!(Family::parse("squares").is_err());
        assert_eq!(Family::Random { count: 5 }.shapes(3).len(), 5);
    }

    #[test]
    fn help_lists_every_shape() {
        let help = help();
        for s in SHAPES {
            assert!(help.contains(&s.to_string()), "{s} missing from {help}");
        }
        assert!(help.contains("4096x14336x4096, 8192x8192x1024"), "{help}");
        assert!(!help.contains('\n'));
    }

    #[test]
    fn axis_order_follows_the_list_then_the_rest() {
        let other = Shape::new(512, 512, 64);
        let order = axis_order([SHAPES[7], other, SHAPES[0], SHAPES[7], Shape::square(3000)]);
        assert_eq!(order, [SHAPES[0], SHAPES[7], other, Shape::square(3000)]);
    }
}
