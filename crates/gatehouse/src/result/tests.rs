//! The bound on what the model reads, for every input, and every kind of block.

use super::*;
use rmcp::model::{CallToolResult, ContentBlock};

#[test]
fn small_results_go_back_whole() {
    let r = success("t", &json!({"a": 1}), 4_000);
    assert_eq!(r.text, r#"{"tool":"t","result":{"a":1}}"#);
    assert!(!r.clipped);
}

#[test]
fn large_results_are_cut_with_a_note_and_fit_the_bound() {
    let big = json!({"rows": "x\"y".repeat(5_000)});
    let r = success("t", &big, 4_000);
    assert!(r.clipped);
    assert!(r.chars <= 4_000, "{}", r.chars);
    let v: Value = serde_json::from_str(&r.text).unwrap();
    let total = big.to_string().chars().count();
    assert!(
        v["note"]
            .as_str()
            .unwrap()
            .contains(&format!("had {total} characters"))
    );
}

#[test]
fn whole_results_read_as_the_json_object_they_stand_for() {
    let value = json!({"b": [1, "two\n\"3\""], "a": null});
    let links = vec!["[link x://1 \"One\" text/plain]".to_owned()];
    assert_eq!(
        success_with("s__t", &value, &links, 4_000).text,
        json!({"tool": "s__t", "result": value, "attachments": links}).to_string()
    );
    assert_eq!(
        success("s__t", &value, 4_000).text,
        json!({"tool": "s__t", "result": value}).to_string()
    );
}

#[test]
fn a_cut_keeps_as_much_as_fits_whatever_the_escaping() {
    for (unit, max) in [
        ("ab", 300),
        ("\"\\", 301),
        ("\u{1}é\n", 333),
        ("日本", 4_000),
    ] {
        let value = Value::String(unit.repeat(3_000));
        let r = success("t", &value, max);
        assert!(r.clipped && r.chars <= max, "{unit:?}: {} > {max}", r.chars);
        let v: Value = serde_json::from_str(&r.text).unwrap();
        let head = v["result"].as_str().unwrap();
        let kept = head.chars().count();
        assert!(
            v["note"]
                .as_str()
                .unwrap()
                .contains(&format!("only the first {kept} "))
        );
        // One more character would not have fitted.
        let longer: String = unit.repeat(3_000).chars().take(kept + 1).collect();
        let bigger = json!({"tool": "t", "result": longer, "note": v["note"]}).to_string();
        assert!(
            bigger.chars().count() > max,
            "{unit:?}: kept {kept} of a possible more"
        );
    }
}

#[test]
fn errors_fit_the_bound_too() {
    let r = failure("t", &"e".repeat(10_000), 100);
    assert!(r.chars <= 100);
    assert!(r.text.ends_with("…\"}"));
}

#[test]
fn a_long_tool_name_cannot_hold_the_bound_hostage() {
    // Before: the frame alone was longer than the bound, the error was cut to "…",
    // and the loop never ended.
    let name = "x".repeat(5_000);
    let r = failure(&name, "unknown tool", 4_000);
    assert!(r.chars <= 4_000);
    let v: Value = serde_json::from_str(&r.text).unwrap();
    assert_eq!(
        v["tool"].as_str().unwrap().chars().count(),
        MAX_SHOWN_TOOL_NAME
    );
    assert_eq!(v["error"], "unknown tool");
    let r = failure("s__t", &"e".repeat(1_000), MIN_RESULT_CHARS);
    assert!(r.clipped && r.chars <= MIN_RESULT_CHARS);
    let r = success(
        &"\"".repeat(300),
        &json!("y".repeat(10_000)),
        MIN_RESULT_CHARS,
    );
    assert!(r.clipped && r.chars <= MIN_RESULT_CHARS, "{}", r.chars);
}

#[test]
fn structured_results_keep_their_links_as_attachments() {
    let r: CallToolResult = serde_json::from_value(json!({
        "content": [{"type": "text", "text": "{}"},
                    {"type": "resource_link", "uri": "orders://A-1002", "name": "Order A-1002", "mimeType": "application/json"}],
        "structuredContent": {"order_id": "A-1002", "nested": [{"uri": "policy://larkfield/x"}]}
    })).unwrap();
    let (value, attachments) = result_value(&r);
    assert_eq!(value["order_id"], "A-1002");
    assert_eq!(
        attachments,
        vec!["[link orders://A-1002 \"Order A-1002\" application/json]"]
    );
    assert_eq!(
        linked_uris(&r),
        vec!["orders://A-1002", "policy://larkfield/x"]
    );
    let shown = success_with("t", &value, &attachments, 4_000);
    assert!(shown.text.contains("\"attachments\""));
}

#[test]
fn binary_blocks_are_saved_and_bad_ones_reported() {
    let dir = std::env::temp_dir().join(format!("gatehouse-blocks-{}", std::process::id()));
    let blocks: Vec<ContentBlock> = serde_json::from_value(json!([
        {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
        {"type": "audio", "data": "not base64!!", "mimeType": "audio/wav"},
        {"type": "text", "text": "x"}
    ]))
    .unwrap();
    let (saved, problems) = save_binaries(&blocks, &dir, "step1");
    assert_eq!(saved.len(), 1);
    assert_eq!(saved[0].bytes, 8);
    assert!(saved[0].path.ends_with("step1-1.png"));
    assert_eq!(
        std::fs::read(&saved[0].path).unwrap()[..4],
        [0x89, b'P', b'N', b'G']
    );
    assert!(problems[0].contains("not valid base64"));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn blocks_for_the_person_only_stay_out_of_the_model_context() {
    let r: CallToolResult = serde_json::from_value(json!({"content": [
        {"type": "text", "text": "for everyone"},
        {"type": "text", "text": "for the person", "annotations": {"audience": ["user"]}},
        {"type": "text", "text": "for the model", "annotations": {"audience": ["assistant", "user"]}}
    ]})).unwrap();
    let (value, _) = result_value(&r);
    assert_eq!(*value, json!("for everyone\nfor the model"));
}

#[test]
fn every_block_type_has_a_text_form() {
    let blocks: Vec<ContentBlock> = serde_json::from_value(json!([
        {"type": "text", "text": "hello"},
        {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
        {"type": "resource_link", "uri": "orders://A-1001", "name": "Order A-1001", "mimeType": "application/json"},
        {"type": "resource", "resource": {"uri": "kb://shipping", "mimeType": "text/plain", "text": "3 to 6 days."}}
    ])).unwrap();
    let text = content_text(&blocks);
    assert!(text.contains("hello"));
    assert!(text.contains("[image image/png, 12 bytes of base64]"));
    assert!(text.contains("[link orders://A-1001"));
    assert!(text.contains("3 to 6 days."));
}

use proptest::prelude::*;

/// Any JSON value, a few levels deep, with any strings.
fn any_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<String>().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::btree_map(any::<String>(), inner, 0..8)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    /// Whatever the tool name, the error and the bound (from the smallest allowed),
    /// what the model reads fits, is one JSON object, and says when it was cut.
    #[test]
    fn every_error_fits_its_bound(
        tool in ".{0,300}", error in any::<String>(), extra in 0usize..3_000,
    ) {
        let max = MIN_RESULT_CHARS + extra;
        let r = failure(&tool, &error, max);
        prop_assert!(r.chars <= max, "{} > {max}", r.chars);
        prop_assert_eq!(r.chars, r.text.chars().count());
        let v: Value = serde_json::from_str(&r.text).unwrap();
        let shown = v["error"].as_str().unwrap();
        // Invisible characters never reach the model: the error as it reads it.
        let error = crate::text::uncloaked(&error);
        if r.clipped {
            prop_assert!(shown.ends_with('…'));
            prop_assert!(error.starts_with(shown.trim_end_matches('…')));
        } else {
            prop_assert_eq!(shown, error.as_ref());
        }
    }

    #[test]
    fn every_result_fits_its_bound(
        tool in ".{0,300}", value in any_value(), extra in 0usize..3_000,
        attachments in prop::collection::vec(any::<String>(), 0..3),
    ) {
        let max = MIN_RESULT_CHARS + extra;
        let r = success_with(&tool, &value, &attachments, max);
        prop_assert!(r.chars <= max, "{} > {max}", r.chars);
        let v: Value = serde_json::from_str(&r.text).unwrap();
        if r.clipped {
            prop_assert!(v["note"].as_str().unwrap().starts_with("cut: "));
        } else {
            // Invisible characters never reach the model: the value as it reads it.
            let seen = crate::text::uncloaked(&value.to_string()).into_owned();
            let seen: Value = serde_json::from_str(&seen).unwrap();
            prop_assert_eq!(&v["result"], &seen);
        }
    }
}

/// Read a kept result page by page, as a model following the notes would: every page
/// within the bound, and the pages together the whole, in order.
fn read_all(kept: &Kept, id: &str, first: &ForModel, max: usize) -> String {
    let mut text = String::new();
    let mut page_text = first.text.clone();
    for _ in 0..100_000 {
        let v: Value = serde_json::from_str(&page_text).unwrap();
        text.push_str(v["result"].as_str().unwrap());
        let note = v["note"].as_str().unwrap();
        let Some(rest) = note.split(" and offset ").nth(1) else {
            assert!(note.contains(&format!("the end of result {id}")), "{note}");
            return text;
        };
        let offset: usize = rest.split(' ').next().unwrap().parse().unwrap();
        assert_eq!(
            offset,
            text.chars().count(),
            "the next offset follows what was shown"
        );
        let next = kept.read("read_result", id, offset, max).unwrap();
        assert!(next.chars <= max, "{} > {max}", next.chars);
        page_text = next.text;
    }
    panic!("the pages never ended")
}

#[test]
fn a_cut_result_is_kept_and_read_to_its_end() {
    let value =
        json!({"rows": (0..2_000).map(|i| format!("row {i} \"quoted\"")).collect::<Vec<_>>()});
    let (first, whole) = success_kept("s__t", &value, &[], 4_000, "r3", pages::MAX_KEPT_CHARS);
    let whole = whole.expect("kept");
    assert!(first.clipped && first.chars <= 4_000);
    let note: Value = serde_json::from_str(&first.text).unwrap();
    assert!(
        note["note"]
            .as_str()
            .unwrap()
            .contains("call read_result with id r3 and offset"),
        "{note}"
    );
    let mut kept = Kept::default();
    kept.keep("r3".into(), whole.clone());
    assert_eq!(read_all(&kept, "r3", &first, 4_000), whole);
    assert_eq!(serde_json::from_str::<Value>(&whole).unwrap(), value);
    let err = kept
        .read("read_result", "r3", whole.chars().count(), 4_000)
        .unwrap_err();
    assert!(err.contains("past the end"), "{err}");
    let err = kept.read("read_result", "r9", 0, 4_000).unwrap_err();
    assert!(err.contains("kept: r3"), "{err}");
    // Too large to keep: cut as before, with the note to ask for less.
    let (shown, none) = success_kept("s__t", &value, &[], 4_000, "r4", 1_000);
    assert!(none.is_none() && shown.text.contains("ask for less"));
    // Small enough: whole, nothing kept.
    let (small, none) = success_kept("s__t", &json!({"a": 1}), &[], 4_000, "r5", 1_000);
    assert!(none.is_none() && !small.clipped);
}

#[test]
fn a_turn_keeps_its_cut_results_within_its_bounds() {
    let mut kept = Kept::default();
    assert!(kept.is_empty());
    for i in 0..pages::MAX_KEPT_RESULTS + 3 {
        kept.keep(format!("r{i}"), format!("result {i}"));
    }
    assert!(
        kept.get("r0").is_none() && kept.get("r2").is_none(),
        "the oldest go first"
    );
    assert_eq!(kept.get("r3"), Some("result 3"));
    let half = "x".repeat(pages::MAX_KEPT_CHARS / 2 + 1);
    kept.keep("big1".into(), half.clone());
    kept.keep("big2".into(), half);
    assert!(kept.get("big1").is_none() && kept.get("big2").is_some());
    kept.keep("huge".into(), "y".repeat(pages::MAX_KEPT_CHARS + 1));
    assert!(
        kept.get("huge").is_none(),
        "larger than the whole bound: not kept"
    );
}

proptest! {
    /// Whatever the text, the offset and the bound, a page fits the bound and the pages
    /// from any offset on are that text from there, in order.
    #[test]
    fn pages_fit_their_bound_and_add_up_to_the_whole(
        whole in ".{1,3000}", extra in 0usize..600, tool in ".{0,100}", at in 0usize..3000,
    ) {
        let max = MIN_RESULT_CHARS + extra;
        let total = whole.chars().count();
        let offset = at % total;
        let mut kept = Kept::default();
        kept.keep("r12".into(), whole.clone());
        let first = kept.read(&tool, "r12", offset, max).unwrap();
        prop_assert!(first.chars <= max, "{} > {max}", first.chars);
        let from: String = whole.chars().skip(offset).collect();
        let v: Value = serde_json::from_str(&first.text).unwrap();
        let mut text: String = v["result"].as_str().unwrap().to_owned();
        let mut note = v["note"].as_str().unwrap().to_owned();
        while let Some(rest) = note.split(" and offset ").nth(1) {
            let next: usize = rest.split(' ').next().unwrap().parse().unwrap();
            prop_assert_eq!(next, offset + text.chars().count());
            let page = kept.read("read_result", "r12", next, max).unwrap();
            prop_assert!(page.chars <= max);
            let v: Value = serde_json::from_str(&page.text).unwrap();
            let part = v["result"].as_str().unwrap();
            prop_assert!(!part.is_empty(), "every page moves on");
            text.push_str(part);
            note = v["note"].as_str().unwrap().to_owned();
        }
        prop_assert_eq!(text, from);
    }
}
