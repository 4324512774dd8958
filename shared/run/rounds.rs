//! Launches in rounds: the order in which a loop launches its contenders so that none holds a
//! favoured slot ([`round_order`], the timing loop's and step 10's trials'), and the median a
//! contender's launches are summarised by ([`median`]). A layer below the steps, which time their own
//! trials with them ([`crate::run::timing`] says why the order matters).

/// Rounds after which [`round_order`] repeats: `k` for an even number of contenders, `2k` for an odd
/// one (a Williams design needs the square and its mirror then), 1 for a single contender.
pub fn rotation_period(k: usize) -> u32 {
    match k {
        0 | 1 => 1,
        k if k % 2 == 0 => k as u32,
        k => 2 * k as u32,
    }
}

/// The order in which round `round` launches `k` contenders: slot `p` holds contender
/// `round_order(round, k)[p]`. Row `round` of a Williams design: the first row is 0, 1, k−1, 2, k−2, …,
/// each further row adds 1 (mod k), and for odd `k` the second `k` rows are the first `k` reversed.
/// Over [`rotation_period`] rounds every contender holds every slot equally often, and every contender
/// comes right after every other one equally often.
pub fn round_order(round: u32, k: usize) -> Vec<usize> {
    if k == 0 {
        return Vec::new();
    }
    let first: Vec<usize> = (0..k)
        .map(|p| if p % 2 == 1 { p.div_ceil(2) } else { (k - p / 2) % k })
        .collect();
    let period = rotation_period(k) as usize;
    let row = round as usize % period;
    let mut order: Vec<usize> = first.iter().map(|&c| (c + row % k) % k).collect();
    if row >= k {
        order.reverse();
    }
    order
}

/// The median of `samples` (the mean of the middle two for an even count); `None` for none.
pub fn median(samples: &[f64]) -> Option<f64> {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => None,
        n if n % 2 == 1 => Some(sorted[n / 2]),
        n => Some(0.5 * (sorted[n / 2 - 1] + sorted[n / 2])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Over one period every contender holds every slot equally often, and follows every other
    /// contender (within a round) equally often: no slot and no neighbour is anyone's favourite.
    #[test]
    fn the_round_order_favours_no_slot_and_no_neighbour() {
        for k in 1..=12 {
            let period = rotation_period(k);
            let mut in_slot = vec![vec![0u32; k]; k];
            let mut after = vec![vec![0u32; k]; k];
            for r in 0..period {
                let order = round_order(r, k);
                let mut sorted = order.clone();
                sorted.sort_unstable();
                assert_eq!(sorted, (0..k).collect::<Vec<_>>(), "round {r} of {k}: {order:?}");
                for (slot, &c) in order.iter().enumerate() {
                    in_slot[c][slot] += 1;
                }
                for pair in order.windows(2) {
                    after[pair[1]][pair[0]] += 1;
                }
                // The order repeats after a period.
                assert_eq!(round_order(r + period, k), order);
            }
            let per_slot = period / k as u32;
            assert!(in_slot.iter().flatten().all(|&n| n == per_slot), "{k}: {in_slot:?}");
            if k > 1 {
                let per_pair = period * (k as u32 - 1) / (k * (k - 1)) as u32;
                for (c, row) in after.iter().enumerate() {
                    for (d, &n) in row.iter().enumerate() {
                        assert_eq!(n, if c == d { 0 } else { per_pair }, "{k}: {c} after {d}");
                    }
                }
            }
        }
        // Two contenders take turns first; the step is not always first.
        assert_eq!((round_order(0, 2), round_order(1, 2)), (vec![0, 1], vec![1, 0]));
    }

    #[test]
    fn the_median_is_the_middle_or_the_mean_of_the_middle_two() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }
}
