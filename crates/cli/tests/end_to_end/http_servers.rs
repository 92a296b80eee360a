//! The reference servers over Streamable HTTP (`gatehouse serve NAME --http ADDR`), through
//! the real binary: every server answers, bearer tokens decide who is calling, the
//! revision's headers, `Origin` and body size are checked, SIGTERM lets the call in flight
//! finish, two tickets instances sharing a key and a store (directly, and behind Debian's
//! nginx) open exactly one ticket per confirmation, and a second round whose answer was
//! lost gets its ticket when sent again, even across a crash.

use crate::common::{
    self,
    client::{Asker, can_ask, open_ticket},
    http_server::*,
    nginx::start_nginx,
};

use std::{
    path::Path,
    time::{Duration, Instant},
};

use rmcp::{
    ClientLifecycleMode, ClientServiceExt,
    model::*,
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};

/// The sealing key two tickets instances share.
const SHARED_KEY: &str = "http-servers-test-key-0123456789abcdef";

// ---------------------------------------------------------------------------------------
// Every server answers.
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn every_reference_server_answers_discover_list_and_a_call() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = tokens_file(dir.path());
    let tokens = tokens.to_str().unwrap();
    let db = dir.path().join("tickets.db");
    let cases: [(&str, &str, Value, &str); 5] = [
        (
            "support",
            "search_knowledge",
            json!({"query": "charged twice"}),
            "refunds-and-payments",
        ),
        (
            "cmdb",
            "get_asset",
            json!({"hostname": "jump-prod-02"}),
            "Camille Michel",
        ),
        ("tickets", "list_tickets", json!({}), "\"total\": 0"),
        (
            "orders",
            "get_order_status",
            json!({"order_id": "A-1002"}),
            "processing",
        ),
        ("testbed", "echo", json!({"text": "over http"}), "over http"),
    ];
    for (name, tool, arguments, expect) in cases {
        let server = serve(
            name,
            &["--tokens", tokens, "--db", db.to_str().unwrap()],
            &[],
        );
        let discovered = post(
            &server.url,
            Some(SAM),
            &request(1, "server/discover", json!({})),
        )
        .await;
        assert_eq!(discovered.status, 200, "{name}: {}", discovered.text);
        let info = discovered.result(1);
        assert!(
            info["supportedVersions"]
                .as_array()
                .unwrap()
                .contains(&json!(PROTOCOL)),
            "{name}: {info}"
        );
        assert!(info["capabilities"]["tools"].is_object(), "{name}: {info}");

        let listed = post(&server.url, Some(SAM), &request(2, "tools/list", json!({}))).await;
        let tools: Vec<&str> = listed.result(2)["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert!(tools.contains(&tool), "{name}: {tools:?}");
        // No session is ever minted for a 2026-07-28 client.
        assert!(listed.headers.get("mcp-session-id").is_none());

        let called = call_tool(&server.url, SAM, 3, tool, arguments).await;
        let result = called.result(3);
        assert_eq!(result["isError"], false, "{name}: {result}");
        assert!(
            common::texts(result).contains(expect),
            "{name}: {}",
            common::texts(result)
        );
    }
}

fn rmcp_transport(url: &str, token: &str) -> StreamableHttpClientTransport<reqwest::Client> {
    StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()).auth_header(token.to_owned()),
    )
}

#[tokio::test]
async fn rmcp_clients_of_both_eras_work_over_http_and_a_legacy_one_is_asked_with_elicitation_create()
 {
    tokio::time::timeout(Duration::from_secs(60), rmcp_clients_of_both_eras())
        .await
        .expect("the rmcp clients finish within 60 s");
}

