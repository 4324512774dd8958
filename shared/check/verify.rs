//! Verification: compare a kernel's bf16 output with a reference, under stated bounds.
//!
//! Three pieces:
//! - [`Bounds`]: what a correct kernel may differ by, for the two comparisons the
//!   ladder makes: a GPU output against an exact (f64) reference, and a GPU output against another
//!   GPU output (the previous step, cuBLAS bf16); derived in `verify/bounds.rs`.
//! - [`compare`]: the check itself — relative Frobenius error, max abs error, an elementwise bound,
//!   and NaN/Inf anywhere in the output fails. Parallel, sums in f64, deterministic.
//! - [`cpu_reference`]: the exact product on the CPU, in full for small shapes and at sampled
//!   positions (every edge element, one element in every block) for large ones: `verify/reference.rs`.

use crate::check::problem::Shape;
use crate::error::{Error, Result};
use half::bf16;
use rayon::prelude::*;
use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;

mod bounds;
mod reference;

pub use bounds::Bounds;
pub use reference::{
    cpu_reference, cpu_reference_full, cpu_reference_sampled, sample_positions, Reference, FULL_REFERENCE_MACS,
    SAMPLE_BLOCKS,
};

/// The outcome of one comparison, as printed and as recorded in the results file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Check {
    /// What the output was compared with: `CPU f64`, `step01`, `cuBLAS bf16` ...
    pub against: String,
    /// How many elements were compared (all of C, or a sample for a large CPU reference).
    pub compared: u64,
    /// ‖out − ref‖_F / ‖ref‖_F over the compared elements (NaN when one of them is NaN or Inf;
    /// JSON writes that as `null`, which reads back as NaN).
    #[serde(deserialize_with = "null_as_nan")]
    pub rel_fro: f64,
    /// max |out − ref| over the compared elements (NaN when one of them is NaN or Inf).
    #[serde(deserialize_with = "null_as_nan")]
    pub max_abs: f64,
    /// The bound `rel_fro` must stay under.
    pub rel_fro_bound: f64,
    /// The elementwise bound, in words (e.g. `|d| <= 2^-7·|ref| + 2^-8·rms(ref), rms(ref) = 21.3`).
    pub elementwise_bound: String,
    pub passed: bool,
    /// Where it first failed, in words, when it failed: the bad element of lowest linear index
    /// (`C[4095, 17] = NaN, expected 3.25 (|d| = NaN > bound 0.0123); 64 of 16777216 elements
    /// outside the bound`), or the Frobenius error when no single element is out of bounds.
    pub first_failure: Option<String>,
}

/// serde_json writes a non-finite f64 as `null`; read it back as NaN so a failed check round-trips.
fn null_as_nan<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

// ---------------------------------------------------------------------------------------------
// compare
// ---------------------------------------------------------------------------------------------

/// Elements per parallel chunk. Fixed, so the f64 sums add up in the same order on any machine.
const CHUNK: usize = 1 << 15;

/// Pass 1 over the compared elements: the sums behind rms(ref), ‖d‖_F and max |d|.
#[derive(Default, Clone, Copy)]
struct Sums {
    ref2: f64,
    diff2: f64,
    max_abs: f64,
    non_finite: u64,
}

impl Sums {
    fn add(mut self, o: Sums) -> Sums {
        self.ref2 += o.ref2;
        self.diff2 += o.diff2;
        self.max_abs = self.max_abs.max(o.max_abs);
        self.non_finite += o.non_finite;
        self
    }
}

/// An element outside the bound: where, its values, and the bound it broke.
#[derive(Clone, Copy)]
struct Bad {
    at: usize,
    got: f64,
    /// `None` for a NaN or Inf found by the full scan at a position a sampled reference skips.
    reference: Option<f64>,
    d: f64,
    bound: f64,
}

