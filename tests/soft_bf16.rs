//! The software fp32 → bf16 rounding of `shared/cuda/common.cuh` (the T4's path, which has no `cvt` to
//! bf16), transliterated bit for bit, against the hardware rule: round to nearest, ties to even, as
//! `cvt.rn.bf16.f32` does (the `half` crate's `bf16::from_f32` is that rounding), and every NaN to the
//! canonical quiet NaN `0x7fff` the `cvt` writes. On all 2³² inputs in a release build (`cargo test
//! --release --test soft_bf16`, seconds); in a debug build on every boundary case and a sample.
//! tests/gpu.rs checks on a GPU that whole GEMMs built with each path agree bit for bit.

/// common.cuh's `float_to_bf16` under `GEMM_LADDER_BF16_BY_HAND`, line for line.
fn soft_bf16(bits: u32) -> u16 {
    if (bits & 0x7fff_ffff) > 0x7f80_0000 {
        return 0x7fff;
    }
    let mut high = bits >> 16;
    let low = bits & 0xffff;
    if low > 0x8000 || (low == 0x8000 && (high & 1) != 0) {
        high += 1;
    }
    high as u16
}

/// What `cvt.rn.bf16.f32` gives: round to nearest even, NaN as `0x7fff`.
fn hardware_rule(bits: u32) -> u16 {
    let x = f32::from_bits(bits);
    if x.is_nan() {
        0x7fff
    } else {
        half::bf16::from_f32(x).to_bits()
    }
}

fn check_range(range: impl Iterator<Item = u32>) -> u64 {
    let mut checked = 0u64;
    for bits in range {
        let (soft, rule) = (soft_bf16(bits), hardware_rule(bits));
        assert_eq!(
            soft,
            rule,
            "fp32 {bits:#010x} ({}): software {soft:#06x}, hardware rule {rule:#06x}",
            f32::from_bits(bits)
        );
        checked += 1;
    }
    checked
}

/// Every high half with each low half that decides a rounding (0, just below, at and just above the
/// tie, the largest), every NaN/infinity edge, and a pseudo-random sample.
fn boundary_and_sampled_inputs() -> Vec<u32> {
    let mut inputs = Vec::new();
    for high in 0..=0xffffu32 {
        for low in [0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xfffe, 0xffff] {
            inputs.push(high << 16 | low);
        }
    }
    inputs.extend([
        0x7f80_0000, // +inf
        0xff80_0000, // -inf
        0x7f80_0001, // the smallest signalling NaN
        0xffff_ffff, // a negative NaN with every payload bit
        0x7fc0_0000, // the default quiet NaN
        0x7f7f_ffff, // the largest finite: rounds up to infinity
        0x7f7f_8000, // a tie at the top, kept part odd: infinity
        0x0000_0001, // the smallest subnormal
        0x8000_0000, // -0
    ]);
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..1 << 20 {
        // xorshift64*
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        inputs.push((state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32);
    }
    inputs
}

#[test]
fn the_software_rounding_equals_the_cvt_on_every_boundary_and_a_sample() {
    let inputs = boundary_and_sampled_inputs();
    assert_eq!(check_range(inputs.iter().copied()), inputs.len() as u64);
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "all 2^32 inputs take a release build: `cargo test --release --test soft_bf16`"
)]
fn the_software_rounding_equals_the_cvt_on_all_inputs_in_a_release_build() {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get()) as u64;
    let chunk = (1u64 << 32).div_ceil(threads);
    let checked: u64 = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let start = t * chunk;
                let end = ((t + 1) * chunk).min(1 << 32);
                scope.spawn(move || check_range((start..end).map(|b| b as u32)))
            })
            .collect();
        workers.into_iter().map(|w| w.join().expect("a worker panicked")).sum()
    });
    assert_eq!(checked, 1 << 32);
}

#[test]
fn the_nan_of_the_cvt_is_the_canonical_quiet_nan() {
    for bits in [0x7f80_0001u32, 0xffc0_0000, 0x7fff_ffff, 0xff80_0001] {
        assert_eq!(soft_bf16(bits), 0x7fff);
        assert!(half::bf16::from_bits(soft_bf16(bits)).is_nan());
    }
    // Round to nearest even, by hand: 1 + 2^-8 is a tie between 1 and 1 + 2^-7; 1 is even.
    assert_eq!(soft_bf16(0x3f80_8000), 0x3f80);
    assert_eq!(soft_bf16(0x3f81_8000), 0x3f82);
    assert_eq!(soft_bf16(0x3f80_8001), 0x3f81);
}
