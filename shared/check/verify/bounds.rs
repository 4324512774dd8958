//! The bounds a correct kernel's output stays within, and where each comes from.

use super::*;

/// What a correct kernel may differ from a reference by. Two parts, both scale-free:
///
/// - relative Frobenius: `‖out − ref‖_F / ‖ref‖_F <= rel_fro`;
/// - elementwise: `|out − ref| <= rtol·|ref| + atol_rms·rms(ref)` at every compared element, where
///   `rms(ref) = ‖ref‖_F / √(compared)`. The `atol` term covers elements near zero, where
///   cancellation makes relative error meaningless; scaling it by `rms(ref)` keeps the bound
///   independent of the inputs' scale and of K.
///
/// # Derivation
///
/// A correct kernel forms `s = fl32(Σ_k a_ik·b_jk)` (a product of two bf16 values has at most 16
/// significant bits, so it is exact in fp32; only the additions round) and stores `bf16_rn(s)`.
///
/// - **Output rounding.** bf16 keeps 8 significant bits, so `|bf16_rn(s) − s| <= 2^-8·|s|`.
/// - **fp32 accumulation**, `e = |s − c|` against the exact `c`. The worst case `(K−1)·2^-24·Σ|a·b|`
///   is useless (at K = 16384 it is ≈ 0.1·rms(c), larger than the dropped term of an off-by-one
///   in K). For the problem's inputs (uniform in [-1, 1): `rms(c) = √(K/9)`) each addition rounds
///   at the size of the partial sum, `≈ √(k/9)`, so `e` is a random walk of relative size
///   `≈ 2^-24·√(K/6) / rms(c) ≈ 3e-6` at K = 16384; even if every rounding went the same way
///   (truncating adders, as tensor cores are reported to have) `e <= 2^-24·(2/3)·K·rms(c) ≈
///   6.5e-4·rms(c)` at K = 16384. `tests/checker.rs` measures both on CPU emulations: at most
///   1.1e-5·rms and 5.8e-4·rms.
///   We allow `e <= 2^-9·rms(ref) ≈ 2e-3·rms(ref)`: 3× the coherent worst case at K = 16384.
///
/// **(a) GPU vs exact** ([`Bounds::gpu_vs_exact`]): `|out − c| <= 2^-8·|s| + e <= 2^-8·|c| +
/// (1 + 2^-8)·e`, so `rtol = 2^-8`, `atol = 2^-9·rms`. Frobenius: the rounding alone is at most
/// `2^-8` relative (measured: 1.7e-3), so `rel_fro <= 2^-8 + 2^-10`.
///
/// **(b) GPU vs GPU** ([`Bounds::gpu_vs_gpu`]): two roundings of two fp32 sums that differ in
/// order. Where `s1` and `s2` fall on either side of a rounding point the outputs are adjacent
/// bf16 values, one ulp apart, and one ulp is at most `2^-7·|ref|`; beyond that the sums differ by
/// up to `e1 + e2`. So `rtol = 2^-7`, `atol = 2·2^-9·rms = 2^-8·rms`. Frobenius: a straddle
/// needs `|s1 − s2|` to reach across a rounding point, which happens at a fraction
/// `≈ |s1 − s2| / ulp` of the elements: ≈ 1e-3 for round-to-nearest sums, ≈ 0.1 at the coherent
/// worst case, so `rel_fro ≲ √0.1·2^-7 ≈ 2.5e-3` (measured: 3.5e-4, truncating vs forward at
/// K = 16384); we use the same `2^-8 + 2^-10` as (a).
///
/// The Frobenius bounds are statistical: they count on rounding errors averaging over many
/// elements. Below [`Bounds::STATISTICAL_MIN`] compared elements (a single straddle in a 1×1
/// output is a relative error of 2^-7) the Frobenius bound becomes `rtol + atol_rms`, which is what
/// the elementwise bound already implies: `‖d‖ <= rtol·‖ref‖ + atol_rms·rms·√n = (rtol +
/// atol_rms)·‖ref‖`.
///
/// # What they catch, and where they are designed for
///
/// Designed for this problem's inputs, K from 8 to 16384 and outputs of at least 256 elements
/// (smaller outputs are checked, with the weaker Frobenius bound above). An off-by-one in K drops
/// one term `a·b` (|a·b| averages 1/4, rms 1/3) from sums of rms `√(K/9)`: relative Frobenius
/// `1/√K`, 0.0078 at K = 16384, about the size of the bounds. Elementwise, the dropped term meets
/// `atol = 2^-9·rms ≈ 0.083` (a) or `2^-8·rms ≈ 0.17` (b) at K = 16384 (plus `rtol·|ref|`), and
/// about a third (a) or a quarter (b) of the elements fail, so any output of more than a handful of
/// elements is rejected. A ×1.01 scale error fails (a) elementwise at most elements above rms/3,
/// and both in Frobenius (0.01). A truncating (round-toward-zero) bf16 store fails (a) elementwise;
/// (b) cannot tell it from a straddle.
///
/// Where `rms(ref)` is that of a handful of elements (a 1×1 output), an element whose exact value
/// cancels to below ≈ 2^-15 of `Σ|a·b|` cannot meet any scale-free bound; at K = 8 that is a
/// chance of about 1e-5 per element.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    /// Relative Frobenius bound, used when at least [`Bounds::STATISTICAL_MIN`] elements are compared.
    pub rel_fro: f64,
    /// Elementwise relative part: `rtol·|ref|`.
    pub rtol: f64,
    /// Elementwise absolute part, in units of `rms(ref)`.
    pub atol_rms: f64,
}