/// Pass 2: elements outside the elementwise bound.
#[derive(Clone, Copy)]
struct Outside {
    /// The one of lowest linear index.
    first: Option<Bad>,
    count: u64,
    /// How many of them are NaN or Inf in `got` (to avoid counting them twice with the full scan).
    got_non_finite: u64,
}

impl Outside {
    const NONE: Outside = Outside {
        first: None,
        count: 0,
        got_non_finite: 0,
    };

    fn note(&mut self, bad: Bad) {
        if self.first.is_none_or(|f| bad.at < f.at) {
            self.first = Some(bad);
        }
    }

    fn add(mut self, o: Outside) -> Outside {
        if let Some(bad) = o.first {
            self.note(bad);
        }
        Outside {
            first: self.first,
            count: self.count + o.count,
            got_non_finite: self.got_non_finite + o.got_non_finite,
        }
    }
}

/// An element of a kernel's output: bf16 (steps 01–10) or fp32 (step 11).
pub trait OutputElement: Copy + Send + Sync {
    /// The value, exactly, in f64 (NaN and Inf carry over).
    fn wide(self) -> f64;
}

impl OutputElement for bf16 {
    #[inline(always)]
    fn wide(self) -> f64 {
        wide(self)
    }
}

impl OutputElement for f32 {
    #[inline(always)]
    fn wide(self) -> f64 {
        f64::from(self)
    }
}

/// Compares `got` (M×N, row-major) with `reference` under `bounds`; never panics on bad input
/// (a length mismatch is a failed check). `against` names the reference in the report.
///
/// Fails when any compared element is outside the elementwise bound (NaN and Inf always are), when
/// the relative Frobenius error exceeds [`Bounds::rel_fro_for`], or — with a sampled reference —
/// when any element of `got` at all is NaN or Inf (an unwritten element keeps its NaN poison).
pub fn compare<T: OutputElement>(
    against: &str,
    got: &[T],
    reference: &Reference,
    shape: Shape,
    bounds: &Bounds,
) -> Check {
    let elements = shape.m * shape.n;
    let mut check = Check {
        against: against.to_string(),
        compared: reference.len() as u64,
        rel_fro: f64::NAN,
        max_abs: f64::NAN,
        rel_fro_bound: bounds.rel_fro_for(reference.len() as u64),
        elementwise_bound: bounds.describe(),
        passed: false,
        first_failure: None,
    };
    let mismatch = match reference {
        _ if got.len() != elements => Some(format!(
            "the output has {} elements, {shape} needs {elements}",
            got.len()
        )),
        Reference::Bf16(r) if r.len() != elements => Some(format!(
            "the reference has {} elements, {shape} needs {elements}",
            r.len()
        )),
        Reference::F64(r) if r.len() != elements => Some(format!(
            "the reference has {} elements, {shape} needs {elements}",
            r.len()
        )),
        Reference::Sampled { positions, values } => sampled_mismatch(positions, values, shape),
        _ => None,
    };
    if let Some(why) = mismatch {
        check.first_failure = Some(why);
        return check;
    }

    // Each reference kind is one closure from "compared element t" to (linear index, got, ref);
    // the two passes are generic over it, so each kind gets its own tight loop.
    let outcome = match reference {
        Reference::Bf16(r) => two_passes(elements, bounds, |t| (t, got[t].wide(), wide(r[t]))),
        Reference::F64(r) => two_passes(elements, bounds, |t| (t, got[t].wide(), r[t])),
        Reference::Sampled { positions, values } => two_passes(values.len(), bounds, |t| {
            let (i, j) = positions[t];
            let at = i * shape.n + j;
            (at, got[at].wide(), values[t])
        }),
    };
    let (sums, mut outside, rms) = outcome;

    // A sampled reference leaves most of C unread: scan all of it for NaN and Inf.
    if let Reference::Sampled { .. } = reference {
        let scan = scan_non_finite(got);
        let unsampled = scan.count - outside.got_non_finite;
        outside.count += unsampled;
        outside = outside.add(Outside {
            first: scan.first,
            count: 0,
            got_non_finite: 0,
        });
    }

    check.rel_fro = if sums.non_finite > 0 {
        f64::NAN
    } else if sums.ref2 > 0.0 {
        (sums.diff2 / sums.ref2).sqrt()
    } else if sums.diff2 == 0.0 {
        0.0
    } else {
        f64::INFINITY
    };
    check.max_abs = if sums.non_finite > 0 { f64::NAN } else { sums.max_abs };
    check.elementwise_bound = format!("{}, rms(ref) = {}", bounds.describe(), num(rms));
    let fro_ok = check.rel_fro <= check.rel_fro_bound;
    check.passed = fro_ok && outside.count == 0;
    if let Some(bad) = outside.first {
        let (i, j) = (bad.at / shape.n, bad.at % shape.n);
        let what = match bad.reference {
            None => format!(
                "C[{i}, {j}] = {} (not a sampled position: NaN or Inf fails anywhere)",
                num(bad.got)
            ),
            Some(r) => format!(
                "C[{i}, {j}] = {}, expected {} (|d| = {} > bound {})",
                num(bad.got),
                num(r),
                num(bad.d),
                num(bad.bound)
            ),
        };
        let count = match reference {
            Reference::Sampled { .. } => format!(
                "{} bad elements ({} of {elements} sampled, all scanned for NaN and Inf)",
                outside.count, check.compared
            ),
            _ => format!("{} of {elements} elements outside the bound", outside.count),
        };
        check.first_failure = Some(format!("{what}; {count}"));
    } else if !fro_ok {
        check.first_failure = Some(format!(
            "relative Frobenius error {} > bound {} (no single element outside the elementwise bound)",
            num(check.rel_fro),
            num(check.rel_fro_bound)
        ));
    }
    check
}

