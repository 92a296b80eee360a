//! A confirmed round sent again after the run, as someone who captured it would send it:
//! the last round of a call that carried a server's `requestState` and the person's
//! answers, byte for byte, straight to its server. A server whose confirmations are
//! single-use refuses it; one that opens a second ticket fails the check.
//!
//! The round goes around the policy on purpose: it is the suite's attacker, not the
//! model, and what it tests is the server's own defence, which the host cannot supply.

use std::{collections::BTreeMap, sync::Mutex};

use rmcp::model::{InputResponses, JsonObject};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::seen::WorldSeen;
use crate::{
    dispatch::{self, Answered, CallEnd, CallLimits, Relayed},
    host::Host,
    result::blocks::{content_text, error_text},
    trace::{Direction, WireEvent},
};

/// Most distinct tools whose last answered round is kept: a run that answers more
/// questions than this keeps the first tools' rounds, so a chatty run cannot fill memory.
pub const MAX_KEPT_ROUNDS: usize = 64;

/// The last round that carried a `requestState`, of each tool called in the run.
#[derive(Default)]
pub struct Rounds {
    last: Mutex<BTreeMap<(String, String), JsonObject>>,
}

impl Rounds {
    /// Keep `event` if it is a `tools/call` to a server carrying the server's state.
    pub fn see(&self, event: &WireEvent) {
        if event.direction != Direction::ToServer || event.method.as_deref() != Some("tools/call") {
            return;
        }
        let Some(Value::Object(params)) = event.message.get("params") else {
            return;
        };
        let (Some(Value::String(name)), Some(Value::String(_))) =
            (params.get("name"), params.get("requestState"))
        else {
            return;
        };
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let key = (event.server.clone(), name.clone());
        if last.len() < MAX_KEPT_ROUNDS || last.contains_key(&key) {
            last.insert(key, params.clone());
        }
    }

    fn get(&self, server: &str, name: &str) -> Option<JsonObject> {
        let last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        last.get(&(server.to_owned(), name.to_owned())).cloned()
    }
}

/// Send `tool`'s last answered round again, with `answers` in place of the recorded
/// ones when given; `Err` says why no round could be sent.
pub async fn resend(
    host: &Host,
    tool: &str,
    answers: Option<&Value>,
    rounds: &Rounds,
) -> Result<WorldSeen, String> {
    let (server, wire_name) = {
        let catalog = host.catalog();
        let found = catalog
            .get(tool)
            .ok_or_else(|| format!("{tool} is not in the catalog"))?;
        let server = found
            .origin
            .server()
            .ok_or_else(|| format!("{tool} is the host's own tool, with no server"))?;
        (server.to_owned(), found.tool.name.to_string())
    };
    let params = rounds.get(&server, &wire_name).ok_or_else(|| {
        format!("the run sent no round of {tool} that carried the server's requestState")
    })?;
    let conn = host
        .connection(&server)
        .ok_or_else(|| format!("{server} is not connected"))?;
    let arguments = match params.get("arguments") {
        Some(Value::Object(a)) => a.clone(),
        _ => JsonObject::new(),
    };
    let responses: InputResponses = match answers.or(params.get("inputResponses")) {
        Some(v) => serde_json::from_value(v.clone())
            .map_err(|e| format!("the round's inputResponses: {e}"))?,
        None => InputResponses::new(),
    };
    let state = params
        .get("requestState")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let call = dispatch::Call {
        conn,
        wire_name: &wire_name,
        arguments,
        meta: None,
        relay: None,
    };
    let limits = CallLimits::of(host.settings());
    let answered = Some(Answered { responses, state });
    let stop = CancellationToken::new();
    let relayed = dispatch::call_tool_round(call, answered, limits, host.trace(), &stop).await;
    Ok(seen(relayed))
}

/// What the server made of the round sent again.
fn seen(relayed: Relayed) -> WorldSeen {
    let (is_error, text) = match relayed {
        Relayed::Ended(done) => match done.end {
            CallEnd::Result(r) if r.is_error == Some(true) => (true, error_text(&r)),
            CallEnd::Result(r) => (false, content_text(&r.content)),
            CallEnd::ProtocolError(e) => (true, format!("error {}: {}", e.code.0, e.message)),
            CallEnd::TimedOut(d) => (true, format!("timed out after {} ms", d.as_millis())),
            CallEnd::Failed(why) => (true, why),
            CallEnd::Stopped => (true, "stopped".into()),
            CallEnd::Background(_) => (false, "it went on as a task".into()),
        },
        Relayed::Asks(_) => (false, "the server asked its questions again".into()),
        Relayed::Task(_) => (false, "the server ran it as a task".into()),
    };
    WorldSeen {
        is_error,
        text,
        not_sent: None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn round(server: &str, tool: &str, state: Option<&str>) -> WireEvent {
        let mut params = json!({"name": tool, "arguments": {}});
        if let Some(s) = state {
            params["requestState"] = json!(s);
        }
        WireEvent::new(
            server,
            Direction::ToServer,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}),
        )
    }

    #[test]
    fn only_rounds_that_carry_a_state_are_kept_the_last_of_each_tool() {
        let rounds = Rounds::default();
        rounds.see(&round("tickets", "open_ticket", None));
        assert!(rounds.get("tickets", "open_ticket").is_none());
        rounds.see(&round("tickets", "open_ticket", Some("a")));
        rounds.see(&round("tickets", "open_ticket", Some("b")));
        let kept = rounds.get("tickets", "open_ticket").unwrap();
        assert_eq!(kept["requestState"], "b");
        // The server's answers and questions are not the client's rounds.
        let mut back = round("tickets", "open_ticket", Some("c"));
        back.direction = Direction::FromServer;
        rounds.see(&back);
        assert_eq!(
            rounds.get("tickets", "open_ticket").unwrap()["requestState"],
            "b"
        );
    }

    #[test]
    fn a_run_of_many_tools_keeps_at_most_the_bound_and_still_updates_those_kept() {
        let rounds = Rounds::default();
        for i in 0..MAX_KEPT_ROUNDS * 3 {
            rounds.see(&round("s", &format!("t{i}"), Some("x")));
        }
        assert_eq!(rounds.last.lock().unwrap().len(), MAX_KEPT_ROUNDS);
        assert!(rounds.get("s", &format!("t{MAX_KEPT_ROUNDS}")).is_none());
        rounds.see(&round("s", "t0", Some("y")));
        assert_eq!(rounds.get("s", "t0").unwrap()["requestState"], "y");
    }
}
