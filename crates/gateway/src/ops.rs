//! What a team's operations read of a gateway: whether it is ready to take calls (its
//! store answers, every server of its file is running) and its metrics in Prometheus's
//! text format: decisions by verdict, the time a `tools/call` takes, calls in flight,
//! ledger lines waiting to be written, servers up.
//!
//! The metrics name no caller and no argument: a label's values are a verdict, who let a
//! call through, an answer's kind and the servers file's names, so a scrape tells nothing
//! about who asked what, and their number is bounded by the file.

pub mod routes;

use prometheus_client::{
    encoding::{EncodeLabelSet, text::encode},
    metrics::{
        counter::Counter,
        family::Family,
        gauge::Gauge,
        histogram::{Histogram, exponential_buckets},
    },
    registry::Registry,
};
use serde_json::{Value, json};

use gatehouse::{
    gate::Admission,
    trace::{ApprovedBy, Outcome},
};

/// The smallest bucket of the call-time histogram, in seconds; each next is twice as big.
const FIRST_BUCKET_S: f64 = 0.000_5;
/// How many buckets: from 0.5 ms to about 33 s, past the default tool time limit.
const BUCKETS: u16 = 17;

/// Why readiness says the store is not ready (the reason itself goes to no one unsigned).
const STORE_UNAVAILABLE: &str = "the store is unavailable";
/// Why readiness says a server is not ready: down, or not started yet.
const SERVER_DOWN: &str = "down";

/// A decision as the metrics count it.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Decision {
    /// `allowed`, `asked` (the person asked, the answer in a later round), or how a
    /// call that was not sent ended (`refused`, `declined`, `unknown_tool`, …).
    verdict: &'static str,
    /// Who let an allowed call through (`rule`, `remembered`, `client`, …); who is asked
    /// for an asked one (`client`, `page`); empty otherwise.
    by: &'static str,
}

/// What a `tools/call` answered, as the call-time histogram labels it.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Answer {
    answer: &'static str,
}

/// A server's name, as its `up` gauge labels it.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Server {
    server: String,
}

/// Where an asked call's person answers.
#[derive(Debug, Clone, Copy)]
pub(crate) enum AskedIn {
    /// Their own client's form (an `input_required` round).
    Client,
    /// The approval page.
    Page,
}

/// What a `tools/call` came to, for the call-time histogram.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Answered {
    /// A result (the tool's error included: the call was decided and answered).
    Result,
    /// A question for the person, answered in a later round.
    InputRequired,
    /// A task of the gateway's, polled for its end.
    Task,
    /// A JSON-RPC error.
    Error,
}

/// The gateway's metrics. Cheap to update from any task: counters and gauges are atomics.
pub struct Meter {
    registry: Registry,
    decisions: Family<Decision, Counter>,
    call_seconds: Family<Answer, Histogram>,
    in_flight: Gauge,
    ledger_waiting: Gauge,
    servers_up: Family<Server, Gauge>,
}

impl Default for Meter {
    fn default() -> Meter {
        let mut registry = Registry::with_prefix("gatehouse_gateway");
        let decisions = Family::<Decision, Counter>::default();
        registry.register(
            "decisions",
            "Calls decided, by verdict and by whom",
            decisions.clone(),
        );
        let call_seconds = Family::<Answer, Histogram>::new_with_constructor(
            (|| Histogram::new(exponential_buckets(FIRST_BUCKET_S, 2.0, BUCKETS)))
                as fn() -> Histogram,
        );
        registry.register(
            "call_duration_seconds",
            "Time from a tools/call's arrival to its answer, by what it answered",
            call_seconds.clone(),
        );
        let in_flight = Gauge::default();
        registry.register(
            "calls_in_flight",
            "tools/call requests being answered now",
            in_flight.clone(),
        );
        let ledger_waiting = Gauge::default();
        registry.register(
            "ledger_waiting",
            "Ledger lines waiting to be written (a call is sent only once its line is)",
            ledger_waiting.clone(),
        );
        let servers_up = Family::<Server, Gauge>::default();
        registry.register(
            "server_up",
            "1 while a server of the servers file is running, else 0",
            servers_up.clone(),
        );
        Meter {
            registry,
            decisions,
            call_seconds,
            in_flight,
            ledger_waiting,
            servers_up,
        }
    }
}