/// Why a sampled reference does not fit `shape`, if it does not.
fn sampled_mismatch(positions: &[(usize, usize)], values: &[f64], shape: Shape) -> Option<String> {
    if positions.len() != values.len() {
        return Some(format!(
            "the sampled reference has {} positions but {} values",
            positions.len(),
            values.len()
        ));
    }
    if let Some(&(i, j)) = positions.iter().find(|&&(i, j)| i >= shape.m || j >= shape.n) {
        return Some(format!(
            "the sampled reference has position ({i}, {j}), outside {shape}"
        ));
    }
    None
}

/// Both passes over `n` compared elements; `at(t)` gives (linear index, got, ref) of element t,
/// with linear indices increasing in t. Returns the sums, the elements outside the bound and rms(ref).
fn two_passes<F>(n: usize, bounds: &Bounds, at: F) -> (Sums, Outside, f64)
where
    F: Fn(usize) -> (usize, f64, f64) + Sync,
{
    let chunks = n.div_ceil(CHUNK);
    let range = |c: usize| c * CHUNK..((c + 1) * CHUNK).min(n);
    let sums = (0..chunks)
        .into_par_iter()
        .map(|c| {
            let mut s = Sums::default();
            for t in range(c) {
                let (_, g, r) = at(t);
                if g.is_finite() && r.is_finite() {
                    let d = g - r;
                    s.ref2 += r * r;
                    s.diff2 += d * d;
                    s.max_abs = s.max_abs.max(d.abs());
                } else {
                    s.non_finite += 1;
                    if r.is_finite() {
                        s.ref2 += r * r;
                    }
                }
            }
            s
        })
        .collect::<Vec<_>>()
        .into_iter()
        .fold(Sums::default(), Sums::add);
    let rms = if n > 0 { (sums.ref2 / n as f64).sqrt() } else { 0.0 };
    let atol = bounds.atol_rms * rms;
    let outside = (0..chunks)
        .into_par_iter()
        .map(|c| {
            let mut o = Outside::NONE;
            for t in range(c) {
                let (idx, g, r) = at(t);
                let d = (g - r).abs();
                let bound = bounds.rtol * r.abs() + atol;
                // False for NaN, in got or ref: NaN lands outside.
                let inside = d <= bound;
                if !inside {
                    o.note(Bad {
                        at: idx,
                        got: g,
                        reference: Some(r),
                        d,
                        bound,
                    });
                    o.count += 1;
                    o.got_non_finite += u64::from(!g.is_finite());
                }
            }
            o
        })
        .reduce(|| Outside::NONE, Outside::add);
    (sums, outside, rms)
}

