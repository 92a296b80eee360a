//! Progress that rises: the specification says each notification's `progress` must be
//! greater than the last, so a repeated, falling or non-number value is dropped. It neither
//! shows nor extends a call's time limit: a server cannot keep a call alive by saying the
//! same thing again.

/// The last progress value a call took, and the test of the next.
#[derive(Debug, Default, Clone, Copy)]
pub struct Rising(Option<f64>);

impl Rising {
    /// Take `value` if it is a finite number greater than every value taken before.
    pub fn admits(&mut self, value: f64) -> bool {
        if !value.is_finite() || self.0.is_some_and(|last| value <= last) {
            return false;
        }
        self.0 = Some(value);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::Rising;
    use proptest::prelude::*;

    #[test]
    fn only_a_rising_value_is_taken() {
        let mut rising = Rising::default();
        let taken: Vec<f64> = [0.0, 1.5, 1.5, 1.0, f64::NAN, 2.0, f64::INFINITY, 2.0, 2.5]
            .into_iter()
            .filter(|v| rising.admits(*v))
            .collect();
        assert_eq!(taken, [0.0, 1.5, 2.0, 2.5]);
    }

    proptest! {
        #[test]
        fn what_is_taken_strictly_rises_whatever_comes(values in proptest::collection::vec(any::<f64>(), 0..64)) {
            let mut rising = Rising::default();
            let taken: Vec<f64> = values.into_iter().filter(|v| rising.admits(*v)).collect();
            prop_assert!(taken.windows(2).all(|w| w[0] < w[1]));
            prop_assert!(taken.iter().all(|v| v.is_finite()));
        }
    }
}
