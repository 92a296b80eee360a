//! The testbed's `tools/list` pages (`TESTBED_PAGE_SIZE`), with cursors a client may not
//! invent.

use rmcp::ErrorData;

/// Page `cursor` of a list of `len` tools in pages of `size`: the tools' range, and the
/// next page's cursor. Cursors: none is page 0, `""` page 1, `"N"` page N (N ≥ 2); a
/// cursor this server never gave (not a number, or past the end, however large) is an
/// invalid-params error, never a panic.
pub(super) fn page_of(
    len: usize,
    size: usize,
    cursor: Option<&str>,
) -> Result<(std::ops::Range<usize>, Option<String>), ErrorData> {
    let invalid = || ErrorData::invalid_params(format!("invalid cursor {cursor:?}"), None);
    let page = match cursor {
        None => 0,
        Some("") => 1,
        Some(c) => c
            .parse::<usize>()
            .ok()
            .filter(|p| *p >= 2)
            .ok_or_else(invalid)?,
    };
    let start = page.checked_mul(size).filter(|s| *s < len || page == 0);
    let start = start.ok_or_else(invalid)?;
    let end = start.saturating_add(size).min(len);
    let next = (end < len).then(|| match page {
        0 => String::new(),
        n => (n + 1).to_string(),
    });
    Ok((start..end, next))
}

#[cfg(test)]
mod tests {
    use super::page_of;

    #[test]
    fn pages_cover_the_list_once_and_a_cursor_never_given_is_refused() {
        let (len, size) = (250, 40);
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let (range, next) = page_of(len, size, cursor.as_deref()).unwrap();
            seen.extend(range);
            match next {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
        assert_eq!(seen, (0..len).collect::<Vec<_>>());
        // Past the end, however large (page * size overflowed before), or not a number.
        for bad in [
            "7",
            "18446744073709551615",
            "99999999999999999999",
            "-1",
            "x",
            "1",
        ] {
            assert!(page_of(len, size, Some(bad)).is_err(), "{bad}");
        }
        assert!(page_of(len, usize::MAX, Some("2")).is_err());
        // An empty list has one empty page.
        assert_eq!(page_of(0, size, None).unwrap(), (0..0, None));
    }
}