async fn rmcp_clients_of_both_eras() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = tokens_file(dir.path());
    let db = dir.path().join("tickets.db");
    let server = serve(
        "tickets",
        &[
            "--tokens",
            tokens.to_str().unwrap(),
            "--db",
            db.to_str().unwrap(),
        ],
        &[],
    );
    let answer =
        ElicitResult::new(ElicitationAction::Accept).with_content(json!({"priority": "P2"}));

    // 2026-07-28: discover, then stateless requests with the standard headers (rmcp's
    // client sets them); the confirmation is an input_required round.
    let modern = Asker::new(can_ask(), answer.clone())
        .serve_with_lifecycle(
            rmcp_transport(&server.url, SAM),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("a 2026-07-28 client connects over HTTP");
    let tools = modern.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.name == "open_ticket"));
    match modern
        .call_tool_once(open_ticket("jump-prod-02", "brute force"))
        .await
        .unwrap()
    {
        CallToolResponse::InputRequired(asked) => assert!(asked.request_state.is_some()),
        other => panic!("round 1 must ask, got {other:?}"),
    }
    modern.cancel().await.unwrap();

    // 2025-11-25: initialize, a session, and the question as a server-sent
    // elicitation/create inside the call, on the call's own stream.
    let legacy = Asker::new(can_ask(), answer)
        .serve_with_lifecycle(
            rmcp_transport(&server.url, SAM),
            ClientLifecycleMode::Initialize,
        )
        .await
        .expect("a 2025-11-25 client connects over HTTP");
    assert_eq!(
        legacy.peer_info().unwrap().protocol_version,
        ProtocolVersion::V_2025_11_25
    );
    let opened = match legacy
        .call_tool_once(open_ticket("jump-prod-02", "brute force"))
        .await
        .unwrap()
    {
        CallToolResponse::Complete(r) => r,
        other => panic!("a legacy call completes in one request, got {other:?}"),
    };
    assert_eq!(opened.is_error, Some(false), "{opened:?}");
    let ticket = opened.structured_content.unwrap();
    assert_eq!(ticket["id"], "INC-4100");
    assert_eq!(ticket["priority"], "P2");
    legacy.cancel().await.unwrap();
    let logged = server
        .records()
        .into_iter()
        .any(|r| r["event"] == "http_unauthorized");
    assert!(!logged, "no request was refused: {:?}", server.stderr());
}

// ---------------------------------------------------------------------------------------
// Who is calling.
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn the_bearer_token_decides_who_is_calling() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = tokens_file(dir.path());
    let server = serve("support", &["--tokens", tokens.to_str().unwrap()], &[]);
    let get = json!({"ticket_id": "T-30002"});
    let body = request(
        1,
        "tools/call",
        json!({"name": "get_ticket", "arguments": get}),
    );

    let none = post(&server.url, None, &body).await;
    assert_eq!(none.status, 401, "{}", none.text);
    let challenge = none.headers["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.starts_with("Bearer realm=\"gatehouse\""),
        "{challenge}"
    );

    for token in ["not-a-token", SAM.trim_end_matches('8')] {
        let unknown = post(&server.url, Some(token), &body).await;
        assert_eq!(unknown.status, 401, "{}", unknown.text);
        assert_eq!(
            unknown.headers["www-authenticate"],
            "Bearer realm=\"gatehouse\", error=\"invalid_token\""
        );
    }
    let basic = post_raw(
        &server.url,
        None,
        &[
            standard_headers(&body),
            vec![("Authorization".into(), "Basic dXNyLXNhbTpwdw==".into())],
        ]
        .concat(),
        body.to_string(),
    )
    .await;
    assert_eq!(basic.status, 401);

    // A token acting in an organization its user is no member of: refused before any tool.
    let outsider = post(&server.url, Some(CAMILLE_IN_LARKFIELD), &body).await;
    assert_eq!(outsider.error_code(1), -32003, "{}", outsider.text);

    // Two members of Larkfield, one server process: each request is its own caller.
    let sam = post(&server.url, Some(SAM), &body).await;
    let ticket = &sam.result(1)["structuredContent"];
    assert_eq!(ticket["ticket_id"], "T-30002");
    let omar = post(&server.url, Some(OMAR), &body).await;
    let refused = omar.result(1);
    assert_eq!(refused["isError"], true);
    assert!(
        common::texts(refused).contains("your role (read_only) does not allow tickets:read"),
        "{}",
        common::texts(refused)
    );
    let searched = call_tool(
        &server.url,
        OMAR,
        2,
        "search_knowledge",
        json!({"query": "refund"}),
    )
    .await;
    assert_eq!(searched.result(2)["isError"], false);

    let calls: Vec<(String, String, String)> = server
        .records()
        .iter()
        .filter(|r| r["event"] == "tool_call")
        .map(|r| {
            (
                r["user"].as_str().unwrap_or("").to_owned(),
                r["client"].as_str().unwrap_or("").to_owned(),
                r["outcome"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert!(
        calls.contains(&("usr-sam".into(), "sam-laptop".into(), "ok".into())),
        "{calls:?}"
    );
    assert!(
        calls.contains(&("usr-omar".into(), "http".into(), "forbidden".into())),
        "{calls:?}"
    );
    let refusals = server
        .records()
        .iter()
        .filter(|r| r["event"] == "http_unauthorized")
        .count();
    assert_eq!(refusals, 4);
}

#[tokio::test]
async fn a_legacy_session_belongs_to_the_token_that_opened_it() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = tokens_file(dir.path());
    let server = serve("cmdb", &["--tokens", tokens.to_str().unwrap()], &[]);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "legacy", "version": "1"}}});
    let opened = post_raw(&server.url, Some(SAM), &[], init.to_string()).await;
    assert_eq!(opened.status, 200, "{}", opened.text);
    let session = opened.headers["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let legacy = |id: &str| {
        vec![
            ("Mcp-Session-Id".to_owned(), id.to_owned()),
            ("MCP-Protocol-Version".to_owned(), "2025-11-25".to_owned()),
        ]
    };
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let ack = post_raw(
        &server.url,
        Some(SAM),
        &legacy(&session),
        initialized.to_string(),
    )
    .await;
    assert_eq!(ack.status, 202, "{}", ack.text);

    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string();
    let theirs = post_raw(&server.url, Some(OMAR), &legacy(&session), list.clone()).await;
    assert_eq!(theirs.status, 404, "{}", theirs.text);
    let mine = post_raw(&server.url, Some(SAM), &legacy(&session), list).await;
    assert_eq!(mine.status, 200, "{}", mine.text);
    assert!(mine.result(2)["tools"].as_array().unwrap().len() >= 2);

    // Ending the session answers 204, as the SDKs' own servers do and their clients expect.
    let ended = reqwest::Client::new()
        .delete(&server.url)
        .bearer_auth(SAM)
        .header("Mcp-Session-Id", &session)
        .header("MCP-Protocol-Version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(ended.status().as_u16(), 204);
}

