//! The size sweep (`stepNN --sweep`, `ladder --sweep`): one step against cuBLAS over a fixed list of
//! shapes, square and LLM-like. At every shape the step is verified exactly as a plain run verifies it
//! (against its predecessor and cuBLAS bf16), then timed against cuBLAS in one alternating loop
//! ([`crate::run::timing::measure`]), and recorded with `sweep: true`. The book draws the records as a
//! figure of the ratio to cuBLAS per shape (`figures/sweep-<gpu>.svg`, [`crate::book::figure_sweep`]) and a
//! table (`{{#ladder-sweep-figure}}`, `{{#ladder-sweep-table}}`).

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
         (marked as a sweep) and draw figures/sweep-<gpu>.svg. Replaces --size/--m/--n/--k",
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
pub fn run(gpu: Gpu, step: &'static Step, twin: Option<Twin>, seed: u64, options: &RunOptions) -> Result<Outcome> {
    let total = SHAPES.len();
    let mut records = Vec::new();
    let mut failures = Vec::new();
    let mut skipped = Vec::new();
    let mut gpu = Some(gpu);
    for (i, &shape) in SHAPES.iter().enumerate() {
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
                        format!(
                            "; {} TFLOPS, {} {} TFLOPS: {}×",
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
                records.extend(outcome.record.map(|r| StepRecord { sweep: true, ..r }));
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
