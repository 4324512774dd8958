//! The problem every step solves, `C = A · Bᵀ`, and its seeded inputs. Its shape and the shape contract
//! are in [`crate::shape`] (every layer speaks of shapes), re-exported here.

pub use crate::shape::Shape;
use half::bf16;
use rayon::prelude::*;

/// SplitMix64's finaliser: a counter-based generator, so any element can be drawn independently
/// (and in parallel) from (seed, matrix, index).
pub fn mix(mut z: u64) -> u64 {
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
}
