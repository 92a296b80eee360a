use std::time::Duration;

use proptest::prelude::*;
use rmcp::model::{CallToolRequestParams, CancelledNotificationParam, NumberOrString};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use super::*;

/// What rmcp's own parse makes of `line`, as JSON (`None` when it cannot read it).
fn rmcp_reads(line: &str) -> Option<Value> {
    serde_json::from_str::<RxJsonRpcMessage<RoleClient>>(line)
        .ok()
        .map(|m| serde_json::to_value(m).unwrap())
}

fn read_as_json(read: Read) -> Option<Value> {
    match read {
        Read::Message(m) => Some(serde_json::to_value(*m).unwrap()),
        _ => None,
    }
}

fn calls(ids: &[i64]) -> HashSet<RequestId> {
    ids.iter().map(|i| NumberOrString::Number(*i)).collect()
}

fn answer(id: i64, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

/// The support desk's ticket as the reference server answers it (the seed's recorded run).
fn ticket() -> Value {
    json!({
        "content": [{"type": "text", "text": "{\n \"ticket_id\": \"T-30002\"\n}"}],
        "isError": false,
        "resultType": "complete",
        "structuredContent": {"ticket_id": "T-30002", "customer_name": "Hugo", "priority": 1,
            "score": 3.861, "last_messages": [{"author": "agent", "body": "Could you send the receipt?"}]},
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "support-mcp", "version": "1.0.0"}}
    })
}

#[test]
fn a_calls_answer_is_read_straight_and_as_rmcp_reads_it() {
    let results = [
        ticket(),
        json!({"content": [{"type": "text", "text": "no such order"}], "isError": true}),
        json!({"content": []}),
        json!({"structuredContent": null, "content": []}),
        json!({"structuredContent": [1, 2.5, "x", {"deep": [null, true]}]}),
        json!({"isError": false}),
        json!({"content": [
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "resource_link", "uri": "orders://A-1002", "name": "Order A-1002"},
            {"type": "resource", "resource": {"uri": "kb://x", "text": "3 to 6 days."}},
            {"type": "text", "text": "é \u{1b}[31m", "annotations": {"audience": ["user"]}}
        ], "resultType": "complete"}),
    ];
    for result in results {
        let line = answer(7, result.clone());
        let mut waiting = calls(&[7, 8]);
        let fast = answer_to_call(line.as_bytes(), &mut waiting)
            .unwrap_or_else(|| panic!("not read straight: {result}"));
        assert_eq!(
            Some(serde_json::to_value(fast).unwrap()),
            rmcp_reads(&line),
            "{result}"
        );
        assert_eq!(
            waiting,
            calls(&[8]),
            "the answered call is taken off the list"
        );
    }
}

#[test]
fn everything_else_is_read_by_rmcp_and_the_same_as_before() {
    let question = json!({"resultType": "input_required", "requestState": "s",
        "inputRequests": {"confirm": {"method": "elicitation/create", "params": {
            "mode": "form", "message": "Open it?", "requestedSchema": {"type": "object", "properties": {}}}}}});
    let task = json!({"resultType": "task", "task": {"taskId": "t1", "status": "working",
        "createdAt": "2026-12-02T00:00:00Z", "lastUpdatedAt": "2026-12-02T00:00:00Z", "ttl": 1000}});
    let lines = [
        answer(7, question),
        answer(7, task),
        // A field no call result has: another kind could be meant; rmcp decides.
        answer(7, json!({"content": [], "tools": []})),
        // An answer to a request that is not a call the host is waiting for.
        answer(9, ticket()),
        json!({"jsonrpc": "2.0", "id": 7, "result": ticket(), "method": "tools/call"}).to_string(),
        json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32602, "message": "no"}}).to_string(),
        json!({"jsonrpc": "2.0", "method": "notifications/progress",
               "params": {"progressToken": 1, "progress": 1}})
        .to_string(),
        json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}).to_string(),
    ];
    for line in lines {
        let mut waiting = calls(&[7]);
        assert!(
            answer_to_call(line.as_bytes(), &mut waiting).is_none(),
            "{line}"
        );
        assert_eq!(waiting, calls(&[7]), "{line}");
        assert_eq!(
            read_as_json(read_line(line.as_bytes(), &mut waiting)),
            rmcp_reads(&line),
            "{line}"
        );
    }
}

#[test]
fn lines_rmcp_cannot_read_are_skipped_or_invalid_as_rmcp_says() {
    let mut none = HashSet::new();
    for line in [
        "",
        "\r\n",
        "not json",
        "{\"jsonrpc\": \"2.0\", ",
        "\u{feff}",
    ] {
        assert!(
            matches!(read_line(line.as_bytes(), &mut none), Read::Skip),
            "{line:?}"
        );
    }
    // Notifications rmcp ignores for compatibility: not MCP's, or an unknown MCP one.
    for line in [
        r#"{"jsonrpc": "2.0", "method": "$/lsp-thing", "params": 3}"#,
        r#"{"jsonrpc": "2.0", "method": "notifications/made-up", "params": 3}"#,
    ] {
        if rmcp_reads(line).is_none() {
            assert!(
                matches!(read_line(line.as_bytes(), &mut none), Read::Skip),
                "{line}"
            );
        }
    }
    for line in [
        r#"{"jsonrpc": "2.0", "id": 1}"#,
        r#"{"jsonrpc": "1.0", "id": 1, "method": "ping"}"#,
    ] {
        assert!(rmcp_reads(line).is_none(), "{line}");
        assert!(
            matches!(read_line(line.as_bytes(), &mut none), Read::Invalid),
            "{line}"
        );
    }
    // A byte order mark and a carriage return are dropped, as rmcp drops them.
    let line = format!("\u{feff}{}\r\n", answer(1, ticket()));
    assert!(read_as_json(read_line(line.as_bytes(), &mut calls(&[1]))).is_some());
}