#[test]
fn http_serving_needs_tokens_or_an_explicit_no_auth_on_loopback() {
    let run = |args: &[&str]| {
        let out = serve_command(args, &[]).output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = run(&["support", "--http", "127.0.0.1:0"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--tokens FILE") && err.contains("--no-auth"),
        "{err}"
    );
    let (code, err) = run(&["support", "--http", "0.0.0.0:0", "--no-auth"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("local testing only"), "{err}");
    let (code, err) = run(&["support", "--tokens", "tokens.json"]);
    assert_ne!(code, 0, "--tokens without --http: {err}");
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("tokens.json");
    std::fs::write(
        &bad,
        r#"[{"user": "usr-sam", "tenant": "larkfield", "sha256": "abc"}]"#,
    )
    .unwrap();
    let (code, err) = run(&[
        "support",
        "--http",
        "127.0.0.1:0",
        "--tokens",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("64 hex digits"), "{err}");
}

#[tokio::test]
async fn no_auth_acts_as_the_caller_in_the_environment() {
    let server = serve(
        "support",
        &["--no-auth"],
        &[("MCP_USER", "usr-omar"), ("MCP_TENANT", "larkfield")],
    );
    assert!(
        server
            .stderr()
            .iter()
            .any(|l| l.contains("NONE (--no-auth"))
    );
    let r = post(
        &server.url,
        None,
        &request(
            1,
            "tools/call",
            json!({"name": "get_ticket", "arguments": {"ticket_id": "T-30002"}}),
        ),
    )
    .await;
    assert!(
        common::texts(r.result(1)).contains("your role (read_only)"),
        "{}",
        r.text
    );
}

// ---------------------------------------------------------------------------------------
// What the transport checks.
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn headers_origin_and_body_size_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = tokens_file(dir.path());
    let server = serve("testbed", &["--tokens", tokens.to_str().unwrap()], &[]);
    let call = request(
        1,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "hi"}}),
    );
    let with = |changes: &[(&str, Option<&str>)]| {
        let mut headers = standard_headers(&call);
        for (name, value) in changes {
            headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
            if let Some(v) = value {
                headers.push(((*name).to_owned(), (*v).to_owned()));
            }
        }
        headers
    };

    let other_port = format!("http://127.0.0.1:{}", server.port() + 1);
    let own = format!("http://localhost:{}", server.port());
    // Each change to the standard headers (case, header, its new value or none), and the
    // status and JSON-RPC error it gets.
    type Case<'a> = (&'a str, &'a str, Option<&'a str>, u16, Option<i64>);
    let cases: [Case; 8] = [
        // Mcp-Method naming another method than the body's.
        (
            "method",
            "Mcp-Method",
            Some("tools/list"),
            400,
            Some(-32020),
        ),
        // Mcp-Name missing on tools/call, or naming another tool.
        ("no name", "Mcp-Name", None, 400, Some(-32020)),
        ("other name", "Mcp-Name", Some("repeat"), 400, Some(-32020)),
        // The header's version must be the body's.
        (
            "version",
            "MCP-Protocol-Version",
            Some("2025-11-25"),
            400,
            Some(-32020),
        ),
        // DNS rebinding: a foreign Origin or Host is refused; the server's own origin is not.
        (
            "foreign origin",
            "Origin",
            Some("http://evil.example"),
            403,
            None,
        ),
        ("other port", "Origin", Some(other_port.as_str()), 403, None),
        ("own origin", "Origin", Some(own.as_str()), 200, None),
        ("foreign host", "Host", Some("evil.example"), 403, None),
    ];
    for (case, name, value, status, code) in cases {
        let r = post_raw(
            &server.url,
            Some(SAM),
            &with(&[(name, value)]),
            call.to_string(),
        )
        .await;
        assert_eq!(r.status, status, "{case}: {}", r.text);
        if let Some(code) = code {
            assert_eq!(r.error_code(1), code, "{case}: {}", r.text);
        }
        if case == "no name" {
            assert!(r.text.contains("Mcp-Name"), "{}", r.text);
        }
        if status == 200 {
            assert_eq!(r.result(1)["structuredContent"]["text"], "hi");
        }
    }

    // A body over 1 MiB.
    let big = request(
        2,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "x".repeat(gatehouse_http::MAX_REQUEST_BODY_BYTES + 1)}}),
    );
    let r = post(&server.url, Some(SAM), &big).await;
    assert_eq!(r.status, 413, "{}", &r.text[..r.text.len().min(200)]);
    // Just under it is fine (the echo tool takes at most 1,000,000 characters).
    let fits = request(
        3,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "x".repeat(999_000)}}),
    );
    assert!(fits.to_string().len() > 999_000);
    let r = post(&server.url, Some(SAM), &fits).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.result(3)["isError"], false);
}