impl Bounds {
    /// Fewest compared elements for which the statistical Frobenius bound applies.
    pub const STATISTICAL_MIN: u64 = 256;

    /// (a) A bf16 output of an fp32-accumulating GPU kernel against the exact (f64) product:
    /// `rel_fro <= 2^-8 + 2^-10`, `|d| <= 2^-8·|ref| + 2^-9·rms(ref)`.
    pub const fn gpu_vs_exact() -> Bounds {
        Bounds {
            rel_fro: P8 + P10,
            rtol: P8,
            atol_rms: P9,
        }
    }

    /// (b) A bf16 output against another bf16 output accumulated in fp32 in another order (the
    /// previous step, cuBLAS bf16): `rel_fro <= 2^-8 + 2^-10`, `|d| <= 2^-7·|ref| + 2^-8·rms(ref)`.
    pub const fn gpu_vs_gpu() -> Bounds {
        Bounds {
            rel_fro: P8 + P10,
            rtol: P7,
            atol_rms: P8,
        }
    }

    /// (c) An fp32 output (step 11) against the exact (f64) product: no output rounding, only the fp32
    /// accumulation `e <= 2^-9·rms(ref)` of (a)'s derivation, so `atol = 2^-9·rms`, a token
    /// `rtol = 2^-16` (fp32 is 2^-24; the slack covers an accumulation whose error grows with the
    /// element rather than with rms), and `rel_fro <= 2^-10` (the coherent worst case measured at
    /// K = 16384 is 5.8e-4·rms; a round-to-nearest accumulation is ~1e-5).
    pub const fn f32_vs_exact() -> Bounds {
        Bounds {
            rel_fro: P10,
            rtol: P16,
            atol_rms: P9,
        }
    }

    /// (d) An fp32 output against another fp32 output accumulated in another order (step 11 against
    /// cuBLAS with fp32 `C` on the dequantized operands): two accumulations, `atol = 2·2^-9·rms`,
    /// `rtol = 2^-16` as (c), `rel_fro <= 2^-9` (two coherent worst cases in opposite directions).
    /// 128× tighter than (b) in `rtol`: what the missing bf16 rounding buys.
    pub const fn f32_vs_f32() -> Bounds {
        Bounds {
            rel_fro: P9,
            rtol: P16,
            atol_rms: P8,
        }
    }

    /// (e) An fp32 output against a bf16 output of another fp32-accumulating kernel (step 11 against
    /// step 10 or cuBLAS bf16 on the dequantized operands): the reference rounded once, by at most
    /// half a bf16 ulp, `2^-8·|ref|`; both accumulated, `e1 + e2 <= 2^-8·rms`. So `rtol = 2^-8`,
    /// `atol = 2^-8·rms`, and the Frobenius bound of (a), `2^-8 + 2^-10`.
    pub const fn f32_vs_bf16() -> Bounds {
        Bounds {
            rel_fro: P8 + P10,
            rtol: P8,
            atol_rms: P8,
        }
    }

    /// The bounds for a reference of this kind: (a) for an exact one, (b) for a bf16 one.
    pub fn for_reference(reference: &Reference) -> Bounds {
        match reference {
            Reference::Bf16(_) => Bounds::gpu_vs_gpu(),
            Reference::F64(_) | Reference::Sampled { .. } => Bounds::gpu_vs_exact(),
        }
    }

    /// The Frobenius bound that applies when `compared` elements are compared.
    pub fn rel_fro_for(&self, compared: u64) -> f64 {
        if compared >= Self::STATISTICAL_MIN {
            self.rel_fro
        } else {
            self.rel_fro.max(self.rtol + self.atol_rms)
        }
    }

    /// The elementwise bound in words, e.g. `|d| <= 2^-8·|ref| + 2^-9·rms(ref)`.
    pub fn describe(&self) -> String {
        format!(
            "|d| <= {}·|ref| + {}·rms(ref)",
            pow2_or_number(self.rtol),
            pow2_or_number(self.atol_rms)
        )
    }
}

const P7: f64 = 1.0 / 128.0;
const P8: f64 = 1.0 / 256.0;
const P9: f64 = 1.0 / 512.0;
const P10: f64 = 1.0 / 1024.0;
const P16: f64 = 1.0 / 65536.0;

/// `2^-n` for a power of two, the number otherwise.
fn pow2_or_number(x: f64) -> String {
    if x > 0.0 && x.log2().fract() == 0.0 {
        format!("2^{}", x.log2() as i32)
    } else {
        num(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_what_the_docs_say() {
        let a = Bounds::gpu_vs_exact();
        assert_eq!(
            (a.rtol, a.atol_rms, a.rel_fro),
            (2f64.powi(-8), 2f64.powi(-9), 2f64.powi(-8) + 2f64.powi(-10))
        );
        let b = Bounds::gpu_vs_gpu();
        assert_eq!(
            (b.rtol, b.atol_rms, b.rel_fro),
            (2f64.powi(-7), 2f64.powi(-8), 2f64.powi(-8) + 2f64.powi(-10))
        );
        assert_eq!(a.describe(), "|d| <= 2^-8·|ref| + 2^-9·rms(ref)");
        assert_eq!(b.rel_fro_for(256), b.rel_fro);
        assert_eq!(b.rel_fro_for(255), 2f64.powi(-7) + 2f64.powi(-8));
        assert_eq!(Bounds::for_reference(&Reference::Bf16(vec![])), b);
        assert_eq!(Bounds::for_reference(&Reference::F64(vec![])), a);
    }
}
