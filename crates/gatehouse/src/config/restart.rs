//! How a stdio server that dies is started again, and (in a gateway) a server that failed
//! its first start is tried again: `"restart"` in the `"gatehouse"` object, each bound a
//! named default with its range, checked when read (`connect/restart.rs` runs it).
//!
//! ```json
//! "restart": {"firstDelayMs": 250, "factor": 2, "maxDelayMs": 30000,
//!             "attemptsPerWindow": 5, "windowMs": 60000}
//! ```

use std::{ops::RangeInclusive, time::Duration};

use serde_json::Value;

/// How long after a server died the first restart is tried (`firstDelayMs`).
pub const RESTART_FIRST_DELAY: Duration = Duration::from_millis(250);
/// The shortest and longest `firstDelayMs`: a millisecond to a minute.
pub const RESTART_FIRST_DELAY_MS_RANGE: RangeInclusive<u64> = 1..=60_000;
/// How much longer each wait is than the last, while restarts keep failing (`factor`).
pub const RESTART_FACTOR: u32 = 2;
/// The smallest and largest `factor`: 1 waits the same each time.
pub const RESTART_FACTOR_RANGE: RangeInclusive<u64> = 1..=10;
/// The longest wait between two restarts (`maxDelayMs`).
pub const RESTART_MAX_DELAY: Duration = Duration::from_secs(30);
/// The shortest and longest `maxDelayMs`: a millisecond to an hour (and not below
/// `firstDelayMs`).
pub const RESTART_MAX_DELAY_MS_RANGE: RangeInclusive<u64> = 1..=3_600_000;
/// Most starts of one server in any [`RESTART_WINDOW`] (`attemptsPerWindow`).
pub const RESTART_MAX_ATTEMPTS: usize = 5;
/// The fewest and most `attemptsPerWindow`.
pub const RESTART_MAX_ATTEMPTS_RANGE: RangeInclusive<u64> = 1..=1_000;
/// The window [`RESTART_MAX_ATTEMPTS`] counts in (`windowMs`); a run that lasted longer
/// than it starts the backoff afresh.
pub const RESTART_WINDOW: Duration = Duration::from_secs(60);
/// The shortest and longest `windowMs`: a second to a day.
pub const RESTART_WINDOW_MS_RANGE: RangeInclusive<u64> = 1_000..=86_400_000;

/// The backoff of restarts (`restart`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Restart {
    /// The wait before the first restart.
    pub first_delay: Duration,
    /// Each wait is this many times the last, while restarts keep failing.
    pub factor: u32,
    /// The longest wait.
    pub max_delay: Duration,
    /// Most starts in any `window`.
    pub max_attempts: usize,
    /// The window `max_attempts` counts in.
    pub window: Duration,
}

impl Default for Restart {
    fn default() -> Self {
        Restart {
            first_delay: RESTART_FIRST_DELAY,
            factor: RESTART_FACTOR,
            max_delay: RESTART_MAX_DELAY,
            max_attempts: RESTART_MAX_ATTEMPTS,
            window: RESTART_WINDOW,
        }
    }
}

/// Read `"restart"`: an object of the keys above, each optional; a key it does not know is
/// a warning, a bad value an error naming the key and its range.
pub(super) fn parse(v: &Value, warnings: &mut Vec<String>) -> Result<Restart, String> {
    let Value::Object(map) = v else {
        return Err("\"restart\" must be an object (firstDelayMs, factor, maxDelayMs, attemptsPerWindow, windowMs)".into());
    };
    let mut r = Restart::default();
    for (key, v) in map {
        let named = format!("restart.{key}");
        let number = |range| super::number::whole_number(&named, v, range);
        let millis = |range| number(range).map(Duration::from_millis);
        match key.as_str() {
            "firstDelayMs" => r.first_delay = millis(RESTART_FIRST_DELAY_MS_RANGE)?,
            "factor" => r.factor = number(RESTART_FACTOR_RANGE)? as u32,
            "maxDelayMs" => r.max_delay = millis(RESTART_MAX_DELAY_MS_RANGE)?,
            "attemptsPerWindow" => r.max_attempts = number(RESTART_MAX_ATTEMPTS_RANGE)? as usize,
            "windowMs" => r.window = millis(RESTART_WINDOW_MS_RANGE)?,
            other => warnings.push(format!(
                "gatehouse: unknown setting \"restart.{other}\" is ignored"
            )),
        }
    }
    if r.max_delay < r.first_delay {
        return Err(format!(
            "\"restart.maxDelayMs\" ({} ms) must not be below \"restart.firstDelayMs\" ({} ms)",
            r.max_delay.as_millis(),
            r.first_delay.as_millis()
        ));
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(v: Value) -> Result<Restart, String> {
        parse(&v, &mut Vec::new())
    }

    #[test]
    fn every_key_is_read_and_the_rest_keep_their_defaults() {
        assert_eq!(read(json!({})).unwrap(), Restart::default());
        let r = read(json!({"firstDelayMs": 100, "factor": 3, "maxDelayMs": 900,
                            "attemptsPerWindow": 7, "windowMs": 5000}))
        .unwrap();
        assert_eq!(
            r,
            Restart {
                first_delay: Duration::from_millis(100),
                factor: 3,
                max_delay: Duration::from_millis(900),
                max_attempts: 7,
                window: Duration::from_secs(5),
            }
        );
        let mut warnings = Vec::new();
        parse(&json!({"firstDelay": 1}), &mut warnings).unwrap();
        assert_eq!(
            warnings,
            ["gatehouse: unknown setting \"restart.firstDelay\" is ignored"]
        );
    }

    #[test]
    fn zero_negative_fractional_and_out_of_range_values_name_the_key_and_its_range() {
        for (key, bad, range) in [
            ("firstDelayMs", json!(0), "from 1 to 60000"),
            ("firstDelayMs", json!(60_001), "from 1 to 60000"),
            ("factor", json!(0), "from 1 to 10"),
            ("factor", json!(1.5), "from 1 to 10"),
            ("factor", json!(11), "from 1 to 10"),
            ("maxDelayMs", json!(-5), "from 1 to 3600000"),
            ("maxDelayMs", json!("30s"), "from 1 to 3600000"),
            ("attemptsPerWindow", json!(0), "from 1 to 1000"),
            ("attemptsPerWindow", json!(2.0), "from 1 to 1000"),
            ("windowMs", json!(999), "from 1000 to 86400000"),
            ("windowMs", json!(86_400_001), "from 1000 to 86400000"),
        ] {
            let e = read(json!({ key: bad })).unwrap_err();
            assert!(
                e.contains(&format!("\"restart.{key}\" must be a whole number {range}")),
                "{key}={bad}: {e}"
            );
        }
        let e = read(json!({"firstDelayMs": 5000, "maxDelayMs": 1000})).unwrap_err();
        assert!(e.contains("must not be below"), "{e}");
        assert!(read(json!([1])).unwrap_err().contains("must be an object"));
    }
}
