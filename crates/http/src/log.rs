//! How the HTTP layer and the servers on it log: one JSON object per line on stderr (the
//! channel a stdio server may use freely), stamped in RFC 3339 UTC.

use std::{
    collections::HashMap,
    io::Write,
    sync::Mutex,
    time::Duration,
    time::{Instant, SystemTime, UNIX_EPOCH},
};

use serde_json::{Value, json};

/// At most one log line per this long for each kind of event and reason (a connection
/// closed or refused, a session refused): a flood of them must not become a flood of lines.
pub const THROTTLE_INTERVAL: Duration = Duration::from_secs(1);

/// Write one record as one line on stderr, with a single call so lines from concurrent
/// requests never mix.
pub fn line(record: Value) {
    let mut line = serde_json::to_string(&record).unwrap_or_default();
    line.push('\n');
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// Now as an RFC 3339 UTC timestamp, for log records.
pub fn timestamp() -> String {
    timestamp_of(now_ms())
}

/// Milliseconds since the epoch, now.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64
}

/// Milliseconds since the epoch as an RFC 3339 UTC timestamp.
pub fn timestamp_of(ms: u64) -> String {
    let secs = (ms / 1000) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

/// Howard Hinnant's days-to-civil conversion, so logs need no date crate.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Milliseconds since `start`, rounded to two decimals as the logs show them.
pub fn elapsed_ms(start: Instant) -> f64 {
    (start.elapsed().as_secs_f64() * 100_000.0).round() / 100.0
}

/// Counts events by kind and reason, and logs each at most once per [`THROTTLE_INTERVAL`]
/// with the count since its last line: a flood of connections or refusals must not
/// become a flood of log lines.
#[derive(Default)]
pub(crate) struct ThrottledLog {
    seen: Mutex<HashMap<(&'static str, &'static str), Tally>>,
}

/// How many since the last line, and when that line was written.
type Tally = (u64, Option<std::time::Instant>);

impl ThrottledLog {
    /// One more `event` for `reason`; `detail` goes into the line if one is written.
    pub(crate) fn note(
        &self,
        event: &'static str,
        reason: &'static str,
        detail: serde_json::Value,
    ) {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let (count, last) = seen.entry((event, reason)).or_insert((0, None));
        *count += 1;
        if last.is_none_or(|at| at.elapsed() >= THROTTLE_INTERVAL) {
            let mut line = json!({
                "ts": timestamp(), "event": event, "reason": reason, "count": *count,
            });
            if let (Some(line), serde_json::Value::Object(detail)) = (line.as_object_mut(), detail)
            {
                line.extend(detail);
            }
            self::line(line);
            *count = 0;
            *last = Some(std::time::Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_723), (2026, 9, 27));
        assert_eq!(timestamp_of(1_790_000_000_123), "2026-09-21T14:13:20.123Z");
    }
}
