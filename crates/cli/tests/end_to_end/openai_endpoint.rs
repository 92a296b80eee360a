//! `--model openai:MODEL` end to end: the real binary, the real support server, and a fake
//! OpenAI-compatible endpoint on 127.0.0.1 that plays the T-30002 flow from a script and
//! records every request it receives.

use crate::common;

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{TcpListener, TcpStream},
    sync::{Arc, Mutex},
    thread,
};

use common::*;
use serde_json::{Value, json};

/// One request the fake endpoint received.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) authorization: Option<String>,
    pub(crate) body: Value,
}

/// A minimal HTTP/1.1 server: one request per connection. `GET …/models` lists the model;
/// each `POST …/chat/completions` takes the next scripted answer.
pub(crate) struct Fake {
    pub(crate) base: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Fake {
    pub(crate) fn start(script: Vec<Value>) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}/v1", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let script = Arc::new(Mutex::new(script.into_iter()));
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (log, script) = (log.clone(), script.clone());
                thread::spawn(move || serve(stream, &log, &script));
            }
        });
        Fake { base, seen }
    }

    /// `gatehouse ask QUESTION --config CONFIG --model MODEL --json EXTRA…` against this
    /// endpoint, which must succeed.
    pub(crate) fn ask(&self, question: &str, config: &str, model: &str, extra: &[&str]) -> Ran {
        let mut args = vec![
            "ask", question, "--config", config, "--model", model, "--json",
        ];
        args.extend_from_slice(extra);
        let ran = run(&args, &[("OPENAI_BASE_URL", &self.base)]);
        assert_eq!(ran.status, 0, "{}", ran.stderr);
        ran
    }

    /// The bodies of the chat requests received, in order.
    pub(crate) fn chat_bodies(&self) -> Vec<Value> {
        self.chat_requests().into_iter().map(|r| r.body).collect()
    }

    pub(crate) fn chat_requests(&self) -> Vec<Seen> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.path.ends_with("/chat/completions"))
            .cloned()
            .collect()
    }
}

fn serve(stream: TcpStream, log: &Mutex<Vec<Seen>>, script: &Mutex<std::vec::IntoIter<Value>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_owned();
    let path = parts.next().unwrap_or_default().to_owned();
    let (mut length, mut authorization) = (0, None);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap_or(0),
                "authorization" => authorization = Some(value.trim().to_owned()),
                _ => {}
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    let (status, reply) = if method == "GET" && path.ends_with("/models") {
        (
            "200 OK",
            json!({"object": "list", "data": [{"id": "gpt-oss-120b"}]}),
        )
    } else if method == "POST" && path.ends_with("/chat/completions") {
        match script.lock().unwrap().next() {
            Some(reply) => ("200 OK", reply),
            None => (
                "500 Internal Server Error",
                json!({"error": {"message": "the script is over"}}),
            ),
        }
    } else {
        (
            "404 Not Found",
            json!({"error": {"message": "no such path"}}),
        )
    };
    log.lock().unwrap().push(Seen {
        method,
        path,
        authorization,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    });
    let reply = reply.to_string();
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{reply}",
        reply.len()
    );
    let _ = stream.flush();
}

/// A chat-completions answer calling one tool.
pub(crate) fn tool_call(id: &str, name: &str, arguments: Value, tokens: (u64, u64)) -> Value {
    json!({
        "id": format!("chatcmpl-{id}"),
        "object": "chat.completion",
        "model": "gpt-oss-120b",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant",
            "content": null,
            "reasoning_content": "I should look this up.",
            "tool_calls": [{"id": id, "type": "function",
                "function": {"name": name, "arguments": arguments.to_string()}}],
        }}],
        "usage": {"prompt_tokens": tokens.0, "completion_tokens": tokens.1,
                  "total_tokens": tokens.0 + tokens.1},
    })
}

const ANSWER: &str = "Hi Hugo, we are sorry you were charged twice for order LK-182074. \
The second charge will be refunded to your card. \
(Policy used: Refunds and payments, policy://larkfield/refunds-and-payments)";