#[tokio::test]
async fn sigterm_lets_the_call_in_flight_finish_then_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = tokens_file(dir.path());
    let mut server = serve("testbed", &["--tokens", tokens.to_str().unwrap()], &[]);
    let started = Instant::now();
    // The first progress event proves the call is running; then the signal.
    let response = sleeping(&server.url, 7, 2).await;
    server.sigterm();

    // No new connections once the server is shutting down.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut refused = false;
    while Instant::now() < deadline && !refused {
        refused = std::net::TcpStream::connect(("127.0.0.1", server.port())).is_err();
        if !refused {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    assert!(
        refused,
        "the server still accepts connections after SIGTERM"
    );

    let messages = rest_of(response).await;
    let reply = messages
        .iter()
        .find(|m| m["id"] == 7)
        .unwrap_or_else(|| panic!("the call was cut: {messages:?}"));
    assert_eq!(
        reply["result"]["structuredContent"]["slept"], 2.0,
        "{reply}"
    );
    assert!(started.elapsed() >= Duration::from_secs(2));

    assert_eq!(
        server.wait_exit(Duration::from_secs(10)),
        Some(0),
        "{:?}",
        server.stderr()
    );
    let stderr = server.stderr().join("\n");
    assert!(
        stderr.contains("shutting down: no new connections; 1 request(s) in flight"),
        "{stderr}"
    );
    assert!(stderr.contains("stopped"), "{stderr}");
}

// ---------------------------------------------------------------------------------------
// The tickets server's confirmation over HTTP: bound to the caller, and shared by
// instances with one key and one store.
// ---------------------------------------------------------------------------------------

const HOST: &str = "jump-prod-02";
const SUMMARY: &str = "brute force, then a login from 203.0.113.77";

/// Round 1 of `open_ticket` as `token` at `url`: the sealed state.
async fn round1(url: &str, token: &str, id: i64) -> String {
    round1_of(url, token, id, json!({"host": HOST, "summary": SUMMARY})).await
}

/// Round 1 of `open_ticket` with these arguments: the sealed state.
async fn round1_of(url: &str, token: &str, id: i64, arguments: Value) -> String {
    let r = call_tool(url, token, id, "open_ticket", arguments).await;
    let result = r.result(id);
    assert_eq!(result["resultType"], "input_required", "{result}");
    assert_eq!(
        result["inputRequests"]["confirm"]["method"],
        "elicitation/create"
    );
    result["requestState"].as_str().unwrap().to_owned()
}

/// Round 2: the person's answer (accept, P1) and the state.
async fn round2(url: &str, token: &str, id: i64, state: &str) -> Answer {
    let answer = json!({"action": "accept", "content": {"priority": "P1"}});
    round2_of(
        url,
        token,
        id,
        json!({"host": HOST, "summary": SUMMARY}),
        answer,
        state,
    )
    .await
}

/// Round 2 of `open_ticket` with these arguments, this answer and the state.
async fn round2_of(
    url: &str,
    token: &str,
    id: i64,
    arguments: Value,
    answer: Value,
    state: &str,
) -> Answer {
    let params = json!({"name": "open_ticket", "arguments": arguments,
                        "inputResponses": {"confirm": answer}, "requestState": state});
    call(url, token, id, params).await
}

/// A tickets server over HTTP with the test's tokens and a store in `dir`.
fn tickets_server(dir: &Path, env: &[(&str, &str)]) -> Served {
    let tokens = tokens_file(dir);
    let db = dir.join("tickets.db");
    let args = [
        "--tokens",
        tokens.to_str().unwrap(),
        "--db",
        db.to_str().unwrap(),
    ];
    serve("tickets", &args, env)
}

async fn ticket_total(url: &str) -> i64 {
    let r = call_tool(url, SAM, 99, "list_tickets", json!({})).await;
    r.result(99)["structuredContent"]["total"].as_i64().unwrap()
}

fn assert_opened(answer: &Answer, id: i64) -> Value {
    let result = answer.result(id);
    assert_eq!(result["isError"], false, "{result}");
    result["structuredContent"].clone()
}

fn assert_already_used(answer: &Answer, id: i64) {
    let result = answer.result(id);
    assert_eq!(result["isError"], true, "{result}");
    assert!(common::texts(result).contains("already used"), "{result}");
}

#[tokio::test]
async fn one_users_confirmation_cannot_be_used_with_another_users_token() {
    let dir = tempfile::tempdir().unwrap();
    let server = tickets_server(dir.path(), &[]);
    let state = round1(&server.url, SAM, 1).await;
    // Jun is staff at Larkfield too, so only the binding stands in his way.
    let stolen = round2(&server.url, JUN, 2, &state).await;
    assert_eq!(stolen.error_code(2), -32602, "{}", stolen.text);
    assert_eq!(
        stolen.reply(2)["error"]["message"],
        "Invalid or expired requestState"
    );
    assert_eq!(ticket_total(&server.url).await, 0);

    let honest = round2(&server.url, SAM, 3, &state).await;
    assert_eq!(assert_opened(&honest, 3)["id"], "INC-4100");
    assert_eq!(ticket_total(&server.url).await, 1);
    let rejected = server
        .records()
        .into_iter()
        .find(|r| r["event"] == "request_state_rejected")
        .expect("the refusal is logged");
    assert_eq!(rejected["user"], "usr-jun");
}

/// The (id, host) of every ticket `token`'s caller may list at `url`.
async fn tickets_listed(url: &str, token: &str) -> Vec<(String, String)> {
    let r = call_tool(url, token, 98, "list_tickets", json!({})).await;
    common::ids_and_hosts(&r.result(98)["structuredContent"])
}

#[tokio::test]
async fn the_tickets_server_checks_membership_and_role_and_keeps_organizations_apart() {
    let dir = tempfile::tempdir().unwrap();
    let server = tickets_server(dir.path(), &[]);
    let open = json!({"host": HOST, "summary": SUMMARY});

    // A token acting in an organization its user is no member of: -32003, for every tool.
    for (id, tool, arguments) in [
        (1, "open_ticket", open.clone()),
        (2, "list_tickets", json!({})),
    ] {
        let r = call_tool(&server.url, CAMILLE_IN_LARKFIELD, id, tool, arguments).await;
        assert_eq!(r.error_code(id), -32003, "{tool}: {}", r.text);
        assert_eq!(
            r.reply(id)["error"]["message"],
            "forbidden: you have no access to this organization"
        );
    }

    // Read-only: may list, may not open (not even be asked).
    assert_eq!(tickets_listed(&server.url, OMAR).await, vec![]);
    let r = call_tool(&server.url, OMAR, 3, "open_ticket", open.clone()).await;
    let refused = r.result(3);
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(refused.get("inputRequests").is_none(), "{refused}");
    assert!(
        common::texts(refused).contains("your role (read_only) does not allow incidents:write"),
        "{refused}"
    );

    // Larkfield's ticket, then Bramble's: each organization sees its own.
    let state = round1(&server.url, SAM, 4).await;
    assert_eq!(
        assert_opened(&round2(&server.url, SAM, 5, &state).await, 5)["id"],
        "INC-4100"
    );
    assert_eq!(tickets_listed(&server.url, CAMILLE).await, vec![]);
    let index =
        json!({"host": "search-index-prod-01", "summary": "the policy index stopped updating"});
    let state = round1_of(&server.url, CAMILLE, 6, index.clone()).await;
    let p2 = json!({"action": "accept", "content": {"priority": "P2"}});
    let r = round2_of(&server.url, CAMILLE, 7, index, p2, &state).await;
    assert_eq!(assert_opened(&r, 7)["id"], "INC-4101");
    assert_eq!(
        tickets_listed(&server.url, CAMILLE).await,
        vec![("INC-4101".to_owned(), "search-index-prod-01".to_owned())]
    );
    assert_eq!(
        tickets_listed(&server.url, SAM).await,
        vec![("INC-4100".to_owned(), HOST.to_owned())]
    );
    assert_eq!(
        tickets_listed(&server.url, OMAR).await,
        vec![("INC-4100".to_owned(), HOST.to_owned())]
    );
    let forbidden = server
        .records()
        .into_iter()
        .filter(|r| r["event"] == "tool_call" && r["outcome"] == "forbidden")
        .map(|r| (r["user"].clone(), r["role"].clone(), r["tool"].clone()))
        .collect::<Vec<_>>();
    assert_eq!(
        forbidden,
        vec![(json!("usr-omar"), json!("read_only"), json!("open_ticket"))]
    );
}

/// Two tickets instances sharing the sealing key and the store.
fn two_instances(dir: &Path) -> (Served, Served) {
    let env = [("GATEHOUSE_TICKETS_KEY", SHARED_KEY)];
    (tickets_server(dir, &env), tickets_server(dir, &env))
}

/// Round 2 with another answer than [`round2`]'s: priority P3.
async fn round2_p3(url: &str, token: &str, id: i64, state: &str) -> Answer {
    let p3 = json!({"action": "accept", "content": {"priority": "P3"}});
    let arguments = json!({"host": HOST, "summary": SUMMARY});
    round2_of(url, token, id, arguments, p3, state).await
}

#[tokio::test]
async fn rounds_on_two_instances_open_one_ticket_and_either_knows_the_answer_it_was_given() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_instances(dir.path());
    let state = round1(&a.url, SAM, 1).await;
    let opened = round2(&b.url, SAM, 2, &state).await;
    assert_eq!(assert_opened(&opened, 2)["id"], "INC-4100");
    // The same answer again, on either instance: the same ticket, no second one.
    assert_eq!(
        assert_opened(&round2(&a.url, SAM, 3, &state).await, 3)["id"],
        "INC-4100"
    );
    assert_eq!(
        assert_opened(&round2(&b.url, SAM, 4, &state).await, 4)["id"],
        "INC-4100"
    );
    // Another answer with the same state: refused on both.
    assert_already_used(&round2_p3(&a.url, SAM, 5, &state).await, 5);
    assert_already_used(&round2_p3(&b.url, SAM, 6, &state).await, 6);
    assert_eq!(ticket_total(&a.url).await, 1);
    assert_eq!(ticket_total(&b.url).await, 1);
}

