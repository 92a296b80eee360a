//! The lab over plain HTTP: who may talk to it (token, `Host`, `Origin`), how it answers bad
//! requests, and `ask --record`. The real binary, real servers, raw requests.

use crate::common;

use std::{
    io::{Read, Write},
    net::TcpStream,
    time::Duration,
};

use common::process::Process;
use serde_json::Value;

/// A running `gatehouse lab` ([`common::serve::lab`]), stopped with Ctrl-C when dropped.
struct Lab {
    _process: Process,
    port: u16,
    token: String,
}

impl Lab {
    fn start(extra: &[&str]) -> Lab {
        let process = common::serve::lab(extra);
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
}

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
