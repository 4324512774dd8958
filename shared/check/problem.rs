//! The problem every step solves, `C = A · Bᵀ`, its shape contract, and its seeded inputs.

use half::bf16;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::fmt;

/// M×N×K: `A` is M×K, `B` is N×K (both row-major, K contiguous), `C` is M×N row-major.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
pub struct Shape {
    pub m: usize,
    pub n: usize,
    pub k: usize,
}

/// Kernels index rows and columns with 32-bit integers (offsets are 64-bit), and a launch grid has at
/// most 65535 blocks along y: 2^20 rows or columns keep every step's grid and indices in range.
const MAX_DIM: usize = 1 << 20;

impl Shape {
    pub const fn new(m: usize, n: usize, k: usize) -> Shape {
        Shape { m, n, k }
    }

    pub const fn square(size: usize) -> Shape {
        Shape {
            m: size,
            n: size,
            k: size,
        }
    }

    /// How many `rows` × `cols` tiles cover C (the last row and column of tiles may be partial).
    pub const fn tiles(&self, rows: u32, cols: u32) -> usize {
        self.m.div_ceil(rows as usize) * self.n.div_ceil(cols as usize)
    }

    /// Floating-point operations of one GEMM: a multiply and an add per (i, j, k).
    pub fn flops(&self) -> f64 {
        2.0 * self.m as f64 * self.n as f64 * self.k as f64
    }

    /// The rule every step shares (DESIGN.md): any M, N ≥ 1; K ≥ 8 and a multiple of 8, so that a row
    /// of bf16 is a multiple of 16 bytes (the TMA stride rule). Returns the broken rule, if any.
    pub fn contract_violation(&self) -> Option<String> {
        if self.m == 0 || self.n == 0 {
            return Some("M and N must be at least 1".into());
        }
        if self.k < 8 || !self.k.is_multiple_of(8) {
            return Some(format!(
                "K must be at least 8 and a multiple of 8 (a bf16 row must span a multiple of 16 bytes); K = {}",
                self.k
            ));
        }
        if self.m > MAX_DIM || self.n > MAX_DIM || self.k > MAX_DIM {
            return Some(format!(
                "each of M, N and K must be at most {MAX_DIM} (2^20); got {self}"
            ));
        }
        None
    }
}

impl Shape {
    /// The contract as an error naming who refused the shape and the rule it broke.
    pub fn check(&self, refused_by: &str) -> crate::error::Result<()> {
        match self.contract_violation() {
            None => Ok(()),
            Some(rule) => Err(crate::error::Error::Shape {
                step: refused_by.to_string(),
                m: self.m,
                n: self.n,
                k: self.k,
                rule,
            }),
        }
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}x{}", self.m, self.n, self.k)
    }
}

/// SplitMix64's finaliser: a counter-based generator, so any element can be drawn independently
/// (and in parallel) from (seed, matrix, index).
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Which operand a stream of random numbers belongs to, so `A` and `B` differ for one seed.
#[derive(Debug, Clone, Copy)]
pub enum Operand {
    A = 1,
    B = 2,
}

/// `len` bf16 values uniform in [-1, 1] (rounding to bf16 can reach 1), never all zero, reproducible from `seed`.
pub fn random_bf16(seed: u64, operand: Operand, len: usize) -> Vec<bf16> {
    let stream = mix(seed ^ mix(operand as u64));
    (0..len)
        .into_par_iter()
        .map(|i| {
            let bits = mix(stream ^ (i as u64).wrapping_mul(0xD1B5_4A32_D192_ED03));
            // 24 random bits -> [0, 1) -> [-1, 1)
            let unit = (bits >> 40) as f32 / (1u64 << 24) as f32;
            bf16::from_f32(2.0 * unit - 1.0)
        })
        .collect()
}

/// A fresh seed for a run that was not given one: printed, so the run can be repeated with `--seed`.
pub fn fresh_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    mix(nanos ^ (std::process::id() as u64) << 32) % 1_000_000_000
}

/// The inputs of one run, on the host.
pub struct Inputs {
    pub shape: Shape,
    pub seed: u64,
    pub a: Vec<bf16>,
    pub b: Vec<bf16>,
}

impl Inputs {
    pub fn generate(shape: Shape, seed: u64) -> Inputs {
        Inputs {
            shape,
            seed,
            a: random_bf16(seed, Operand::A, shape.m * shape.k),
            b: random_bf16(seed, Operand::B, shape.n * shape.k),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contract_accepts_ragged_m_n_and_refuses_bad_k() {
        assert!(Shape::new(1, 1, 8).contract_violation().is_none());
        assert!(Shape::new(4099, 17, 4104).contract_violation().is_none());
        assert!(Shape::new(0, 4, 8).contract_violation().is_some());
        assert!(Shape::new(4, 0, 8).contract_violation().is_some());
        assert!(Shape::new(4, 4, 4).contract_violation().is_some());
        assert!(Shape::new(4, 4, 12)
            .contract_violation()
            .unwrap()
            .contains("multiple of 8"));
    }

    #[test]
    fn inputs_are_reproducible_distinct_and_not_zero() {
        let x = random_bf16(7, Operand::A, 10_000);
        let y = random_bf16(7, Operand::A, 10_000);
        let z = random_bf16(7, Operand::B, 10_000);
        let w = random_bf16(8, Operand::A, 10_000);
        assert_eq!(x, y);
        assert_ne!(x, z);
        assert_ne!(x, w);
        let zeros = x.iter().filter(|v| v.to_f32() == 0.0).count();
        assert!(zeros < 10, "{zeros} zeros in 10000 draws");
        assert!(x.iter().all(|v| (-1.0..=1.0).contains(&v.to_f32())));
        let mean: f64 = x.iter().map(|v| v.to_f64()).sum::<f64>() / x.len() as f64;
        assert!(mean.abs() < 0.03, "mean {mean}");
    }

    #[test]
    fn flops_count_a_multiply_and_an_add() {
        assert_eq!(Shape::square(4096).flops(), 2.0 * 4096f64.powi(3));
    }
}