impl Meter {
    /// Count an admission: a call let through, or one that is not sent; its verdict.
    pub(crate) fn admitted(&self, admission: &Admission) -> &'static str {
        let label = match admission {
            Admission::Send { approved_by, .. } => Decision {
                verdict: "allowed",
                by: approver(*approved_by),
            },
            Admission::Refused { outcome, .. } => Decision {
                verdict: ended(*outcome),
                by: "",
            },
        };
        self.decisions.get_or_create(&label).inc();
        label.verdict
    }

    /// Count a call whose person is asked, in their client or on the page.
    pub(crate) fn asked(&self, asked_in: AskedIn) {
        let by = match asked_in {
            AskedIn::Client => "client",
            AskedIn::Page => "page",
        };
        let label = Decision {
            verdict: "asked",
            by,
        };
        self.decisions.get_or_create(&label).inc();
    }

    /// A `tools/call` begins: in flight until the guard is dropped or [`InFlight::done`].
    pub(crate) fn call(&self) -> InFlight<'_> {
        self.in_flight.inc();
        InFlight {
            meter: self,
            started: std::time::Instant::now(),
            done: false,
        }
    }

    /// The metrics in Prometheus's text format, with the gauges read now: `waiting` ledger
    /// lines, and each server's state.
    pub(crate) fn text(&self, waiting: usize, servers: &[(String, bool)]) -> String {
        self.ledger_waiting
            .set(i64::try_from(waiting).unwrap_or(i64::MAX));
        for (name, up) in servers {
            let label = Server {
                server: name.clone(),
            };
            self.servers_up.get_or_create(&label).set(i64::from(*up));
        }
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}

/// A `tools/call` being answered.
pub(crate) struct InFlight<'m> {
    meter: &'m Meter,
    started: std::time::Instant,
    done: bool,
}

impl InFlight<'_> {
    /// The call is answered: its time goes into the histogram under its answer's kind.
    pub(crate) fn done(mut self, answered: Answered) {
        let answer = match answered {
            Answered::Result => "result",
            Answered::InputRequired => "input_required",
            Answered::Task => "task",
            Answered::Error => "error",
        };
        self.meter
            .call_seconds
            .get_or_create(&Answer { answer })
            .observe(self.started.elapsed().as_secs_f64());
        self.done = true;
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        // Dropped unanswered: the client went away, and the request with it.
        if !self.done {
            self.meter
                .call_seconds
                .get_or_create(&Answer { answer: "dropped" })
                .observe(self.started.elapsed().as_secs_f64());
        }
        self.meter.in_flight.dec();
    }
}

fn approver(by: ApprovedBy) -> &'static str {
    match by {
        ApprovedBy::Person => "person",
        ApprovedBy::Option => "option",
        ApprovedBy::Client => "client",
        ApprovedBy::Rule => "rule",
        ApprovedBy::AllowList => "allow_list",
        ApprovedBy::Remembered => "remembered",
        ApprovedBy::Hook => "hook",
        ApprovedBy::Host => "host",
    }
}

fn ended(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Ok => "ok",
        Outcome::ToolError => "tool_error",
        Outcome::Error => "error",
        Outcome::UnknownTool => "unknown_tool",
        Outcome::Refused => "refused",
        Outcome::Declined => "declined",
        Outcome::Timeout => "timeout",
        Outcome::Stopped => "stopped",
        Outcome::Background => "background",
    }
}

/// Whether a replica can take calls: its store answers and every server of its file runs.
#[derive(Debug)]
pub struct Readiness {
    /// The store: `Err` with why it did not answer.
    pub store: Result<(), String>,
    /// Each server of the file, in order: `Err` with why it is not running.
    pub servers: Vec<(String, Result<(), String>)>,
}

