//! The lab over plain HTTP: who may talk to it (token, `Host`, `Origin`), how it answers bad
//! requests, `ask --record`, and calls run as tasks (a task that went on in the background
//! told at the next turn, Stop on a task). The real binary, real servers, raw requests.

use crate::common;

use std::{
    io::{Read, Write},
    net::TcpStream,
    time::Duration,
};

use common::process::Process;
use serde_json::{Value, json};

/// A running `gatehouse lab` ([`common::serve::lab`]), stopped with Ctrl-C when dropped.
struct Lab {
    _process: Process,
    port: u16,
    token: String,
}

impl Lab {
    fn start(extra: &[&str]) -> Lab {
        Lab::start_with(extra, &[])
    }

    fn start_with(extra: &[&str], env: &[(&str, &str)]) -> Lab {
        let process = common::serve::lab_with(extra, env);
        let rest = process
            .url
            .strip_prefix("http://127.0.0.1:")
            .expect("the lab listens on 127.0.0.1")
            .to_owned();
        let (port, token) = rest
            .split_once("/?token=")
            .expect("the URL carries a token");
        Lab {
            port: port.parse().unwrap(),
            token: token.to_owned(),
            _process: process,
        }
    }

    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// One raw request; returns the status and the body.
    fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, String)],
        body: &str,
    ) -> (u16, String) {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut text = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
        for (k, v) in headers {
            text.push_str(&format!("{k}: {v}\r\n"));
        }
        if !body.is_empty() || method == "POST" {
            text.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            ));
        }
        text.push_str("\r\n");
        text.push_str(body);
        stream.write_all(text.as_bytes()).unwrap();
        let mut response = Vec::new();
        let _ = stream.read_to_end(&mut response);
        let response = String::from_utf8_lossy(&response).into_owned();
        let status = response
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no status line in {response:?}"));
        let body = response
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_owned())
            .unwrap_or_default();
        (status, body)
    }

    /// A request as the lab's own page makes it: our Host, the token in a header.
    fn ours(&self, method: &str, path: &str, body: &str) -> (u16, String) {
        let headers = [("Host", self.host()), ("X-Lab-Token", self.token.clone())];
        self.request(method, path, &headers, body)
    }

    /// The lab's events from the first (its log is replayed to each new page) up to and
    /// including the first one `until` holds for, read from `/api/events` within
    /// [`EVENTS_LIMIT`].
    fn events_until(&self, until: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let request = format!(
            "GET /api/events HTTP/1.0\r\nHost: {}\r\nX-Lab-Token: {}\r\n\r\n",
            self.host(),
            self.token
        );
        stream.write_all(request.as_bytes()).unwrap();
        let deadline = std::time::Instant::now() + EVENTS_LIMIT;
        let (mut bytes, mut events, mut read) = (Vec::new(), Vec::new(), 0);
        let mut buf = [0u8; 16384];
        while std::time::Instant::now() < deadline {
            match stream.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => bytes.extend_from_slice(&buf[..n]),
                Err(_) => continue, // the read timed out: look at the deadline again
            }
            // Whole lines only (HTTP/1.0: the body is not chunked, it ends with the stream).
            while let Some(end) = bytes[read..].iter().position(|b| *b == b'\n') {
                let line = String::from_utf8_lossy(&bytes[read..read + end]).into_owned();
                read += end + 1;
                let Some(data) = line.trim_end().strip_prefix("data:") else {
                    continue;
                };
                let event: Value = serde_json::from_str(data.trim()).unwrap();
                let done = until(&event);
                events.push(event);
                if done {
                    return events;
                }
            }
        }
        panic!("the awaited event did not come in {EVENTS_LIMIT:?}: {events:#?}");
    }
}

/// The longest a test waits for one of the lab's events.
const EVENTS_LIMIT: Duration = Duration::from_secs(60);

