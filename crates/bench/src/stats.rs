//! Medians and percentiles of repeated measurements.

/// The median; NaN for no values.
pub fn median(values: &[f64]) -> f64 {
    percentile(values, 50.0)
}

/// The `p`th percentile by linear interpolation between closest ranks; NaN for no values.
pub fn percentile(values: &[f64], p: f64) -> f64 {
    let mut sorted: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted.sort_by(f64::total_cmp);
    let rank = (p / 100.0).clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let low = rank.floor() as usize;
    let high = rank.ceil() as usize;
    let weight = rank - low as f64;
    sorted[low] * (1.0 - weight) + sorted[high] * weight
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn p95_of_a_hundred() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        assert!((percentile(&values, 95.0) - 95.05).abs() < 1e-9);
        assert_eq!(percentile(&values, 100.0), 100.0);
    }
}
