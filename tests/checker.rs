//! The checker is tested on the CPU, with emulated kernels on real random inputs: it must reject
//! wrong kernels (a missing tile, no store at all, an off-by-one in K, a transposed store, a wrong
//! scale, one wrong element) and accept correct ones, whatever order they accumulate in.
//!
//! An emulated kernel does what a GPU kernel does: exact bf16 products, fp32 accumulation in some
//! order, one round-to-nearest-even to bf16 at the store; an unwritten element keeps its NaN poison.
//! The GPU twin of these tests (real broken CUDA kernels) is in tests/gpu.rs.

use gemm_ladder::check::problem::{Inputs, Shape};
use gemm_ladder::check::verify::{self, compare, Bounds, Check, Reference};
use half::bf16;
use rayon::prelude::*;

/// The order a correct kernel adds its K products in; each is a legitimate fp32 accumulation.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Order {
    /// k = 0, 1, …, K−1: step01's loop.
    Forward,
    /// k = K−1, …, 0.
    Reverse,
    /// Partial sums over blocks of 32 along K, then added up: a tiled kernel with a K tile of 32.
    Blocked32,
    /// Forward, but every addition rounds toward zero: the coherent worst case of a truncating
    /// adder (tensor cores are reported to truncate when aligning their addends).
    Truncating,
}

const ORDERS: [Order; 4] = [Order::Forward, Order::Reverse, Order::Blocked32, Order::Truncating];

/// Inputs with fp32 copies (bf16 → fp32 is exact), to emulate kernels with.
struct Problem {
    shape: Shape,
    inputs: Inputs,
    a: Vec<f32>,
    b: Vec<f32>,
}

impl Problem {
    fn new(shape: Shape, seed: u64) -> Problem {
        let inputs = Inputs::generate(shape, seed);
        let wide = |v: &[bf16]| v.iter().map(|x| x.to_f32()).collect();
        Problem {
            shape,
            a: wide(&inputs.a),
            b: wide(&inputs.b),
            inputs,
        }
    }

    /// The exact product, as the harness computes it (full, or sampled above the limit).
    fn exact(&self) -> Reference {
        verify::cpu_reference(&self.inputs.a, &self.inputs.b, self.shape)
    }

    /// fp32 sums over k < `k_end`, in `order`, before the store rounds them.
    fn sums(&self, order: Order, k_end: usize) -> Vec<f32> {
        let Shape { m, n, k } = self.shape;
        let mut s = vec![0.0f32; m * n];
        s.par_chunks_mut(n).enumerate().for_each(|(i, row)| {
            let a = &self.a[i * k..i * k + k_end];
            for (j, out) in row.iter_mut().enumerate() {
                let b = &self.b[j * k..j * k + k_end];
                *out = match order {
                    Order::Forward => a.iter().zip(b).fold(0.0, |acc, (x, y)| acc + x * y),
                    Order::Reverse => a.iter().zip(b).rev().fold(0.0, |acc, (x, y)| acc + x * y),
                    Order::Blocked32 => a.chunks(32).zip(b.chunks(32)).fold(0.0, |acc, (x, y)| {
                        acc + x.iter().zip(y).fold(0.0f32, |p, (u, v)| p + u * v)
                    }),
                    Order::Truncating => a
                        .iter()
                        .zip(b)
                        .fold(0.0, |acc, (x, y)| toward_zero(f64::from(acc) + f64::from(x * y))),
                };
            }
        });
        s
    }

    /// A correct kernel's output: fp32 sums in `order`, rounded to nearest bf16.
    fn correct(&self, order: Order) -> Vec<bf16> {
        store(&self.sums(order, self.shape.k))
    }
}

/// f64 → f32 rounding toward zero (the f64 sum of two f32 values is exact or nearly).
fn toward_zero(x: f64) -> f32 {
    let r = x as f32;
    if f64::from(r).abs() > x.abs() {
        f32::from_bits(r.to_bits() - 1)
    } else {
        r
    }
}

/// The store: round to nearest even bf16.
fn store(s: &[f32]) -> Vec<bf16> {
    s.iter().map(|&v| bf16::from_f32(v)).collect()
}

/// The planted bugs, each a kernel a student could plausibly write.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Bug {
    /// The grid misses the last tile of rows: C's last 16 rows keep their NaN poison.
    SkipsLastTile,
    /// The store is missing: all of C keeps its NaN poison.
    WritesNothing,
    /// `for (k = 0; k < K - 1; …)`: the last product is dropped.
    OffByOneInK,
    /// Stores C[i, j] at `j·M + i` (column-major): for a square C, the transpose.
    TransposedStore,
    /// Every element 1 % too large (a stray scale factor).
    ScaledBy1_01,
    /// One element in the middle holds its neighbour's value (a lane mix-up or a race).
    OneWrongElement,
}