/// The JSON body of a response (chunked bodies are read loosely: from the first `{`).
fn json_of(body: &str) -> Value {
    let start = body.find('{').unwrap_or(0);
    let end = body.rfind('}').map_or(body.len(), |e| e + 1);
    serde_json::from_str(&body[start..end]).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

#[test]
fn only_the_page_with_the_token_on_our_host_and_origin_gets_in() {
    let lab = Lab::start(&[]);
    let host = ("Host", lab.host());
    let token_path = format!("/?token={}", lab.token);

    let (status, body) = lab.request("GET", &token_path, std::slice::from_ref(&host), "");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("Gatehouse lab"));
    assert!(
        body.contains(&lab.token),
        "the page carries its token for its own requests"
    );

    let (status, body) = lab.request("GET", "/", std::slice::from_ref(&host), "");
    assert_eq!(status, 403, "no token: {body}");
    assert!(body.contains("no token"));
    let (status, _) = lab.request(
        "GET",
        "/api/state",
        &[host.clone(), ("X-Lab-Token", "0".repeat(32))],
        "",
    );
    assert_eq!(status, 403, "a wrong token is refused");
    let (status, _) = lab.request("GET", "/app.js", std::slice::from_ref(&host), "");
    assert_eq!(status, 403, "assets need the token too");

    // A page on another name that resolves here (DNS rebinding) is refused.
    let foreign_host = ("Host", format!("evil.example:{}", lab.port));
    let (status, body) = lab.request("GET", &token_path, &[foreign_host], "");
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("Host"));
    let (status, _) = lab.request("GET", &token_path, &[], "");
    assert_eq!(status, 403, "no Host at all is refused");

    // Another site's page, even with the token, is refused; our own origin is not.
    let foreign_origin = [host.clone(), ("Origin", "http://evil.example".to_string())];
    let (status, body) = lab.request(
        "POST",
        &format!("/api/stop?token={}", lab.token),
        &foreign_origin,
        "{}",
    );
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("Origin"));
    let own_origin = [
        host.clone(),
        ("Origin", format!("http://127.0.0.1:{}", lab.port)),
        ("X-Lab-Token", lab.token.clone()),
    ];
    let (status, body) = lab.request("POST", "/api/stop", &own_origin, "{}");
    assert_eq!(status, 200, "{body}");
    assert_eq!(json_of(&body)["stopped"], false, "no call was in flight");

    // Bad requests get a clear 4xx, never a crash.
    let (status, body) = lab.ours("POST", "/api/ask", "{not json");
    assert_eq!(status, 400);
    assert!(
        json_of(&body)["error"]
            .as_str()
            .unwrap()
            .contains("not valid JSON")
    );
    let (status, body) = lab.ours("POST", "/api/ask", "[1, 2]");
    assert_eq!(status, 400, "{body}");
    let (status, body) = lab.ours("POST", "/api/ask", r#"{"question": "   "}"#);
    assert_eq!(status, 400, "{body}");
    let (status, body) = lab.ours("POST", "/api/propose", "{}");
    assert_eq!(status, 400, "{body}");
    let (status, _) = lab.ours("POST", "/api/prompts/abc", r#"{"run": true}"#);
    assert_eq!(status, 400);
    let (status, body) = lab.ours("POST", "/api/prompts/99", r#"{"run": true}"#);
    assert_eq!(status, 410, "{body}");
    let (status, _) = lab.ours("GET", "/api/recordings/x", "");
    assert_eq!(status, 400);
    let (status, _) = lab.ours("GET", "/nope", "");
    assert_eq!(status, 404);

    // The state and the start-up recording.
    let (status, body) = lab.ours("GET", "/api/state", "");
    assert_eq!(status, 200);
    let state = json_of(&body);
    assert_eq!(state["model"], "scripted");
    assert!(common::expect::item_with(&state["tools"], "name", "support__get_ticket").is_some());
    let (status, body) = lab.ours("GET", "/api/recordings/0", "");
    assert_eq!(status, 200);
    assert!(body.contains(r#""direction":"to_server""#), "{body}");
    assert!(body.contains("tools/list"));
}

#[test]
fn a_manual_lab_has_no_model_to_ask() {
    let lab = Lab::start(&["--manual"]);
    let (status, body) = lab.ours("GET", "/api/state", "");
    assert_eq!(status, 200);
    assert_eq!(json_of(&body)["manual"], true);
    let (status, body) = lab.ours(
        "POST",
        "/api/ask",
        r#"{"question": "Draft a reply to ticket T-30002"}"#,
    );
    assert_eq!(status, 409, "{body}");
    assert!(json_of(&body)["error"].as_str().unwrap().contains("manual"));
}

/// The red team's probe: a tool on the allow-list and hidden by a deny rule is not in the
/// manual panel's catalog (it was listed `"allowed": true`). Each other tool says what the
/// policy does with its calls, in the run's words: runs, asked, or, for a tool a deny rule
/// refuses some arguments, that the arguments decide (it said "Not on the allow-list: you
/// will be asked first").
#[test]
fn the_manual_panel_shows_what_the_policy_says_of_each_tool() {
    let dir = tempfile::tempdir().unwrap();
    let config = common::servers_file(
        dir.path(),
        json!({"support": common::builtin_server("support", json!({})),
               "cmdb": common::builtin_server("cmdb", json!({}))}),
        json!({"allow": ["support__get_ticket", "support__search_knowledge"],
               "rules": [{"tool": "support__get_ticket", "decision": "deny", "reason": "hidden"},
                         {"tool": "cmdb__get_asset", "decision": "deny",
                          "when": {"pointer": "/hostname", "glob": "*-prod-*"},
                          "reason": "production hosts are private"},
                         {"tool": "cmdb__find_assets", "decision": "ask",
                          "reason": "it lists every host"}]}),
    );
    let lab = Lab::start(&["--manual", "--config", &config]);
    let (status, body) = lab.ours("GET", "/api/state", "");
    assert_eq!(status, 200, "{body}");
    let tools = &json_of(&body)["tools"];
    let policy =
        |name: &str| common::expect::item_with(tools, "name", name).map(|t| t["policy"].clone());
    assert_eq!(policy("support__get_ticket"), None, "{tools}");
    let says = |standing: &str, words: &str| Some(json!({"standing": standing, "words": words}));
    assert_eq!(
        policy("support__search_knowledge"),
        says("allowed", "on the allow-list: run it")
    );
    assert_eq!(
        policy("cmdb__get_asset"),
        says(
            "depends",
            "depends on the arguments (rules[1]): not on the allow-list: ask the person; \
             or denied by rules[1]: production hosts are private"
        )
    );
    assert_eq!(
        policy("cmdb__find_assets"),
        says("asked", "rules[2] says ask the person: it lists every host")
    );
}

#[test]
fn ask_record_writes_every_message_as_json_lines() {
    let dir = common::scratch_dir();
    let file = dir.join("run.jsonl");
    let ran = common::ask(
        "Draft a reply to ticket T-30002",
        &["--record", file.to_str().unwrap()],
        &[],
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert!(ran.answer().contains("Refunds and payments"));
    let text = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(lines.len() >= 6, "{text}");
    for l in &lines {
        for key in [
            "t_ms",
            "server",
            "direction",
            "kind",
            "summary",
            "bytes",
            "message",
        ] {
            assert!(l.get(key).is_some(), "{key} missing in {l}");
        }
    }
    let calls: Vec<&Value> = lines
        .iter()
        .filter(|l| l["method"] == "tools/call" && l["direction"] == "to_server")
        .collect();
    assert_eq!(calls.len(), 2, "get_ticket and search_knowledge");
    assert_eq!(calls[0]["message"]["params"]["name"], "get_ticket");
    assert!(lines.iter().any(|l| l["summary"] == "result of tools/call"));
    assert!(
        lines.iter().any(|l| l["direction"] == "stderr"),
        "servers' stderr is recorded"
    );
    let times: Vec<f64> = lines.iter().map(|l| l["t_ms"].as_f64().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "in time order");
}

// ---------------------------------------------------------------------------------------
// Calls run as tasks
// ---------------------------------------------------------------------------------------

/// A folder with the testbed (its task store there, `task_job` allowed) and the host's
/// task records, and the servers file naming them with `settings`.
fn task_world(settings: Value) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let env = json!({"GATEHOUSE_SERVER_TASKS_DB": dir.path().join("server-tasks.db")});
    let mut gatehouse =
        json!({"allow": ["testbed__task_job"], "tasksFile": dir.path().join("tasks.db")});
    if let (Some(g), Value::Object(more)) = (gatehouse.as_object_mut(), settings) {
        g.extend(more);
    }
    let config = common::servers_file(
        dir.path(),
        json!({"testbed": common::builtin_server("testbed", env)}),
        gatehouse,
    );
    (dir, config)
}

fn is_turn_end(n: u64) -> impl Fn(&Value) -> bool {
    move |e| e["type"] == "turn_end" && e["turn"] == n
}

/// The id in turn `n`'s step "runs the call as task ID".
fn task_of_turn(events: &[Value], n: u64) -> String {
    events
        .iter()
        .find(|e| {
            e["type"] == "step"
                && e["turn"] == n
                && e["text"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("runs the call as task "))
        })
        .and_then(|e| e["data"]["task_id"].as_str())
        .unwrap_or_else(|| panic!("no task in turn {n}: {events:#?}"))
        .to_owned()
}

/// The testbed's line on its stderr that task `id`'s leg ended `status`.
fn leg_ended(id: &str, status: &str) -> impl Fn(&Value) -> bool {
    let (id, status) = (id.to_owned(), status.to_owned());
    move |e| {
        e["type"] == "stderr"
            && serde_json::from_str::<Value>(e["line"].as_str().unwrap_or_default()).is_ok_and(
                |l| l["event"] == "task_leg_ended" && l["task_id"] == id && l["status"] == status,
            )
    }
}

/// Turn 1's call outlives its wait and goes on as a task; when it has ended, turn 2 tells
/// the person (a `task_ended` notice, and the step) and gives the model its end as the
/// answer to its call, before the question, as `chat` does.
#[test]
fn a_task_that_went_on_in_the_background_is_told_at_the_labs_next_turn_to_the_person_and_the_model()
{
    use crate::openai_endpoint::{Fake, tool_call};
    let (_dir, config) = task_world(json!({"taskWaitMs": 500}));
    let answer = |text: &str| {
        json!({"id": "chatcmpl-end", "object": "chat.completion", "model": "gpt-oss-120b",
               "choices": [{"index": 0, "finish_reason": "stop",
                            "message": {"role": "assistant", "content": text}}],
               "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
    };
    let fake = Fake::start(vec![
        tool_call("c1", "testbed__task_job", json!({"seconds": 1.5}), (10, 5)),
        answer("It goes on in the background."),
        answer("The job has finished."),
    ]);
    let env = [
        ("OPENAI_BASE_URL", fake.base.as_str()),
        ("OPENAI_API_KEY", "sk-test"),
    ];
    let lab = Lab::start_with(
        &["--config", &config, "--model", "openai:gpt-oss-120b"],
        &env,
    );
    let (status, body) = lab.ours("POST", "/api/ask", r#"{"question": "start the job"}"#);
    assert_eq!(status, 202, "{body}");
    let events = lab.events_until(is_turn_end(1));
    let id = task_of_turn(&events, 1);
    let call = events.iter().find(|e| e["type"] == "tool").unwrap();
    assert_eq!(
        (&call["outcome"], &call["task_id"]),
        (&json!("background"), &json!(id))
    );
    assert!(!events.iter().any(|e| e["type"] == "task_ended"));
    // The task ends on the server; the lab is idle meanwhile.
    lab.events_until(leg_ended(&id, "completed"));

    let (status, body) = lab.ours("POST", "/api/ask", r#"{"question": "is it done?"}"#);
    assert_eq!(status, 202, "{body}");
    let events = lab.events_until(is_turn_end(2));
    let turn2: Vec<&Value> = events.iter().filter(|e| e["turn"] == 2).collect();
    let notices: Vec<&&Value> = turn2.iter().filter(|e| e["type"] == "task_ended").collect();
    assert_eq!(notices.len(), 1, "{turn2:#?}");
    assert_eq!(
        (
            &notices[0]["task_id"],
            &notices[0]["tool"],
            &notices[0]["server"],
            &notices[0]["status"]
        ),
        (
            &json!(id),
            &json!("testbed__task_job"),
            &json!("testbed"),
            &json!("completed")
        )
    );
    let said = format!(
        "task {id} (testbed__task_job), which went on in the background, has ended: completed"
    );
    assert!(
        turn2
            .iter()
            .any(|e| e["type"] == "step" && e["text"].as_str().unwrap().starts_with(&said)),
        "{turn2:#?}"
    );
    // Its end's record joins the call's.
    let ended = turn2
        .iter()
        .find(|e| e["type"] == "tool")
        .unwrap_or_else(|| panic!("{turn2:#?}"));
    assert_eq!(
        (&ended["outcome"], &ended["task_id"], &ended["trace_id"]),
        (&json!("ok"), &json!(id), &call["trace_id"])
    );
    // The model read the end as the answer to its call, just before the question.
    let seen = fake.chat_requests();
    assert_eq!(seen.len(), 3);
    let messages = seen[2].body["messages"].as_array().unwrap();
    let at = messages
        .iter()
        .position(|m| m["tool_calls"][0]["id"] == json!(format!("task_{id}")))
        .unwrap_or_else(|| panic!("the task's call is not in the conversation: {messages:#?}"));
    assert_eq!(messages[at + 1]["role"], "tool");
    let end: Value = serde_json::from_str(messages[at + 1]["content"].as_str().unwrap()).unwrap();
    assert_eq!(end["result"]["slept"], 1.5, "{end}");
    assert_eq!(
        (&messages[at + 2]["role"], &messages[at + 2]["content"]),
        (&json!("user"), &json!("is it done?"))
    );
}

/// Stop while a call runs as a task: the host sends `tasks/cancel`, the testbed's task
/// ends `cancelled`, and the call ends stopped.
#[test]
fn stop_in_the_lab_cancels_a_running_task_with_tasks_cancel() {
    let (dir, config) = task_world(json!({"toolTimeoutMs": 120000}));
    let model = common::playback(
        dir.path(),
        json!([{"tool_calls": [{"name": "testbed__task_job", "arguments": {"seconds": 120}}]},
               {"answer": "stopped"}]),
    );
    let lab = Lab::start(&["--config", &config, "--model", &model]);
    let (status, body) = lab.ours("POST", "/api/ask", r#"{"question": "run the long job"}"#);
    assert_eq!(status, 202, "{body}");
    let events = lab.events_until(|e| {
        e["type"] == "step"
            && e["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("runs the call as task "))
    });
    let id = task_of_turn(&events, 1);
    let (status, body) = lab.ours("POST", "/api/stop", "{}");
    assert_eq!(status, 200, "{body}");
    assert_eq!(json_of(&body)["stopped"], true, "{body}");
    let events = lab.events_until(is_turn_end(1));
    assert!(
        events.iter().any(|e| e["type"] == "wire"
            && e["direction"] == "to_server"
            && e["method"] == "tasks/cancel"),
        "tasks/cancel was sent"
    );
    let call = events.iter().find(|e| e["type"] == "tool").unwrap();
    assert_eq!(
        (&call["outcome"], &call["task_id"]),
        (&json!("stopped"), &json!(id))
    );
    // The server's task ended cancelled (its line may come after the turn's end).
    lab.events_until(leg_ended(&id, "cancelled"));
}

/// `--eval DIR`: the report as written, and a recording only by a name the folder holds;
/// a folder with no report is refused before the lab starts.
#[test]
fn an_eval_folder_is_served_by_its_own_names_only() {
    let dir = tempfile::tempdir().unwrap();
    let recordings = dir.path().join("recordings");
    let seeds = common::repo_root().join("evals/seeds.yaml");
    let ran = common::run(
        &[
            "eval",
            seeds.to_str().unwrap(),
            "-q",
            "--record",
            recordings.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    std::fs::write(
        dir.path().join("secret.jsonl"),
        "{\"not\": \"the eval's\"}\n",
    )
    .unwrap();
    let lab = Lab::start(&[
        "--config",
        "builtin",
        "--eval",
        recordings.to_str().unwrap(),
    ]);
    let (status, body) = lab.ours("GET", "/api/eval", "");
    assert_eq!(status, 200, "{body}");
    let report = json_of(&body);
    assert_eq!(report["suite"], "seeds");
    assert_eq!(report["tasks"].as_array().unwrap().len(), 11);
    let (status, body) = lab.ours("GET", "/api/eval/recordings/t-30002-draft--baseline--1", "");
    assert_eq!(status, 200);
    let first: Value =
        serde_json::from_str(body.lines().next().unwrap_or("")).unwrap_or(Value::Null);
    assert!(first.get("direction").is_some(), "{body}");
    for stem in [
        "..%2Fsecret",
        "report",
        "%2Fetc%2Fpasswd",
        "t-30002-draft--baseline--9",
    ] {
        let (status, body) = lab.ours("GET", &format!("/api/eval/recordings/{stem}"), "");
        assert_eq!(status, 404, "{stem}: {body}");
    }
    // Without the token, nothing.
    let (status, _) = lab.request("GET", "/api/eval", &[("Host", lab.host())], "");
    assert_eq!(status, 403);
    // A folder without a report is refused at start, with what to run.
    let ran = common::run(
        &[
            "lab",
            "--port",
            "0",
            "--config",
            "builtin",
            "--eval",
            dir.path().to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(ran.status, 2, "{}", ran.stderr);
    assert!(
        ran.stderr
            .contains("holds no eval report: write one with gatehouse eval SUITE --record"),
        "{}",
        ran.stderr
    );
}