#[test]
fn an_openai_compatible_endpoint_drives_the_t30002_flow() {
    let fake = Fake::start(vec![
        tool_call(
            "call_ticket_1",
            "support__get_ticket",
            json!({"ticket_id": "T-30002"}),
            (1000, 50),
        ),
        tool_call(
            "call_search_2",
            "support__search_knowledge",
            json!({"query": "Charged twice for order LK-182074"}),
            (1400, 60),
        ),
        json!({
            "id": "chatcmpl-3",
            "object": "chat.completion",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {
                "role": "assistant",
                "content": ANSWER,
                "reasoning_content": "Now I can draft the reply.",
            }}],
            "usage": {"prompt_tokens": 2000, "completion_tokens": 90, "total_tokens": 2090},
        }),
    ]);
    let key = "sk-e2e-not-a-real-key";
    let ran = run(
        &[
            "ask",
            "Draft a reply to ticket T-30002",
            "--model",
            "openai:gpt-oss-120b",
            "--json",
        ],
        &[("OPENAI_BASE_URL", &fake.base), ("OPENAI_API_KEY", key)],
    );
    assert_eq!(ran.status, 0, "{}", ran.stderr);
    assert_eq!(ran.answer(), ANSWER);
    assert_eq!(
        ran.json()["usage"],
        json!({"prompt_tokens": 4400, "completion_tokens": 200, "total_tokens": 4600,
               "model_calls": 3})
    );
    let steps = ran.step_texts();
    let wants: Vec<&String> = steps.iter().filter(|s| s.starts_with("model: ")).collect();
    assert_eq!(
        wants,
        [
            "model: wants support__get_ticket",
            "model: wants support__search_knowledge",
            "model: final answer",
        ],
        "{steps:#?}"
    );
    assert!(!ran.stdout.contains(key) && !ran.stderr.contains(key));

    let requests = fake.chat_requests();
    assert_eq!(requests.len(), 3, "{requests:#?}");
    for r in &requests {
        assert_eq!(r.method, "POST");
        assert_eq!(r.path, "/v1/chat/completions");
        assert_eq!(
            r.authorization.as_deref(),
            Some("Bearer sk-e2e-not-a-real-key")
        );
        assert_eq!(r.body["model"], "gpt-oss-120b");
        assert_eq!(r.body["tool_choice"], "auto");
        let tools: Vec<&str> = r.body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        assert!(
            tools.contains(&"support__get_ticket") && tools.contains(&"support__search_knowledge"),
            "{tools:?}"
        );
    }
    let first = requests[0].body["messages"].as_array().unwrap();
    assert_eq!(first.len(), 2);
    assert_eq!(first[0]["role"], "system");
    assert_eq!(
        first[1],
        json!({"role": "user", "content": "Draft a reply to ticket T-30002"})
    );

    // The third request holds the whole turn: both calls, and each result paired by id.
    let third = requests[2].body["messages"].as_array().unwrap();
    let roles: Vec<&str> = third.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "assistant", "tool"]
    );
    assert_eq!(third[2]["tool_calls"][0]["id"], "call_ticket_1");
    assert_eq!(third[4]["tool_calls"][0]["id"], "call_search_2");
    let tool_messages: Vec<&Value> = third.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(tool_messages.len(), 2);
    assert_eq!(tool_messages[0]["tool_call_id"], "call_ticket_1");
    assert_eq!(tool_messages[1]["tool_call_id"], "call_search_2");
    // The results are the real server's: the ticket, then the refunds policy.
    let ticket = tool_messages[0]["content"].as_str().unwrap();
    assert!(ticket.contains("Hugo"), "{ticket}");
    let search = tool_messages[1]["content"].as_str().unwrap();
    assert!(
        search.contains("policy://larkfield/refunds-and-payments"),
        "{search}"
    );
    // Reasoning never goes back as the assistant's words.
    assert!(third[2]["content"].is_null(), "{}", third[2]);
}
