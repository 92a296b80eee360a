//! A setting's whole numbers, read and checked against their range, for the settings and
//! the restart policy alike.

use serde_json::Value;

/// A setting that must be a whole number in `range`: zero, negative, fractional, too
/// large or not a number at all is an error naming the key and the range.
pub(super) fn whole_number(
    key: &str,
    v: &Value,
    range: std::ops::RangeInclusive<u64>,
) -> Result<u64, String> {
    v.as_u64().filter(|n| range.contains(n)).ok_or_else(|| {
        format!(
            "\"{key}\" must be a whole number from {} to {}, not {v}",
            range.start(),
            range.end()
        )
    })
}