const BUGS: [Bug; 6] = [
    Bug::SkipsLastTile,
    Bug::WritesNothing,
    Bug::OffByOneInK,
    Bug::TransposedStore,
    Bug::ScaledBy1_01,
    Bug::OneWrongElement,
];

/// The middle element and the neighbour whose value the buggy kernel copies into it.
fn middle_and_neighbour(shape: Shape) -> ((usize, usize), (usize, usize)) {
    let (i, j) = (shape.m / 2, shape.n / 2);
    let neighbour = if shape.n > 1 {
        (i, if j + 1 < shape.n { j + 1 } else { j - 1 })
    } else {
        (i + 1, j)
    };
    ((i, j), neighbour)
}

impl Bug {
    /// Whether the bug changes anything at `shape`, and can be told from rounding at all.
    fn applies(self, shape: Shape) -> bool {
        let elements = shape.m * shape.n;
        match self {
            // With one row or one column, the row- and column-major layouts coincide.
            Bug::TransposedStore => shape.m > 1 && shape.n > 1,
            // 1 % is about one bf16 ulp: at a handful of elements it is rounding, not a bug. Over
            // many elements it shows in the Frobenius error (0.01 > 2^-8 + 2^-10).
            Bug::ScaledBy1_01 => elements as u64 >= Bounds::STATISTICAL_MIN,
            Bug::OneWrongElement => shape.n > 1 || shape.m > 2,
            _ => true,
        }
    }

    /// The buggy kernel's output; `correct` is the correct one (forward order).
    fn output(self, p: &Problem, correct: &[bf16]) -> Vec<bf16> {
        let Shape { m, n, k } = p.shape;
        match self {
            Bug::SkipsLastTile => {
                let mut c = correct.to_vec();
                c[m.saturating_sub(16) * n..].fill(bf16::NAN);
                c
            }
            Bug::WritesNothing => vec![bf16::NAN; m * n],
            Bug::OffByOneInK => store(&p.sums(Order::Forward, k - 1)),
            Bug::TransposedStore => {
                let mut c = vec![bf16::NAN; m * n];
                for i in 0..m {
                    for j in 0..n {
                        c[j * m + i] = correct[i * n + j];
                    }
                }
                c
            }
            Bug::ScaledBy1_01 => store(&p.sums(Order::Forward, k).iter().map(|s| s * 1.01).collect::<Vec<_>>()),
            Bug::OneWrongElement => {
                let mut c = correct.to_vec();
                let ((i, j), (ni, nj)) = middle_and_neighbour(p.shape);
                c[i * n + j] = c[ni * n + nj];
                c
            }
        }
    }

    /// Where the first failure must be reported, when the bug pins it down.
    fn first_failure_at(self, shape: Shape) -> Option<(usize, usize)> {
        match self {
            Bug::SkipsLastTile => Some((shape.m.saturating_sub(16), 0)),
            Bug::WritesNothing => Some((0, 0)),
            Bug::OneWrongElement => Some(middle_and_neighbour(shape).0),
            _ => None,
        }
    }
}

