//! The GEMM's shape, M×N×K, and the contract every step accepts: the one type every layer speaks of
//! (cuBLAS calls, launches, checks, records, the book), so it sits at the bottom, beside the errors.

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
    fn flops_count_a_multiply_and_an_add() {
        assert_eq!(Shape::square(4096).flops(), 2.0 * 4096f64.powi(3));
    }
}