/// The first NaN or Inf in `got` and how many there are.
fn scan_non_finite<T: OutputElement>(got: &[T]) -> Outside {
    got.par_chunks(CHUNK)
        .enumerate()
        .map(|(c, chunk)| {
            let bad = |v: &T| !v.wide().is_finite();
            let count = chunk.iter().filter(|v| bad(v)).count() as u64;
            let first = chunk.iter().position(bad).map(|p| Bad {
                at: c * CHUNK + p,
                got: chunk[p].wide(),
                reference: None,
                d: f64::NAN,
                bound: f64::NAN,
            });
            Outside {
                first,
                count,
                got_non_finite: count,
            }
        })
        .reduce(|| Outside::NONE, Outside::add)
}

/// A number for a message: six significant digits, plain where that reads well.
fn num(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if x == 0.0 {
        return "0".into();
    }
    let magnitude = x.abs().log10().floor() as i32;
    if !(-4..6).contains(&magnitude) {
        return format!("{x:.5e}");
    }
    let decimals = (5 - magnitude).max(0) as usize;
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

impl Check {
    /// `Ok(self)` when it passed, otherwise [`Error::Verification`] with a one-line account.
    pub fn into_result(self) -> Result<Check> {
        if self.passed {
            Ok(self)
        } else {
            Err(Error::Verification(failure_line("output", &self)))
        }
    }
}

/// One line for a failed check of `what`: what it was compared with, the errors, the bounds, and
/// where it first failed.
pub fn failure_line(what: &str, check: &Check) -> String {
    format!(
        "{what} vs {}: relative Frobenius {} (bound {}), max |d| {}, elementwise {}: {}",
        check.against,
        num(check.rel_fro),
        num(check.rel_fro_bound),
        num(check.max_abs),
        check.elementwise_bound,
        check.first_failure.as_deref().unwrap_or("passed"),
    )
}

impl fmt::Display for Check {
    /// One line: `vs cuBLAS bf16: rel. Frobenius 1.5e-3 (bound 4.9e-3), max |d| 0.0625 over
    /// 16777216 elements: pass`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "vs {}: relative Frobenius {} (bound {}), max |d| {} over {} elements: ",
            self.against,
            num(self.rel_fro),
            num(self.rel_fro_bound),
            num(self.max_abs),
            self.compared
        )?;
        match (&self.passed, &self.first_failure) {
            (true, _) => write!(f, "pass"),
            (false, Some(why)) => write!(f, "FAIL: {why}"),
            (false, None) => write!(f, "FAIL"),
        }
    }
}