/// The two comparisons the harness makes: with the exact product (bounds a) and with another
/// correct GPU output that accumulated in another order (bounds b).
fn references(p: &Problem) -> [(&'static str, Reference, Bounds); 2] {
    [
        ("CPU f64", p.exact(), Bounds::gpu_vs_exact()),
        (
            "another GPU (reverse order)",
            Reference::Bf16(p.correct(Order::Reverse)),
            Bounds::gpu_vs_gpu(),
        ),
    ]
}

/// `C[i, j] = …` at the start of a failure message.
fn at(i: usize, j: usize) -> String {
    format!("C[{i}, {j}] = ")
}

/// Shapes for the planted bugs: square, ragged, a single element, a single column, a long K, and
/// one above the full-reference limit (sampled CPU reference).
const BUG_SHAPES: [Shape; 7] = [
    Shape::new(1, 1, 8),
    Shape::new(97, 131, 72),
    Shape::new(128, 128, 256),
    Shape::new(33, 1, 1032),
    Shape::new(3, 200, 8),
    Shape::new(40, 24, 16384),
    Shape::new(257, 255, 4104),
];

#[test]
fn planted_bugs_are_rejected_at_every_shape() {
    let mut accepted = Vec::new();
    let mut rejections = 0;
    for (s, &shape) in BUG_SHAPES.iter().enumerate() {
        let p = Problem::new(shape, 100 + s as u64);
        let correct = p.correct(Order::Forward);
        for (against, reference, bounds) in references(&p) {
            let sampled = matches!(reference, Reference::Sampled { .. });
            for bug in BUGS {
                // A sample sees one element in a 16×16 block or more: a single wrong (but finite)
                // element is for the full comparison with the other GPU output to find.
                if !bug.applies(shape) || (sampled && bug == Bug::OneWrongElement) {
                    continue;
                }
                let check = compare(against, &bug.output(&p, &correct), &reference, shape, &bounds);
                if check.passed {
                    accepted.push(format!("{bug:?} at {shape} {check}"));
                    continue;
                }
                rejections += 1;
                let why = check.first_failure.clone().expect("a failed check says where");
                if let Some((i, j)) = bug.first_failure_at(shape) {
                    assert!(why.starts_with(&at(i, j)), "{bug:?} at {shape} vs {against}: {why}");
                }
                if bug == Bug::OneWrongElement {
                    assert!(why.contains("; 1 of "), "{bug:?} at {shape}: {why}");
                }
                if matches!(bug, Bug::SkipsLastTile | Bug::WritesNothing) {
                    assert!(check.rel_fro.is_nan() || sampled, "{bug:?} at {shape}: {check:?}");
                }
            }
        }
    }
    assert!(
        accepted.is_empty(),
        "the checker accepted wrong kernels:\n{}",
        accepted.join("\n")
    );
    assert!(
        rejections > 60,
        "only {rejections} rejections: the loop above is not testing much"
    );
}

#[test]
fn correct_kernels_pass_in_any_accumulation_order() {
    for (s, &shape) in BUG_SHAPES.iter().chain(&[Shape::new(2, 300, 4096)]).enumerate() {
        let p = Problem::new(shape, 200 + s as u64);
        let exact = p.exact();
        let outputs: Vec<(Order, Vec<bf16>)> = ORDERS.iter().map(|&o| (o, p.correct(o))).collect();
        for (order, out) in &outputs {
            let check = compare("CPU f64", out, &exact, shape, &Bounds::gpu_vs_exact());
            assert!(check.passed, "{order:?} at {shape}: {check}");
            for (other, reference) in &outputs {
                let check = compare(
                    "other order",
                    out,
                    &Reference::Bf16(reference.clone()),
                    shape,
                    &Bounds::gpu_vs_gpu(),
                );
                assert!(check.passed, "{order:?} vs {other:?} at {shape}: {check}");
            }
        }
    }
}

/// Correct kernels must not live near the edge of the bounds: at K = 16384, where fp32
/// accumulation errs most, their fp32 error (even truncating) uses less than half of `atol` and
/// their Frobenius error less than half of its bound. (A single element may come closer: rounding
/// costs up to half an ulp against the exact product, and a straddle a whole ulp between two
/// outputs; that is what `rtol` is for.) The numbers are printed, to check the derivation in
/// `Bounds`' documentation against.
#[test]
fn correct_kernels_stay_well_inside_the_bounds_at_k_16384() {
    let shape = Shape::new(48, 40, 16384);
    let p = Problem::new(shape, 31);
    let Reference::F64(exact) = p.exact() else {
        panic!("{shape} is below the full-reference limit")
    };
    let rms = (exact.iter().map(|c| c * c).sum::<f64>() / exact.len() as f64).sqrt();
    let worst_fraction = |got: &[bf16], reference: &[f64], bounds: &Bounds| -> f64 {
        got.iter()
            .zip(reference)
            .map(|(g, r)| (g.to_f64() - r).abs() / (bounds.rtol * r.abs() + bounds.atol_rms * rms))
            .fold(0.0, f64::max)
    };
    let forward = p.correct(Order::Forward);
    let forward_wide: Vec<f64> = forward.iter().map(|v| v.to_f64()).collect();
    for order in ORDERS {
        let sums = p.sums(order, shape.k);
        let fp32_error = sums
            .iter()
            .zip(&exact)
            .map(|(s, c)| (f64::from(*s) - c).abs())
            .fold(0.0, f64::max)
            / rms;
        let out = store(&sums);
        let a = compare(
            "CPU f64",
            &out,
            &Reference::F64(exact.clone()),
            shape,
            &Bounds::gpu_vs_exact(),
        );
        let b = compare(
            "forward",
            &out,
            &Reference::Bf16(forward.clone()),
            shape,
            &Bounds::gpu_vs_gpu(),
        );
        let (fa, fb) = (
            worst_fraction(&out, &exact, &Bounds::gpu_vs_exact()),
            worst_fraction(&out, &forward_wide, &Bounds::gpu_vs_gpu()),
        );
        println!(
            "{order:?} at {shape}: max fp32 error {fp32_error:.2e}·rms; vs exact rel_fro {:.2e}, worst element {fa:.2} of \
             its bound; vs forward rel_fro {:.2e}, worst element {fb:.2} of its bound",
            a.rel_fro, b.rel_fro
        );
        assert!(
            fp32_error < Bounds::gpu_vs_exact().atol_rms / 2.0,
            "{order:?}: fp32 error {fp32_error:e}·rms"
        );
        assert!(a.rel_fro < a.rel_fro_bound / 2.0 && fa < 1.0, "{order:?}: {a}");
        assert!(b.rel_fro < b.rel_fro_bound / 2.0 && fb < 1.0, "{order:?}: {b}");
    }
}

/// Rounding toward zero at the store (e.g. packing with `bits >> 16`) costs up to a whole ulp:
/// against the exact product that is outside `rtol = 2^-8` at about half the elements (a single
/// element may be lucky, so not at 1×1).
#[test]
fn a_truncating_store_fails_against_the_exact_product() {
    for (s, &shape) in [
        Shape::new(97, 131, 72),
        Shape::new(128, 128, 256),
        Shape::new(3, 200, 8),
    ]
    .iter()
    .enumerate()
    {
        let p = Problem::new(shape, 600 + s as u64);
        let truncated: Vec<bf16> = p
            .sums(Order::Forward, shape.k)
            .iter()
            .map(|v| bf16::from_bits((v.to_bits() >> 16) as u16))
            .collect();
        let check = compare("CPU f64", &truncated, &p.exact(), shape, &Bounds::gpu_vs_exact());
        assert!(!check.passed, "a truncating store passed at {shape}: {check}");
    }
}

/// An off-by-one in K drops one product, |a·b| < 1, from sums of rms √(K/9) ≈ 43 at K = 16384:
/// a relative Frobenius error of only 1/√K ≈ 0.0078. The elementwise bound must catch it, also
/// where the Frobenius bound alone would not (fewer than 256 elements, bounds b: 2^-7 + 2^-8).
#[test]
fn an_off_by_one_in_k_is_caught_elementwise_up_to_k_16384() {
    for (s, &shape) in [
        Shape::new(12, 12, 16384),
        Shape::new(16, 16, 16384),
        Shape::new(8, 8, 8192),
        Shape::new(24, 20, 4096),
    ]
    .iter()
    .enumerate()
    {
        let p = Problem::new(shape, 300 + s as u64);
        let buggy = store(&p.sums(Order::Forward, shape.k - 1));
        for (against, reference, bounds) in references(&p) {
            let check = compare(against, &buggy, &reference, shape, &bounds);
            assert!(!check.passed, "off-by-one in K passed at {shape} vs {against}: {check}");
            let why = check.first_failure.as_deref().unwrap();
            assert!(
                why.starts_with("C["),
                "caught by Frobenius only at {shape} vs {against}: {why}"
            );
            println!("{shape} {check}");
        }
        // Against the other GPU output at 12×12×16384 the Frobenius error is inside its bound:
        // this rejection is the elementwise bound's alone.
        if shape == Shape::new(12, 12, 16384) {
            let (_, reference, bounds) = &references(&p)[1];
            let check = compare("other GPU", &buggy, reference, shape, bounds);
            assert!(check.rel_fro <= check.rel_fro_bound && !check.passed, "{check}");
        }
    }
}

/// Above 2^27 multiply-adds the CPU reference is a sample; it must still see every edge, fail an
/// unwritten element anywhere (NaN poison), and agree with the full reference where it looks.
#[test]
fn a_sampled_reference_checks_edges_and_scans_everything_for_nan() {
    let shape = Shape::new(257, 255, 4104);
    let p = Problem::new(shape, 400);
    let Reference::Sampled { positions, values } = p.exact() else {
        panic!("{shape} should be sampled")
    };
    let reference = Reference::Sampled {
        positions: positions.clone(),
        values,
    };
    let bounds = Bounds::gpu_vs_exact();
    let correct = p.correct(Order::Blocked32);
    let check = compare("CPU f64 (sampled)", &correct, &reference, shape, &bounds);
    assert!(check.passed && check.compared == positions.len() as u64, "{check}");
    assert!(check.compared < (shape.m * shape.n) as u64 / 2);

    // An unwritten element away from every sampled position.
    let hole = (100..200)
        .flat_map(|i| (100..200).map(move |j| (i, j)))
        .find(|x| positions.binary_search(x).is_err())
        .unwrap();
    let mut got = correct.clone();
    got[hole.0 * shape.n + hole.1] = bf16::NAN;
    let check = compare("CPU f64 (sampled)", &got, &reference, shape, &bounds);
    assert!(
        !check.passed && check.first_failure.as_deref().unwrap().starts_with(&at(hole.0, hole.1)),
        "{check}"
    );

    // A wrong value in the last column (an edge: always sampled), where ragged tiles go wrong.
    let mut got = correct.clone();
    let edge = 131 * shape.n + shape.n - 1;
    got[edge] = bf16::from_f32(-got[edge].to_f32() + 1.0);
    let check = compare("CPU f64 (sampled)", &got, &reference, shape, &bounds);
    assert!(
        !check.passed
            && check
                .first_failure
                .as_deref()
                .unwrap()
                .starts_with(&at(131, shape.n - 1)),
        "{check}"
    );
}

/// A failed check turns into one line naming the reference, the errors, the bounds and the place.
#[test]
fn a_rejection_reads_as_one_line() {
    let shape = Shape::new(97, 131, 72);
    let p = Problem::new(shape, 500);
    let correct = p.correct(Order::Forward);
    let check: Check = compare(
        "cuBLAS bf16",
        &Bug::SkipsLastTile.output(&p, &correct),
        &Reference::Bf16(correct),
        shape,
        &Bounds::gpu_vs_gpu(),
    );
    let line = check.into_result().unwrap_err().to_string();
    println!("{line}");
    assert!(!line.contains('\n'));
    for part in [
        "cuBLAS bf16",
        "relative Frobenius NaN",
        "|d| <= 2^-7·|ref| + 2^-8·rms(ref)",
        "C[81, 0] = NaN",
        "2096 of 12707",
    ] {
        assert!(line.contains(part), "{part:?} missing from: {line}");
    }
}

/// How long `compare` takes at 8192² (67M elements). Release only:
/// `cargo test --release --test checker -- --ignored --nocapture`.
#[test]
#[ignore = "a timing, for release builds"]
fn compare_timing_at_8192_squared() {
    let shape = Shape::new(8192, 8192, 8);
    let n = shape.m * shape.n;
    let got: Vec<bf16> = (0..n)
        .into_par_iter()
        .map(|i| bf16::from_f32(((i * 7919) % 2003) as f32 - 1001.0))
        .collect();
    let mut other = got.clone();
    other[n - 1] = bf16::from_f32(other[n - 1].to_f32() * 2.0 + 1.0);
    let exact: Vec<f64> = other.par_iter().map(|v| v.to_f64()).collect();
    let positions = verify::sample_positions(shape);
    let sampled = Reference::Sampled {
        positions: positions.clone(),
        values: positions.iter().map(|&(i, j)| got[i * shape.n + j].to_f64()).collect(),
    };
    for (what, reference) in [
        ("bf16", Reference::Bf16(other)),
        ("f64", Reference::F64(exact)),
        ("sampled", sampled),
    ] {
        for _ in 0..3 {
            let start = std::time::Instant::now();
            let check = compare(what, &got, &reference, shape, &Bounds::gpu_vs_gpu());
            let seconds = start.elapsed().as_secs_f64();
            println!(
                "compare vs {what} at {shape}: {seconds:.3} s on {} threads: {check}",
                rayon::current_num_threads()
            );
        }
    }
    let big = Shape::new(8192, 8192, 8192);
    let inputs = Inputs::generate(big, 1);
    let start = std::time::Instant::now();
    let reference = verify::cpu_reference(&inputs.a, &inputs.b, big);
    println!(
        "cpu_reference at {big}: {} sampled values in {:.3} s",
        reference.len(),
        start.elapsed().as_secs_f64()
    );
    let full = Shape::square(512); // 2^27 multiply-adds: the largest full reference
    let inputs = Inputs::generate(full, 2);
    let start = std::time::Instant::now();
    let reference = verify::cpu_reference(&inputs.a, &inputs.b, full);
    println!(
        "cpu_reference at {full}: {} values in {:.3} s",
        reference.len(),
        start.elapsed().as_secs_f64()
    );
}
