//! The official Python SDK's servers under the host, and under rmcp's own client:
//! `py_confirm_server.py` (2026-07-28, `input_required`, a sealed `requestState`) and
//! `py_legacy_only_server.py` (2025-11-25 only).

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use rmcp::{
    ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceError,
    model::*,
    service::{ClientInitializeError, RunningService},
    transport::{StreamableHttpClientTransport, TokioChildProcess},
};
use serde_json::{Value, json};

use super::*;
use crate::common::client::{Asker, open_ticket, with_answer};
use crate::common::expect;

// ------------------------------------------------------------------------------------
// py_confirm_server.py under the host
// ------------------------------------------------------------------------------------

fn confirm_decisions() -> Value {
    json!([
        {"tool_calls": [{"name": "confirm__open_ticket", "arguments": {"host": "jump-prod-02", "summary": "brute force then a login"}}]},
        {"tool_calls": [{"name": "confirm__list_tickets", "arguments": {}}]},
        {"answer": "ok"}
    ])
}

/// (protocol, outcome) of each `tools/call` of `tool` in a Python test server's log.
fn python_rounds(records: &[Value], tool: &str) -> Vec<(String, String)> {
    records
        .iter()
        .filter(|r| r["method"] == "tools/call" && r["name"] == tool)
        .map(|r| {
            (
                r["protocol"].as_str().unwrap_or_default().to_owned(),
                r["outcome"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn rounds(outcomes: &[&str]) -> Vec<(String, String)> {
    outcomes
        .iter()
        .map(|o| ("2026-07-28".to_string(), o.to_string()))
        .collect()
}

pub fn a_python_sdk_server_asks_through_input_required_and_the_person_answers(t: Transport) {
    let world = World::new(Peer::Confirm, t);
    let ran = world.ask(
        confirm_decisions(),
        &["--yes", "--answer", "priority=P2"],
        &[],
    );
    discovered(&ran, "confirm", "2026-07-28", "py-confirm");
    ran.assert_steps(&[
        "person: said yes",
        "server: confirm asks: Open an incident ticket for jump-prod-02?",
        "person: answered accept",
    ]);
    let events = ran.tool_events();
    assert_eq!(events[0]["outcome"], "ok");
    assert_eq!(events[0]["asked_user"], true);
    // Two server rounds on 2026-07-28, as the Python server logged them; no handshake.
    let records = world.records(&ran);
    assert_eq!(
        python_rounds(&records, "open_ticket"),
        rounds(&["input_required", "ok"])
    );
    assert!(!records.iter().any(|r| r["method"] == "initialize"));
    // The state is the SDK's AES-GCM token (`v1.…`, no plaintext), echoed byte for byte
    // with the answer.
    let wire = world.wire();
    let asked = tool_result(&wire, "open_ticket", 0);
    assert_eq!(asked["resultType"], "input_required");
    let state = asked["requestState"].as_str().unwrap();
    assert!(
        state.starts_with("v1.") && !state.contains("asked"),
        "{state}"
    );
    let retry = wire
        .iter()
        .filter(|(d, m)| d == "to_server" && m["params"]["name"] == "open_ticket")
        .nth(1)
        .unwrap()
        .1
        .clone();
    assert_eq!(retry["params"]["requestState"], state);
    assert_eq!(
        retry["params"]["inputResponses"]["confirm"],
        json!({"action": "accept", "content": {"priority": "P2"}})
    );
    let opened = tool_result(&wire, "open_ticket", 1);
    assert_eq!(opened["structuredContent"]["id"], "INC-7100");
    assert_eq!(opened["structuredContent"]["priority"], "P2");
    assert_eq!(
        tool_result(&wire, "list_tickets", 0)["structuredContent"]["total"],
        1
    );
}

pub fn declining_a_python_sdk_servers_form_opens_nothing(t: Transport) {
    let world = World::new(Peer::Confirm, t);
    let ran = world.ask(confirm_decisions(), &["--yes", "--decline"], &[]);
    ran.assert_steps(&[
        "person: answered decline",
        "server: tool error: Error executing tool open_ticket: the user answered decline: no ticket was opened",
    ]);
    assert_eq!(ran.outcomes(), vec!["tool_error", "ok"]);
    assert_eq!(
        python_rounds(&world.records(&ran), "open_ticket"),
        rounds(&["input_required", "tool_error"])
    );
    assert_eq!(
        tool_result(&world.wire(), "list_tickets", 0)["structuredContent"]["total"],
        0
    );
}

// ------------------------------------------------------------------------------------
// Under rmcp's own client, round by round
// ------------------------------------------------------------------------------------

/// rmcp's client connected to a Python server over `t`, and the server's log.
struct Direct {
    client: RunningService<RoleClient, Asker>,
    log: ServerLog,
}

/// What a Python server writes on stderr: over stdio read from its pipe, over HTTP from
/// its process (which this keeps alive).
enum ServerLog {
    Piped(Arc<Mutex<Vec<String>>>),
    Process(Process),
}

impl ServerLog {
    fn records(&self) -> Vec<Value> {
        match self {
            ServerLog::Piped(lines) => lines
                .lock()
                .unwrap()
                .iter()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect(),
            ServerLog::Process(server) => server.records(),
        }
    }

    /// The server's rounds of `tool`, once it has logged `n` of them (it may log a round
    /// after its answer has reached the client), or after the tests' `LIMIT` what it logged.
    async fn rounds_of(&self, tool: &str, n: usize) -> Vec<(String, String)> {
        let deadline = std::time::Instant::now() + crate::common::process::LIMIT;
        loop {
            let rounds = python_rounds(&self.records(), tool);
            if rounds.len() >= n || std::time::Instant::now() >= deadline {
                return rounds;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

async fn connect(
    peer: Peer,
    t: Transport,
    answer: Value,
    mode: ClientLifecycleMode,
) -> Result<Direct, ClientInitializeError> {
    let asker = Asker::accepting(answer);
    let (started, log) = match t {
        Transport::Stdio => {
            let command = peer.stdio_command();
            let mut cmd = tokio::process::Command::new(&command[0]);
            cmd.args(&command[1..]);
            let (transport, stderr) = TokioChildProcess::builder(cmd)
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("the Python server starts");
            let lines = Arc::new(Mutex::new(Vec::new()));
            if let Some(stderr) = stderr {
                let sink = lines.clone();
                tokio::spawn(async move {
                    use tokio::io::AsyncBufReadExt;
                    let mut read = tokio::io::BufReader::new(stderr).lines();
                    while let Ok(Some(line)) = read.next_line().await {
                        sink.lock().unwrap().push(line);
                    }
                });
            }
            let started =
                tokio::time::timeout(PEER_LIMIT, asker.serve_with_lifecycle(transport, mode)).await;
            (started, ServerLog::Piped(lines))
        }
        Transport::Http => {
            let server = peer.http_process();
            let transport = StreamableHttpClientTransport::from_uri(server.url.clone());
            let started =
                tokio::time::timeout(PEER_LIMIT, asker.serve_with_lifecycle(transport, mode)).await;
            (started, ServerLog::Process(server))
        }
    };
    let client = started.expect("the Python server answers in time")?;
    Ok(Direct { client, log })
}

fn assert_revision(client: &RunningService<RoleClient, Asker>, revision: ProtocolVersion) {
    let agreed = &client
        .peer_info()
        .expect("the server said who it is")
        .protocol_version;
    assert_eq!(*agreed, revision);
}

async fn once(
    client: &RunningService<RoleClient, Asker>,
    params: CallToolRequestParams,
) -> Result<CallToolResponse, ServiceError> {
    tokio::time::timeout(PEER_LIMIT, client.call_tool_once(params))
        .await
        .expect("the Python server answers in time")
}

fn refused_state(r: Result<CallToolResponse, ServiceError>, what: &str) {
    match r {
        Err(ServiceError::McpError(e)) => {
            assert_eq!(e.code.0, -32602, "{what}");
            assert_eq!(e.message, "Invalid or expired requestState", "{what}");
            assert_eq!(
                e.data,
                Some(json!({"reason": "invalid_request_state"})),
                "{what}"
            );
        }
        other => panic!("{what}: expected -32602 Invalid or expired requestState, got {other:?}"),
    }
}

fn opened(r: Result<CallToolResponse, ServiceError>) -> Value {
    match r.expect("the call answers") {
        CallToolResponse::Complete(result) => {
            assert_eq!(result.is_error, Some(false), "{result:?}");
            result.structured_content.expect("a ticket")
        }
        other => panic!("expected a complete result, got {other:?}"),
    }
}

pub async fn the_python_sdk_refuses_its_sealed_state_replayed_with_other_arguments(t: Transport) {
    let Direct { client, log } = connect(
        Peer::Confirm,
        t,
        json!({"priority": "P2"}),
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    )
    .await
    .expect("the confirmation server speaks 2026-07-28");
    assert_revision(&client, ProtocolVersion::V_2026_07_28);
    let params = open_ticket("jump-prod-02", "brute force");
    let state = match once(&client, params.clone()).await.expect("round 1") {
        CallToolResponse::InputRequired(asked) => {
            let form = serde_json::to_value(&asked.input_requests.unwrap()["confirm"]).unwrap();
            assert_eq!(form["method"], "elicitation/create");
            assert_eq!(
                form["params"]["requestedSchema"]["properties"]["priority"]["enum"],
                json!(["P1", "P2", "P3"])
            );
            asked.request_state.expect("a sealed state")
        }
        other => panic!("round 1 must ask first, got {other:?}"),
    };
    assert!(state.starts_with("v1."), "{state}");

    // The state bound to jump-prod-02 / "brute force", replayed for other arguments (over
    // HTTP in requests that stand alone: the server keeps no session), tampered with, or
    // made up.
    let mut tampered = state.clone().into_bytes();
    let i = tampered.len() - 3;
    tampered[i] = if tampered[i] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    for (what, host, summary, state) in [
        (
            "another host",
            "jump-prod-01",
            "brute force",
            state.as_str(),
        ),
        ("another summary", "jump-prod-02", "all fine", &state),
        ("a tampered state", "jump-prod-02", "brute force", &tampered),
        (
            "a plaintext state",
            "jump-prod-02",
            "brute force",
            "asked-the-user",
        ),
    ] {
        let replayed = with_answer(open_ticket(host, summary), "P1", state);
        refused_state(once(&client, replayed).await, what);
    }
    let listed = match once(&client, CallToolRequestParams::new("list_tickets"))
        .await
        .unwrap()
    {
        CallToolResponse::Complete(r) => r.structured_content.unwrap(),
        other => panic!("{other:?}"),
    };
    assert_eq!(listed["total"], 0, "nothing opened by the refused rounds");

    // The honest round still works.
    let ticket = opened(once(&client, with_answer(params.clone(), "P2", &state)).await);
    assert_eq!(ticket["id"], "INC-7100");
    assert_eq!(ticket["priority"], "P2");
    // The SDK binds but does not make a state single-use: the same round again, within
    // its 600 s lifetime, opens a second ticket. (Ours answers it with the ticket it
    // already opened.)
    let again = opened(once(&client, with_answer(params, "P2", &state)).await);
    assert_eq!(again["id"], "INC-7101");
    let _ = tokio::time::timeout(Duration::from_secs(5), client.cancel()).await;
    // The server's own view: the SDK refused the replayed rounds before its middleware
    // and the tool ran, so only the honest rounds are logged.
    assert_eq!(
        log.rounds_of("open_ticket", 3).await,
        rounds(&["input_required", "ok", "ok"])
    );
}

pub async fn rmcp_alone_gives_up_on_a_server_that_lists_only_2025_11_25(t: Transport) {
    let failed = connect(
        Peer::Legacy,
        t,
        json!({"color": "blue"}),
        ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            legacy_version: Some(ProtocolVersion::V_2025_11_25),
        },
    )
    .await;
    match failed {
        Err(ClientInitializeError::NoCompatibleProtocolVersion {
            server_supported, ..
        }) => assert_eq!(server_supported, vec![ProtocolVersion::V_2025_11_25]),
        Err(other) => panic!("expected NoCompatibleProtocolVersion, got {other}"),
        Ok(_) => panic!("expected NoCompatibleProtocolVersion, got a connection"),
    }
    // The same server is fine with `initialize`.
    let Direct { client, .. } = connect(
        Peer::Legacy,
        t,
        json!({"color": "blue"}),
        ClientLifecycleMode::Initialize,
    )
    .await
    .expect("initialize works");
    assert_revision(&client, ProtocolVersion::V_2025_11_25);
    let _ = tokio::time::timeout(Duration::from_secs(5), client.cancel()).await;
}

// ------------------------------------------------------------------------------------
// py_legacy_only_server.py under the host
// ------------------------------------------------------------------------------------

/// The host's fallback with the real Python server: the probe refused with -32022, a
/// new connection with `initialize` at 2025-11-25, and every request on that revision;
/// the server's form (`elicitation/create`) answered with --answer.
pub fn the_host_connects_to_a_python_server_that_lists_only_2025_11_25_through_initialize(
    t: Transport,
) {
    let world = World::tapped(Peer::Legacy, t);
    let ran = world.ask(
        json!([
            {"tool_calls": [{"name": "legacy__add", "arguments": {"a": 2, "b": 40}}]},
            {"tool_calls": [{"name": "legacy__whoami", "arguments": {}}]},
            {"tool_calls": [{"name": "legacy__pick_color", "arguments": {}}]},
            {"answer": "ok"}
        ]),
        &["--yes", "--answer", "color=green"],
        &[],
    );
    discovered(&ran, "legacy", "2025-11-25", "py-legacy-only");
    assert!(
        ran.step_texts()[0].contains("add, echo, whoami, pick_color"),
        "{:?}",
        ran.step_texts()
    );
    assert_eq!(
        ran.outcomes(),
        vec!["ok", "ok", "ok"],
        "{:#?}",
        ran.step_texts()
    );
    ran.assert_steps(&["server: legacy asks: Which color?"]);
    // On the wire: the probe refused with -32022 naming 2025-11-25, then the handshake at
    // 2025-11-25, and the form as `elicitation/create`.
    let tap = world.tap();
    assert_eq!(
        negotiated(&tap),
        ("initialize".to_string(), "2025-11-25".to_string())
    );
    let probe = sent(&tap, "server/discover");
    let refusal = tap
        .iter()
        .find(|(d, m)| d == "<<" && m["error"]["code"] == -32022)
        .expect("-32022 for the probe")
        .1
        .clone();
    assert_eq!(refusal["error"]["data"]["supported"], json!(["2025-11-25"]));
    let init = sent(&tap, "initialize");
    assert_eq!(init["params"]["protocolVersion"], "2025-11-25");
    assert!(
        tap.iter()
            .any(|(d, m)| d == "<<" && m["method"] == "elicitation/create")
    );
    if t == Transport::Http {
        // The probe with HTTP 400; the handshake opened a session, and the form came on
        // the call's own event stream.
        assert_eq!(exchange_of(&tap, &probe)["status"], 400);
        assert!(exchange_of(&tap, &init)["session"].is_string());
    }
    // The server's view: the probe refused, the handshake, then every call on 2025-11-25.
    // The server writes a record as each request ends and handles requests side by side,
    // so on a loaded machine (the host stops waiting for the probe after rmcp's 10 s and
    // sends initialize) the two may end in either order; and at a load of 10 and more the
    // first start may run out of time altogether, its records not the run's. The tap above
    // holds the refusal whatever the load; here, no probe succeeded and the handshake came
    // before every call.
    let records = world.records(&ran);
    let seen = expect::pairs(&records, "method", "outcome");
    assert!(
        seen.iter()
            .filter(|(m, _)| m == "server/discover")
            .all(|(_, o)| o == "error -32022"),
        "{seen:?}"
    );
    let handshake = seen
        .iter()
        .position(|p| *p == ("initialize".to_string(), "ok".to_string()))
        .unwrap_or_else(|| panic!("no handshake: {seen:?}"));
    let first_call = seen.iter().position(|(m, _)| m == "tools/call");
    assert!(first_call.is_some_and(|c| c > handshake), "{seen:?}");
    assert!(
        records
            .iter()
            .filter(|r| r["method"] == "tools/call")
            .all(|r| r["protocol"] == "2025-11-25")
    );
    let wire = world.wire();
    assert_eq!(
        tool_result(&wire, "add", 0)["structuredContent"],
        json!({"sum": 42})
    );
    let whoami: Value = serde_json::from_str(&texts(&tool_result(&wire, "whoami", 0))).unwrap();
    assert_eq!(whoami["protocolVersion"], "2025-11-25");
    assert_eq!(
        whoami["clientCapabilities"]["elicitation"],
        json!({"form": {}, "url": {}})
    );
    assert_eq!(
        texts(&tool_result(&wire, "pick_color", 0)),
        "the user picked green"
    );
}

/// After the refused probe, the host's `initialize` offers 2025-11-25 (not "2026-07-28",
/// a revision that has no `initialize`): a server that refuses unknown versions in
/// `initialize` rather than answering with its own would not start otherwise.
pub fn the_fallback_initialize_offers_2025_11_25(t: Transport) {
    let world = World::new(Peer::Legacy, t);
    world.ask(json!([{"answer": "ok"}]), &[], &[]);
    let init = world
        .wire()
        .into_iter()
        .find(|(d, m)| d == "to_server" && m["method"] == "initialize")
        .unwrap();
    assert_eq!(init.1["params"]["protocolVersion"], "2025-11-25");
}