#[test]
fn calls_are_noted_when_sent_and_forgotten_when_cancelled_within_the_bound() {
    let mut lines = Lines::new(tokio::io::empty());
    let call = |id: i64| {
        JsonRpcMessage::request(
            ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(
                CallToolRequestParams::new("get_ticket"),
            )),
            NumberOrString::Number(id),
        )
    };
    lines.sent(&call(1));
    lines.sent(&JsonRpcMessage::request(
        ClientRequest::PingRequest(Default::default()),
        NumberOrString::Number(2),
    ));
    assert_eq!(lines.calls, calls(&[1]));
    let cancel =
        ClientNotification::CancelledNotification(rmcp::model::CancelledNotification::new(
            CancelledNotificationParam::new(Some(NumberOrString::Number(1)), None),
        ));
    lines.sent(&JsonRpcMessage::notification(cancel));
    assert!(lines.calls.is_empty());
    for id in 0..(MAX_CALLS_NOTED as i64 + 10) {
        lines.sent(&call(id));
    }
    assert_eq!(lines.calls.len(), MAX_CALLS_NOTED);
}

#[tokio::test]
async fn a_read_cut_off_half_way_goes_on_where_it_stopped() {
    let (mut server, host) = tokio::io::duplex(64 * 1024);
    let mut lines = Lines::new(host);
    lines.sent(&JsonRpcMessage::request(
        ClientRequest::CallToolRequest(rmcp::model::CallToolRequest::new(
            CallToolRequestParams::new("get_ticket"),
        )),
        NumberOrString::Number(4),
    ));
    let whole = format!("{}\n", answer(4, ticket()));
    let (first, rest) = whole.split_at(whole.len() / 2);
    server.write_all(first.as_bytes()).await.unwrap();
    // The service drops a receive that another branch beat: nothing may be lost.
    let cut = tokio::time::timeout(Duration::from_millis(50), lines.next()).await;
    assert!(cut.is_err(), "half a line is no message");
    server.write_all(rest.as_bytes()).await.unwrap();
    let read = read_as_json(lines.next().await).expect("the whole answer");
    assert_eq!(Some(read), rmcp_reads(whole.trim_end()));
    drop(server);
    assert!(matches!(lines.next().await, Read::End));
}

/// A value for one of a call result's fields, right or wrong.
fn field_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!([{"type": "text", "text": "x"}])),
        Just(json!([{"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}])),
        Just(json!([{"type": "nonsense"}])),
        Just(json!([])),
        Just(json!("complete")),
        Just(json!("input_required")),
        Just(json!("task")),
        Just(json!(true)),
        Just(json!(null)),
        Just(json!(3)),
        Just(json!({"a": [1, "b"]})),
        Just(json!({"io.modelcontextprotocol/serverInfo": {"name": "s"}})),
        "[a-z\u{e9}\u{1b}]{0,8}".prop_map(Value::from),
    ]
}

proptest! {
    /// Whatever a server answers to a call, the host reads what rmcp would have read:
    /// straight when only a call result's fields are there, by rmcp otherwise.
    #[test]
    fn an_answer_is_read_as_rmcp_reads_it(
        fields in proptest::collection::btree_map(
            prop_oneof![
                Just("content"), Just("structuredContent"), Just("isError"),
                Just("resultType"), Just("_meta"), Just("task"), Just("tools"),
                Just("action"), Just("requestState"),
            ],
            field_value(),
            0..5,
        ),
        waiting in any::<bool>(),
    ) {
        let result: serde_json::Map<String, Value> =
            fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        let line = answer(5, Value::Object(result));
        let mut ids = if waiting { calls(&[5]) } else { calls(&[6]) };
        let want = rmcp_reads(&line);
        match read_line(line.as_bytes(), &mut ids) {
            Read::Message(m) => prop_assert_eq!(Some(serde_json::to_value(*m).unwrap()), want),
            Read::Invalid => prop_assert!(want.is_none()),
            other => prop_assert!(false, "{line} read as {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_long_line_does_not_keep_its_room_once_read() {
    let (mut server, host) = tokio::io::duplex(1024 * 1024);
    let mut lines = Lines::new(host);
    let long = json!({"jsonrpc": "2.0", "method": "notifications/message",
        "params": {"level": "info", "data": "x".repeat(200 * 1024)}});
    server
        .write_all(format!("{long}\n").as_bytes())
        .await
        .unwrap();
    assert!(matches!(lines.next().await, Read::Message(_)));
    assert!(
        lines.line.capacity() <= KEPT_LINE_BYTES,
        "{} bytes kept after a line of 200 KiB",
        lines.line.capacity()
    );
    // A short line after it is read as before.
    server
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n")
        .await
        .unwrap();
    assert!(matches!(lines.next().await, Read::Message(_)));
}