/// bf16 → f64, exact and branch-free (a bf16 is the top half of an f32; NaN and Inf carry over).
#[inline(always)]
fn wide(v: bf16) -> f64 {
    f32::from_bits(u32::from(v.to_bits()) << 16) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bf(v: &[f64]) -> Vec<bf16> {
        v.iter().map(|&x| bf16::from_f64(x)).collect()
    }

    /// A reference with every element distinct and nonzero, n elements.
    fn ramp(n: usize) -> Vec<f64> {
        (0..n).map(|i| 1.0 + (i % 97) as f64 / 8.0).collect()
    }

    #[test]
    fn an_exact_output_passes_with_zero_error() {
        let shape = Shape::new(300, 301, 8);
        let r = ramp(300 * 301);
        let got = bf(&r);
        let exact: Vec<f64> = got.iter().map(|v| v.to_f64()).collect();
        for reference in [Reference::F64(exact), Reference::Bf16(got.clone())] {
            let c = compare("x", &got, &reference, shape, &Bounds::gpu_vs_exact());
            assert!(
                c.passed && c.rel_fro == 0.0 && c.max_abs == 0.0 && c.first_failure.is_none(),
                "{c:?}"
            );
            assert_eq!(c.compared, 300 * 301);
        }
    }

    #[test]
    fn nan_and_inf_fail_and_the_first_bad_index_is_reported() {
        let shape = Shape::new(300, 400, 8); // 120000 elements: several parallel chunks
        let r = ramp(120_000);
        let reference = Reference::F64(r.clone());
        for poison in [bf16::NAN, bf16::INFINITY, bf16::NEG_INFINITY] {
            let mut got = bf(&r);
            // Bad elements in three different chunks; the lowest index must be reported.
            for at in [100_000, 70_001, 40_123] {
                got[at] = poison;
            }
            let c = compare("ref", &got, &reference, shape, &Bounds::gpu_vs_exact());
            assert!(!c.passed && c.rel_fro.is_nan() && c.max_abs.is_nan(), "{c:?}");
            let why = c.first_failure.unwrap();
            assert!(why.starts_with("C[100, 123] = "), "{why}");
            assert!(why.contains("3 of 120000 elements"), "{why}");
        }
    }

    #[test]
    fn the_elementwise_bound_is_a_sharp_line() {
        // One element moved to 0.9× and then 1.1× its bound away from the reference.
        let shape = Shape::new(64, 64, 8);
        let r: Vec<f64> = ramp(4096).iter().map(|v| bf16::from_f64(*v).to_f64()).collect();
        let rms = (r.iter().map(|v| v * v).sum::<f64>() / 4096.0).sqrt();
        let bounds = Bounds::gpu_vs_gpu();
        let at = 2000;
        let bound = bounds.rtol * r[at].abs() + bounds.atol_rms * rms;
        let mut exact = r.clone();
        for (factor, passes) in [(0.9, true), (1.1, false)] {
            // Move the reference, not the bf16 output, so the distance is exactly factor·bound.
            exact[at] = r[at] + factor * bound;
            let c = compare("ref", &bf(&r), &Reference::F64(exact.clone()), shape, &bounds);
            assert_eq!(c.passed, passes, "{factor}: {c:?}");
            if !passes {
                assert!(c.first_failure.unwrap().starts_with("C[31, 16] = "));
            }
        }
    }

    #[test]
    fn a_small_uniform_error_fails_the_frobenius_bound_alone() {
        // Every element 0.6 % too large: inside rtol = 2^-7 elementwise, outside rel_fro = 2^-8 + 2^-10.
        let shape = Shape::new(32, 32, 8);
        let r: Vec<f64> = (0..1024)
            .map(|i| 2f64.powi(i % 5) * (1.0 + (i % 7) as f64 / 8.0))
            .collect();
        let got = bf(&r);
        let off: Vec<f64> = got.iter().map(|v| v.to_f64() / 1.006).collect();
        let c = compare("ref", &got, &Reference::F64(off), shape, &Bounds::gpu_vs_gpu());
        assert!(!c.passed, "{c:?}");
        assert!(c.first_failure.unwrap().starts_with("relative Frobenius error"));
    }

    #[test]
    fn length_mismatches_fail_without_panicking() {
        let shape = Shape::new(4, 4, 8);
        let c = compare(
            "ref",
            &bf(&[1.0; 15]),
            &Reference::F64(vec![1.0; 16]),
            shape,
            &Bounds::gpu_vs_exact(),
        );
        assert!(!c.passed && c.first_failure.unwrap().contains("output has 15 elements"));
        let c = compare(
            "ref",
            &bf(&[1.0; 16]),
            &Reference::Bf16(bf(&[1.0; 17])),
            shape,
            &Bounds::gpu_vs_exact(),
        );
        assert!(!c.passed && c.first_failure.unwrap().contains("reference has 17 elements"));
        let sampled = Reference::Sampled {
            positions: vec![(4, 0)],
            values: vec![1.0],
        };
        let c = compare("ref", &bf(&[1.0; 16]), &sampled, shape, &Bounds::gpu_vs_exact());
        assert!(!c.passed && c.first_failure.unwrap().contains("outside 4x4x8"));
    }

    #[test]
    fn a_sampled_reference_still_scans_all_of_the_output_for_nan() {
        let shape = Shape::new(100, 90, 8);
        let r = ramp(9000);
        let positions = sample_positions(shape);
        let values: Vec<f64> = positions
            .iter()
            .map(|&(i, j)| bf16::from_f64(r[i * 90 + j]).to_f64())
            .collect();
        let reference = Reference::Sampled {
            positions: positions.clone(),
            values,
        };
        let mut got = bf(&r);
        let c = compare("CPU f64", &got, &reference, shape, &Bounds::gpu_vs_exact());
        assert!(c.passed && c.compared == positions.len() as u64, "{c:?}");
        let unsampled = (1..99)
            .flat_map(|i| (1..89).map(move |j| (i, j)))
            .find(|p| positions.binary_search(p).is_err())
            .unwrap();
        got[unsampled.0 * 90 + unsampled.1] = bf16::NAN;
        let c = compare("CPU f64", &got, &reference, shape, &Bounds::gpu_vs_exact());
        assert!(!c.passed, "{c:?}");
        let why = c.first_failure.unwrap();
        assert!(
            why.starts_with(&format!(
                "C[{}, {}] = NaN (not a sampled position",
                unsampled.0, unsampled.1
            )),
            "{why}"
        );
        assert!(
            why.contains(&format!("; 1 bad elements ({} of 9000 sampled", positions.len())),
            "{why}"
        );
        // A NaN at a sampled position counts once, not twice.
        got[0] = bf16::NAN;
        let why = compare("CPU f64", &got, &reference, shape, &Bounds::gpu_vs_exact())
            .first_failure
            .unwrap();
        assert!(
            why.starts_with("C[0, 0] = NaN, expected 1 ") && why.contains("; 2 bad elements"),
            "{why}"
        );
    }

    #[test]
    fn a_failed_check_becomes_one_line_and_round_trips_through_json() {
        let shape = Shape::new(2, 2, 8);
        let got = bf(&[1.0, f64::NAN, 3.0, 4.0]);
        let c = compare(
            "cuBLAS bf16",
            &got,
            &Reference::Bf16(bf(&[1.0, 2.0, 3.0, 4.0])),
            shape,
            &Bounds::gpu_vs_gpu(),
        );
        let json = serde_json::to_string(&c).unwrap();
        let back: Check = serde_json::from_str(&json).unwrap();
        assert!(back.rel_fro.is_nan() && !back.passed && back.first_failure == c.first_failure);
        let e = c.into_result().unwrap_err();
        let line = e.to_string();
        assert!(!line.contains('\n'));
        assert!(
            line.starts_with("verification failed: output vs cuBLAS bf16: relative Frobenius NaN"),
            "{line}"
        );
        assert!(line.contains("C[0, 1] = NaN, expected 2"), "{line}");
        assert!(line.contains("|d| <= 2^-7·|ref| + 2^-8·rms(ref)"), "{line}");
        let ok = compare(
            "x",
            &got[..1],
            &Reference::Bf16(got[..1].to_vec()),
            Shape::new(1, 1, 8),
            &Bounds::gpu_vs_gpu(),
        );
        assert!(ok.clone().into_result().is_ok() && ok.to_string().ends_with("pass"));
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(num(3.25), "3.25");
        assert_eq!(num(-0.0048828125), "-0.00488281");
        assert_eq!(num(123456.0), "123456");
        assert_eq!(num(1234567.0), "1.23457e6");
        assert_eq!(num(1e-7), "1.00000e-7");
        assert_eq!(num(0.0), "0");
        assert_eq!(num(f64::NAN), "NaN");
    }
}