impl Readiness {
    /// Ready to take calls?
    pub fn ready(&self) -> bool {
        self.store.is_ok() && self.servers.iter().all(|(_, s)| s.is_ok())
    }

    /// As the readiness endpoint answers it.
    pub fn json(&self) -> Value {
        let state = |r: &Result<(), String>| match r {
            Ok(()) => json!({"ok": true}),
            Err(why) => json!({"ok": false, "why": why}),
        };
        let servers: serde_json::Map<String, Value> = self
            .servers
            .iter()
            .map(|(name, s)| (name.clone(), state(s)))
            .collect();
        json!({"ready": self.ready(), "store": state(&self.store), "servers": servers})
    }
}

impl super::Gateway {
    /// Can this replica take calls now: does its store answer (within its time limit),
    /// and is every server of the file running?
    ///
    /// Its reasons are fixed words, never the store's or a server's own text (a server's
    /// last words on stderr, a database's error): the endpoint answers without a token.
    pub async fn readiness(&self) -> Readiness {
        let store = self.inner.store.ping().await;
        let servers = self.host().server_states().into_iter();
        Readiness {
            store: store.map_err(|_| STORE_UNAVAILABLE.to_owned()),
            servers: servers
                .map(|(name, state)| (name, state.map_err(|_| SERVER_DOWN.to_owned())))
                .collect(),
        }
    }

    /// The metrics, in Prometheus's text format, with the gauges read now.
    pub fn metrics(&self) -> String {
        let servers: Vec<(String, bool)> = (self.host().server_states().into_iter())
            .map(|(name, state)| (name, state.is_ok()))
            .collect();
        (self.inner.meter).text(self.inner.store.ledger_waiting(), &servers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unanswered_call_leaves_the_in_flight_count_and_is_timed_as_dropped() {
        let meter = Meter::default();
        let call = meter.call();
        assert_eq!(meter.in_flight.get(), 1);
        drop(call);
        assert_eq!(meter.in_flight.get(), 0);
        meter.call().done(Answered::Result);
        let text = meter.text(0, &[]);
        assert!(
            text.contains("gatehouse_gateway_call_duration_seconds_count{answer=\"dropped\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("gatehouse_gateway_call_duration_seconds_count{answer=\"result\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("gatehouse_gateway_calls_in_flight 0"),
            "{text}"
        );
    }

    #[test]
    fn decisions_are_counted_by_verdict_and_by_whom_and_gauges_read_at_scrape() {
        let meter = Meter::default();
        meter.asked(AskedIn::Client);
        meter.asked(AskedIn::Client);
        meter.asked(AskedIn::Page);
        meter.admitted(&Admission::Refused {
            text: "no".into(),
            outcome: Outcome::Refused,
            server: "support".into(),
        });
        let servers = [("support".to_owned(), true), ("cmdb".to_owned(), false)];
        let text = meter.text(7, &servers);
        for line in [
            "gatehouse_gateway_decisions_total{verdict=\"asked\",by=\"client\"} 2",
            "gatehouse_gateway_decisions_total{verdict=\"asked\",by=\"page\"} 1",
            "gatehouse_gateway_decisions_total{verdict=\"refused\",by=\"\"} 1",
            "gatehouse_gateway_ledger_waiting 7",
            "gatehouse_gateway_server_up{server=\"support\"} 1",
            "gatehouse_gateway_server_up{server=\"cmdb\"} 0",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in:\n{text}");
        }
    }

    #[test]
    fn ready_only_when_the_store_and_every_server_are() {
        let mut r = Readiness {
            store: Ok(()),
            servers: vec![("support".into(), Ok(()))],
        };
        assert!(r.ready());
        r.servers
            .push(("cmdb".into(), Err("the server is down".into())));
        assert!(!r.ready());
        assert_eq!(r.json()["servers"]["cmdb"]["why"], "the server is down");
        r.servers.pop();
        r.store = Err("the state store did not answer".into());
        assert!(!r.ready());
        assert_eq!(r.json()["ready"], false);
    }
}
