//! What the decision path's unit tests are made of, here and in the gateway's crate: servers
//! in this process with tools as closures ([`server`]), a scripted person who writes down
//! what they were shown ([`person`]), a keeper in memory whose appends can fail
//! ([`keeper`]), and a host started on them ([`World`]). Everything runs on tokio's clock,
//! so a test on a paused clock (`#[tokio::test(start_paused = true)]`) proves a time limit,
//! a backoff or an expiry without waiting for it.
//!
//! Only with the `testing` feature (and in this crate's own tests): never in a release.

pub mod keeper;
pub mod model;
pub mod person;
pub mod server;

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

pub use crate::config::name::server_name;
pub use keeper::InMemory;
pub use model::Plays;
pub use person::{Scripted, Shown};
pub use server::{Called, Received, Server, Serving, text};

use crate::{
    config::{Config, Identity},
    connect::{self, in_process::Opener},
    gate::Keeper,
    host::{Connector, Host},
    person::Person,
    trace::{Observer, Step, ToolEvent, Trace},
};

/// How long a test on a paused clock waits for anything before it fails: the clock jumps
/// when every task waits, so a wait that would never end fails at once instead of hanging.
pub const PAUSED_LIMIT: std::time::Duration = std::time::Duration::from_secs(24 * 3_600);

/// `work`, or a failure naming `what` once [`PAUSED_LIMIT`] has passed on the clock.
pub async fn within<F: Future>(what: &str, work: F) -> F::Output {
    match tokio::time::timeout(PAUSED_LIMIT, work).await {
        Ok(out) => out,
        Err(_) => panic!("{what}: still waiting after {PAUSED_LIMIT:?} on the test's clock"),
    }
}

/// A host on in-process servers: the servers file it reads (each server an entry whose
/// command is never run), the servers, the person and the keeper, and what it recorded.
pub struct World {
    /// The host.
    pub host: Host,
    /// The person.
    pub person: Arc<Scripted>,
    /// Its keeper (approvals and the ledger).
    pub keeper: Arc<InMemory>,
    /// What the host recorded: its steps and `host.tool_call` records.
    pub seen: Arc<Seen>,
}

impl World {
    /// Start a host on `servers` (each name with the server it is), with the settings of
    /// `gatehouse` (the servers file's `"gatehouse"` object; each server's own entry
    /// holds what `entries` gives it besides its command), asking `person`.
    pub async fn start(
        servers: Vec<(&str, Server)>,
        gatehouse: Value,
        entries: Value,
        person: Scripted,
    ) -> (World, Vec<Serving>) {
        let person = Arc::new(person);
        let keeper = Arc::new(InMemory::new());
        let (as_person, as_keeper): (Arc<dyn Person>, Arc<dyn Keeper>) =
            (person.clone(), keeper.clone());
        let (host, seen, serving) =
            host_on(servers, gatehouse, entries, as_person, as_keeper).await;
        let world = World {
            host,
            person,
            keeper,
            seen,
        };
        (world, serving)
    }
}

/// A host on `servers`, as [`World::start`] starts it, with any person and keeper (a
/// gateway's: nobody, and its store): the host, what it recorded, and the servers.
pub async fn host_on(
    servers: Vec<(&str, Server)>,
    gatehouse: Value,
    entries: Value,
    person: Arc<dyn Person>,
    keeper: Arc<dyn Keeper>,
) -> (Host, Arc<Seen>, Vec<Serving>) {
    let mut file = serde_json::Map::new();
    let mut opened: Vec<(String, Opener)> = Vec::new();
    let mut serving = Vec::new();
    for (name, server) in servers {
        let mut entry = json!({"command": "in-process"});
        if let (Some(extra), Some(entry)) = (
            entries.get(name).and_then(Value::as_object),
            entry.as_object_mut(),
        ) {
            entry.extend(extra.clone());
        }
        file.insert(name.to_owned(), entry);
        let (running, opener) = server.serve();
        opened.push((name.to_owned(), opener));
        serving.push(running);
    }
    let text = json!({"mcpServers": file, "gatehouse": gatehouse}).to_string();
    let config = Config::parse(&text, "the test's servers", &Identity::default())
        .unwrap_or_else(|e| panic!("the test's servers file: {e}"));
    let seen = Arc::new(Seen::default());
    let trace = Trace::new(seen.clone());
    let connector: Box<Connector> = Box::new(move |spec, person, trace, limits| {
        let open = opened
            .iter()
            .find(|(name, _)| spec.name == *name)
            .map(|(_, open)| open.clone());
        let (spec, trace) = (spec.clone(), trace.clone());
        Box::pin(async move {
            let open = open.expect("every server of the test's file is served");
            connect::in_process::connect(&spec, person, &trace, limits, open).await
        })
    });
    let host = Host::start_connecting(&config, person, trace, keeper, &connector).await;
    (host, seen, serving)
}

/// A client of `handler` (any MCP server in this process: a gateway) as the host
/// connects to a server, named `name`, asking `person`.
pub async fn client_of<H>(
    name: &str,
    handler: H,
    person: Arc<dyn Person>,
) -> Result<crate::connect::Connection, crate::connect::ConnectError>
where
    H: rmcp::ServerHandler + Clone,
{
    let open: Opener = Arc::new(move || {
        let handler = handler.clone();
        Box::pin(async move {
            let (client_end, server_end) = tokio::io::duplex(server::PIPE_BYTES);
            tokio::spawn(async move {
                use rmcp::ServiceExt;
                if let Ok(running) = handler.serve(server_end).await {
                    let _ = running.waiting().await;
                }
            });
            Ok(client_end)
        })
    });
    let text = json!({"mcpServers": {name: {"command": "in-process"}}}).to_string();
    let config = Config::parse(&text, "the test's client", &Identity::default())
        .unwrap_or_else(|e| panic!("the test's client: {e}"));
    let limits = connect::Limits::from_settings(&config.settings);
    let trace = Trace::new(Arc::new(Seen::default()));
    connect::in_process::connect(&config.servers[0], person, &trace, limits, open).await
}

/// An observer that keeps every step's text and every `host.tool_call` record.
pub struct Seen {
    steps: Mutex<Vec<String>>,
    events: Mutex<Vec<ToolEvent>>,
    /// Steps recorded so far, for a test that waits for one.
    count: tokio::sync::watch::Sender<usize>,
}

impl Default for Seen {
    fn default() -> Self {
        Seen {
            steps: Mutex::default(),
            events: Mutex::default(),
            count: tokio::sync::watch::channel(0).0,
        }
    }
}

impl Seen {
    /// Every step's text so far.
    pub fn steps(&self) -> Vec<String> {
        self.steps.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Every `host.tool_call` record so far.
    pub fn tool_events(&self) -> Vec<ToolEvent> {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Is there a step whose text holds `words`?
    pub fn said(&self, words: &str) -> bool {
        self.steps().iter().any(|s| s.contains(words))
    }

    /// Wait until `n` steps whose text holds `words` have been recorded.
    pub async fn until(&self, words: &str, n: usize) {
        let mut count = self.count.subscribe();
        let _ = count
            .wait_for(|_| {
                let steps = self.steps.lock().unwrap_or_else(|e| e.into_inner());
                steps.iter().filter(|s| s.contains(words)).count() >= n
            })
            .await;
    }
}

impl Observer for Seen {
    fn step(&self, step: &Step) {
        self.steps
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(step.text.clone());
        self.count.send_modify(|n| *n += 1);
    }

    fn server_stderr(&self, _server: &str, _line: &str) {}

    fn tool_event(&self, event: &ToolEvent) {
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        events.push(event.clone());
    }
}