/// POST `body` on a raw connection and return it unread: an answer that will be lost.
fn post_and_never_read(port: u16, token: &str, body: &Value) -> std::net::TcpStream {
    use std::io::Write;
    let text = body.to_string();
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nAuthorization: Bearer {token}\r\n\
         Content-Length: {}\r\n",
        text.len()
    );
    for (k, v) in standard_headers(body) {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut socket = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    socket.write_all(head.as_bytes()).unwrap();
    socket.write_all(text.as_bytes()).unwrap();
    socket
}

#[tokio::test]
async fn a_second_round_whose_answer_was_lost_in_a_crash_gets_its_ticket_after_the_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = tickets_server(dir.path(), &[]);
    let state = round1(&server.url, SAM, 1).await;
    let round2_body = request(
        2,
        "tools/call",
        json!({"name": "open_ticket", "arguments": {"host": HOST, "summary": SUMMARY},
               "inputResponses": {"confirm": {"action": "accept", "content": {"priority": "P1"}}},
               "requestState": state}),
    );
    // The server writes the ticket, logs the call, and dies before anyone reads the answer.
    let unread = post_and_never_read(server.port(), SAM, &round2_body);
    assert!(
        server.wait_calls("open_ticket", 2).await,
        "round 2 was not served: {:?}",
        server.stderr()
    );
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    drop(unread);

    // Restarted on the same store (and the key file beside it), the same round 2 again.
    let restarted = tickets_server(dir.path(), &[]);
    assert_eq!(
        ticket_total(&restarted.url).await,
        1,
        "the ticket was written"
    );
    let again = post(&restarted.url, Some(SAM), &round2_body).await;
    let ticket = assert_opened(&again, 2);
    assert_eq!(ticket["id"], "INC-4100");
    assert_eq!(ticket["priority"], "P1");
    assert_eq!(ticket_total(&restarted.url).await, 1, "no second ticket");
    assert!(
        restarted
            .records()
            .iter()
            .any(|r| r["event"] == "confirmation_answered_again" && r["ticket"] == "INC-4100"),
        "{:?}",
        restarted.stderr()
    );
    // Another user with a valid role still cannot present it.
    let r = post(&restarted.url, Some(JUN), &round2_body).await;
    assert_eq!(r.error_code(2), -32602, "{}", r.text);
}

