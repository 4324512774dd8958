//! What an output is compared with, and the exact product on the CPU: in full for small shapes, at
//! sampled positions (every edge element, one element in every block) for large ones.

use super::*;

/// What an output is compared with.
#[derive(Debug, Clone, PartialEq)]
pub enum Reference {
    /// Another GPU's bf16 output, all M×N elements, row-major.
    Bf16(Vec<bf16>),
    /// The exact product, all M×N elements, row-major.
    F64(Vec<f64>),
    /// The exact product at some positions `(row, col)`, sorted by linear index, no repeats.
    /// The whole output is still scanned for NaN and Inf.
    Sampled {
        positions: Vec<(usize, usize)>,
        values: Vec<f64>,
    },
}

impl Reference {
    /// How many elements it gives a value for.
    pub fn len(&self) -> usize {
        match self {
            Reference::Bf16(v) => v.len(),
            Reference::F64(v) => v.len(),
            Reference::Sampled { values, .. } => values.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Up to this many multiply-adds (M·N·K) [`cpu_reference`] computes the whole product; above it,
/// a sample. 2^27 takes about 30 ms on one core in a release build (1.4 s on two in a debug one).
pub const FULL_REFERENCE_MACS: u64 = 1 << 27;

/// At most this many blocks get one sampled element each (besides the edges).
pub const SAMPLE_BLOCKS: usize = 16384;

/// The exact product `A·Bᵀ` in f64: all of it when `M·N·K <= FULL_REFERENCE_MACS`, otherwise at
/// [`sample_positions`]. Each product of two bf16 values is exact in f64 and a sum of K of them has
/// a relative error of at most `K·2^-53` (≤ 2^-39 at K = 16384): exact for our purposes.
pub fn cpu_reference(a: &[bf16], b: &[bf16], shape: Shape) -> Reference {
    if (shape.m as u64) * (shape.n as u64) * (shape.k as u64) <= FULL_REFERENCE_MACS {
        cpu_reference_full(a, b, shape)
    } else {
        cpu_reference_sampled(a, b, shape)
    }
}

/// The exact product at every element (row-major), whatever the size.
pub fn cpu_reference_full(a: &[bf16], b: &[bf16], shape: Shape) -> Reference {
    let Shape { m, n, k } = shape;
    assert!(
        a.len() == m * k && b.len() == n * k,
        "A and B must be {m}×{k} and {n}×{k}"
    );
    let mut c = vec![0.0; m * n];
    c.par_chunks_mut(n.max(1)).enumerate().for_each(|(i, row)| {
        let a_row = &a[i * k..(i + 1) * k];
        for (j, out) in row.iter_mut().enumerate() {
            *out = dot(a_row, &b[j * k..(j + 1) * k]);
        }
    });
    Reference::F64(c)
}

/// The exact product at [`sample_positions`], whatever the size.
pub fn cpu_reference_sampled(a: &[bf16], b: &[bf16], shape: Shape) -> Reference {
    let Shape { m, n, k } = shape;
    assert!(
        a.len() == m * k && b.len() == n * k,
        "A and B must be {m}×{k} and {n}×{k}"
    );
    let positions = sample_positions(shape);
    let values = positions
        .par_iter()
        .map(|&(i, j)| dot(&a[i * k..(i + 1) * k], &b[j * k..(j + 1) * k]))
        .collect();
    Reference::Sampled { positions, values }
}

/// Where a sampled reference looks, sorted by linear index, no repeats: every element of the first
/// and last row and column (ragged edges are where tiling bugs live), and one pseudo-random element
/// in every b×b block, b the smallest power of two >= 16 with at most [`SAMPLE_BLOCKS`] blocks, so a
/// bug confined to any b×b tile is seen (b = 64 at 8192², 128 at 16384²). Deterministic in `shape`.
pub fn sample_positions(shape: Shape) -> Vec<(usize, usize)> {
    let Shape { m, n, .. } = shape;
    let mut b = 16;
    while m.div_ceil(b) * n.div_ceil(b) > SAMPLE_BLOCKS {
        b *= 2;
    }
    let (rows, cols) = (m.div_ceil(b), n.div_ceil(b));
    let mut positions = Vec::with_capacity(2 * (m + n) + rows * cols);
    for j in 0..n {
        positions.push((0, j));
        positions.push((m - 1, j));
    }
    for i in 0..m {
        positions.push((i, 0));
        positions.push((i, n - 1));
    }
    let seed = splitmix(0x5EED_0FC4_EC4E_2500 ^ splitmix(((m as u64) << 32) ^ (n as u64) ^ ((shape.k as u64) << 48)));
    for bi in 0..rows {
        for bj in 0..cols {
            let (i0, j0) = (bi * b, bj * b);
            let (h, w) = ((m - i0).min(b), (n - j0).min(b));
            let r = splitmix(seed ^ ((bi * cols + bj) as u64).wrapping_mul(0xD1B5_4A32_D192_ED03));
            positions.push((i0 + (r as u32 as usize) % h, j0 + ((r >> 32) as usize) % w));
        }
    }
    positions.sort_unstable();
    positions.dedup();
    positions
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Σ a_k·b_k in f64 over contiguous K, with eight independent accumulators so it vectorises.
fn dot(a: &[bf16], b: &[bf16]) -> f64 {
    let mut acc = [0.0f64; 8];
    let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (a8.remainder(), b8.remainder());
    for (x, y) in a8.zip(b8) {
        for ((s, &p), &q) in acc.iter_mut().zip(x).zip(y) {
            *s += wide(p) * wide(q);
        }
    }
    let tail: f64 = ra.iter().zip(rb).map(|(&x, &y)| wide(x) * wide(y)).sum();
    acc.iter().sum::<f64>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::problem::Inputs;

    #[test]
    fn sample_positions_cover_every_edge_and_every_block() {
        for shape in [
            Shape::new(1, 1, 8),
            Shape::new(1, 1000, 8),
            Shape::new(257, 255, 8),
            Shape::new(8192, 8192, 8),
        ] {
            let p = sample_positions(shape);
            assert!(p.windows(2).all(|w| w[0] < w[1]), "not sorted and unique at {shape}");
            let has = |x: (usize, usize)| p.binary_search(&x).is_ok();
            for j in 0..shape.n {
                assert!(has((0, j)) && has((shape.m - 1, j)));
            }
            for i in 0..shape.m {
                assert!(has((i, 0)) && has((i, shape.n - 1)));
            }
            assert_eq!(p, sample_positions(shape), "not deterministic");
        }
        // 8192²: b = 64, so each of the 128×128 blocks holds a sampled element.
        let p = sample_positions(Shape::square(8192));
        let mut seen = vec![false; 128 * 128];
        for &(i, j) in &p {
            seen[(i / 64) * 128 + j / 64] = true;
        }
        assert!(seen.iter().all(|&s| s));
        assert!(p.len() <= 4 * 8192 + SAMPLE_BLOCKS);
    }

    #[test]
    fn the_cpu_reference_is_the_exact_product_full_or_sampled() {
        let shape = Shape::new(37, 29, 72);
        let inputs = Inputs::generate(shape, 3);
        let naive = |i: usize, j: usize| -> f64 {
            (0..shape.k)
                .map(|k| inputs.a[i * shape.k + k].to_f64() * inputs.b[j * shape.k + k].to_f64())
                .sum()
        };
        let Reference::F64(full) = cpu_reference(&inputs.a, &inputs.b, shape) else {
            panic!("not full")
        };
        for i in 0..shape.m {
            for j in 0..shape.n {
                assert!((full[i * shape.n + j] - naive(i, j)).abs() < 1e-12);
            }
        }
        let Reference::Sampled { positions, values } = cpu_reference_sampled(&inputs.a, &inputs.b, shape) else {
            panic!("not sampled")
        };
        for (&(i, j), v) in positions.iter().zip(&values) {
            assert_eq!(*v, full[i * shape.n + j]);
        }
        // Above the limit, cpu_reference samples (cheap here: K = 16).
        let big = Shape::new(4096, 4096, 16);
        const { assert!(4096 * 4096 * 16 > FULL_REFERENCE_MACS) };
        let inputs = Inputs::generate(big, 4);
        assert!(matches!(
            cpu_reference(&inputs.a, &inputs.b, big),
            Reference::Sampled { .. }
        ));
    }
}