// ---------------------------------------------------------------------------------------
// Behind a reverse proxy.
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn behind_nginx_round_robin_one_confirmation_opens_one_ticket() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_instances(dir.path());
    let proxy = start_nginx(dir.path(), &[a.port(), b.port()]);
    let instances = [&a, &b];
    let on = |tool: &str| -> Vec<usize> { instances.iter().map(|s| s.calls_of(tool)).collect() };

    // Round 1 through the proxy lands on one instance…
    let state = round1(&proxy.url, SAM, 1).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while on("open_ticket").iter().sum::<usize>() < 1 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let first = on("open_ticket")
        .iter()
        .position(|n| *n == 1)
        .expect("round 1 reached an instance");
    // …and round 2, through the proxy too, on the other (nginx's round robin).
    let opened = round2(&proxy.url, SAM, 2, &state).await;
    let second = 1 - first;
    assert!(
        instances[second].wait_calls("open_ticket", 1).await,
        "round 2 did not reach the other instance: open_ticket calls per instance {:?}; nginx log:\n{}",
        on("open_ticket"),
        std::fs::read_to_string(proxy.dir.join("access.log")).unwrap_or_default()
    );
    assert_eq!(on("open_ticket"), vec![1, 1]);
    let ticket = assert_opened(&opened, 2);
    assert_eq!(ticket["id"], "INC-4100");
    assert_eq!(ticket["priority"], "P1");

    // The same answer again, on the instance that asked: the same ticket.
    let again = round2(&instances[first].url, SAM, 3, &state).await;
    assert_eq!(assert_opened(&again, 3)["id"], "INC-4100");
    // Through the proxy, wherever it lands: the same answer gets the same ticket, another
    // answer is refused.
    assert_eq!(
        assert_opened(&round2(&proxy.url, SAM, 4, &state).await, 4)["id"],
        "INC-4100"
    );
    assert_already_used(&round2_p3(&proxy.url, SAM, 6, &state).await, 6);
    assert_eq!(ticket_total(&proxy.url).await, 1);
    assert_eq!(ticket_total(&a.url).await, 1);

    // The proxy passes the token through; without one, 401 from the instance behind it.
    let r = post(&proxy.url, None, &request(5, "tools/list", json!({}))).await;
    assert_eq!(r.status, 401);
}
