//! The host: one connection per server, the live catalog, the settings, the person and the
//! session's trace. It starts every server at once (or one, for a call that names it), makes a turn for each question, and
//! closes everything at the end. What belongs to one question (its trace id, its calls,
//! the links its results gave) lives in the turn, not here.

use std::{
    path::{Path, PathBuf},
    sync::{
        Arc, RwLockReadGuard,
        atomic::{AtomicU64, Ordering},
    },
};

mod report;

use futures::future::BoxFuture;
use report::{register_secrets, report_catalog, report_discovery, report_unmatched};
use serde_json::json;

use crate::{
    approvals::ProjectFile,
    catalog::{self, Catalog, Listing, Live},
    config::{Config, ServerSpec, Settings, Transport},
    connect::{
        self, ConnectError, Connection,
        late::{self, Late},
    },
    dispatch::Stopper,
    flow::Flows,
    gate::{Gate, Keeper},
    person::Person,
    policy::{self, names},
    tasks::{Records, default_path},
    trace::{Trace, Who, random_hex},
};

/// The host of one session.
pub struct Host {
    connections: Vec<Connection>,
    catalog: Live,
    settings: Settings,
    person: Arc<dyn Person>,
    trace: Trace,
    /// One id for the host's whole session (a chat), sent to every server.
    session_id: String,
    /// Where binary blocks (images, audio, blobs) are saved for the person.
    save_dir: PathBuf,
    /// Stops the call in flight (Ctrl-C, the lab's Stop button).
    stopper: Stopper,
    /// Questions begun so far; lists are re-read by age only after the first.
    turns: AtomicU64,
    /// The records of calls run as tasks (`tasksFile`), opened on first use.
    tasks: Records,
    /// The person's policy at work: approvals remembered, the ledger, the hooks.
    gate: Gate,
    /// A gateway's stdio servers that failed their first start, tried again until they
    /// start (`connect::late`), each with its task.
    late: Vec<(Arc<Late>, tokio::task::JoinHandle<()>)>,
    /// Servers of the file this start left out ([`Host::start_only`]): their tools are
    /// unknown, so no name of theirs is judged to name nothing.
    left_out: Vec<String>,
    /// What entered the model's context in this session, labelled ([`crate::flow`]).
    flows: Flows,
}

impl Host {
    /// Start every configured server at once, discover their tools, and report every
    /// server that could not be used without stopping the others.
    ///
    /// Approvals remembered in a project are those of the project of the current folder
    /// ([`ProjectFile::find`]); [`Host::start_in`] names another.
    pub async fn start(config: &Config, person: Arc<dyn Person>, trace: Trace) -> Host {
        let project = std::env::current_dir()
            .ok()
            .map(|dir| ProjectFile::find(&dir, &crate::config::state_dir()));
        Host::start_in(config, person, trace, project).await
    }

    /// As [`Host::start`], with approvals remembered in `project` (none with `None`).
    pub async fn start_in(
        config: &Config,
        person: Arc<dyn Person>,
        trace: Trace,
        project: Option<ProjectFile>,
    ) -> Host {
        let gate = |trace: &Trace| Gate::new(&config.settings, project, trace);
        Host::start_gated(config, person, trace, gate, Started::All, &by_config()).await
    }

    /// As [`Host::start`], starting only server `name` of `config` (a call that names its
    /// server): the policy, hooks, ledger, person and bounds are the whole file's, the
    /// other servers' secrets are still kept out of every record, and nothing about the
    /// servers left out is judged (a rule naming their tools is not a rule naming nothing).
    pub async fn start_only(
        config: &Config,
        name: &str,
        person: Arc<dyn Person>,
        trace: Trace,
    ) -> Host {
        register_secrets(config, trace.secrets());
        let project = std::env::current_dir()
            .ok()
            .map(|dir| ProjectFile::find(&dir, &crate::config::state_dir()));
        let gate = |trace: &Trace| Gate::new(&config.settings, project, trace);
        let only = config.narrowed_to(name);
        let started = Started::Only(config.servers_other_than(name));
        Host::start_gated(&only, person, trace, gate, started, &by_config()).await
    }

    /// As [`Host::start`], with approvals and the ledger kept by `keeper` (a gateway's
    /// store, shared by its replicas). A gateway runs for long: a stdio server that fails
    /// its first start is tried again with the restart backoff until it starts.
    pub async fn start_keeping(
        config: &Config,
        person: Arc<dyn Person>,
        trace: Trace,
        keeper: Arc<dyn Keeper>,
    ) -> Host {
        let gate = |_: &Trace| Gate::with_keeper(&config.settings, keeper);
        let started = Started::AllRetrying;
        Host::start_gated(config, person, trace, gate, started, &by_config()).await
    }

    /// As [`Host::start_keeping`], each server reached by `connector` instead of as the
    /// servers file says (a test's servers in this process: [`crate::testing`]).
    #[cfg(any(test, feature = "testing"))]
    pub async fn start_connecting(
        config: &Config,
        person: Arc<dyn Person>,
        trace: Trace,
        keeper: Arc<dyn Keeper>,
        connector: &Connector,
    ) -> Host {
        let gate = |_: &Trace| Gate::with_keeper(&config.settings, keeper);
        Host::start_gated(config, person, trace, gate, Started::All, connector).await
    }

    async fn start_gated(
        config: &Config,
        person: Arc<dyn Person>,
        trace: Trace,
        gate: impl FnOnce(&Trace) -> Gate,
        started: Started,
        connector: &Connector,
    ) -> Host {
        let retry_first_starts = matches!(started, Started::AllRetrying);
        let left_out = match started {
            Started::Only(others) => others,
            Started::All | Started::AllRetrying => Vec::new(),
        };
        crate::schema::prepare();
        for warning in &config.warnings {
            trace.add(Who::Host, format!("warning: {warning}"), json!({}));
        }
        for (name, reason) in &config.broken {
            trace.add(
                Who::Host,
                format!("server {name} is not used: {reason}"),
                json!({"server": name, "error": reason}),
            );
        }
        register_secrets(config, trace.secrets());
        let (connections, listings, failed) = connect_all(config, &person, &trace, connector).await;
        let unknown_servers: Vec<String> = failed
            .iter()
            .map(|(s, _)| s.name.to_string())
            .chain(left_out.iter().cloned())
            .collect();
        let limits = connect::Limits::from_settings(&config.settings);
        let late = failed
            .into_iter()
            .filter(|(spec, _)| {
                retry_first_starts && matches!(spec.transport, Transport::Stdio { .. })
            })
            .map(|(spec, why)| {
                late::retry(spec.clone(), person.clone(), trace.clone(), limits, why)
            })
            .collect();
        let rules = config
            .servers
            .iter()
            .map(|s| (s.name.clone(), s.tools.clone()))
            .collect();
        let catalog = Live::start_with(listings, &connections, rules).await;
        report_catalog(&catalog.current(), &trace);
        report_unmatched(
            &config.settings,
            &catalog.current(),
            &unknown_servers,
            &trace,
        );
        let session_id = random_hex(16);
        let gate = gate(&trace);
        Host {
            flows: Flows::default(),
            gate,
            connections,
            catalog,
            save_dir: config
                .settings
                .save_dir
                .clone()
                .unwrap_or_else(|| std::env::temp_dir().join(format!("gatehouse-{session_id}"))),
            settings: config.settings.clone(),
            person,
            trace,
            session_id,
            stopper: Stopper::default(),
            turns: AtomicU64::new(0),
            late,
            left_out,
            tasks: Records::at(
                config
                    .settings
                    .tasks_file
                    .clone()
                    .unwrap_or_else(default_path),
            ),
        }
    }

    /// A handle that stops the call in flight, for signal handlers and user interfaces.
    pub fn stopper(&self) -> Stopper {
        self.stopper.clone()
    }

    /// Offer the model only these tools (`--tools`). Any other proposal, even one made
    /// directly through this library, is then refused as an unknown tool.
    pub fn offer_only(&self, names: &[String]) {
        let tools = self.catalog.current().names();
        let unknown = self.catalog.offer_only(names);
        let offered = names::Offered {
            tools: &tools,
            unknown_servers: &self.left_out,
        };
        for name in names::unmatched_offer(&unknown, &offered) {
            self.trace.add(
                Who::Host,
                format!("warning: {}", name.describe()),
                json!({"tool": name.name, "nearest": name.nearest}),
            );
        }
    }

    /// The session's id, the same in every request of every turn.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The catalog as it is now. Do not hold the guard across an `.await`.
    pub fn catalog(&self) -> RwLockReadGuard<'_, Catalog> {
        self.catalog.current()
    }

    /// Where binary blocks of results are saved for the person.
    pub fn save_dir(&self) -> &Path {
        &self.save_dir
    }

    /// The settings the host runs with.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The gate every proposal goes through: policy, hooks, the person, the ledger.
    pub fn gate(&self) -> &Gate {
        &self.gate
    }

    /// The session's trace.
    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    /// The next question's number in the session (from 1).
    pub(crate) fn next_turn(&self) -> u64 {
        self.turns.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Re-read the lists that changed (and, `by_age`, the stale ones); whether the catalog
    /// was rebuilt.
    pub async fn refresh_catalog(&self, by_age: bool) -> bool {
        // The tools the policy may run without asking: a change to one is asked about.
        let unasked: Vec<String> = self
            .catalog()
            .tools()
            .iter()
            .filter(|t| policy::may_run_unasked(&t.name, &self.settings))
            .map(|t| t.name.clone())
            .collect();
        self.catalog
            .refresh(
                &self.connections(),
                by_age,
                &unasked,
                self.settings.connect_timeout,
                &self.trace,
            )
            .await
    }

    /// The live catalog, for the gate that decides on a call.
    pub fn live(&self) -> &Live {
        &self.catalog
    }

    /// The records of calls run as tasks.
    pub fn tasks(&self) -> &Records {
        &self.tasks
    }

    /// Where a turn looks again at the tasks no model was told the end of.
    pub(crate) fn looking(&self) -> crate::tasks::Looking<'_> {
        crate::tasks::Looking {
            records: &self.tasks,
            connections: &self.connections,
            stopper: &self.stopper,
            person: self.person.as_ref(),
            trace: &self.trace,
        }
    }

    /// Is server `name` connected (started, and not left out of this start)?
    pub fn is_connected(&self, name: &str) -> bool {
        self.connection(name).is_some()
    }

    /// The connection to a server, by its name.
    pub fn connection(&self, server: &str) -> Option<&Connection> {
        self.connections().into_iter().find(|c| c.name == server)
    }

    /// Each server of the file and whether it runs now: those started at the start, in
    /// the file's order, then those that start late; `Err` says why one does not.
    pub fn server_states(&self) -> Vec<(String, Result<(), String>)> {
        let state = |why: Option<String>| why.map_or(Ok(()), Err);
        let started =
            (self.connections.iter()).map(|c| (c.name.to_string(), state(c.down_reason())));
        let late = self.late.iter().map(|(l, _)| {
            let why = match l.connection() {
                Some(c) => c.down_reason(),
                None => l.down_reason(),
            };
            (l.name().to_owned(), state(why))
        });
        started.chain(late).collect()
    }

    /// Every connection: those made at the start, in the servers file's order, then those
    /// of servers that started late.
    pub fn connections(&self) -> Vec<&Connection> {
        let late = self.late.iter().filter_map(|(l, _)| l.connection());
        self.connections.iter().chain(late).collect()
    }

    /// What entered the model's context in this session, labelled: where a proposal's
    /// arguments came from.
    pub fn flows(&self) -> &Flows {
        &self.flows
    }

    /// The person, for the gate's approvals.
    pub fn person(&self) -> &dyn Person {
        self.person.as_ref()
    }

    /// Close every connection while the host is still shared (a gateway's sessions may
    /// hold it past its end): the servers get the moment [`Host::shutdown`] gives them,
    /// and any request made after fails as on a closed connection.
    pub async fn close_servers(&self) {
        self.catalog.close().await;
        futures::future::join_all(self.late.iter().map(|(l, _)| l.close_shared())).await;
        futures::future::join_all(self.connections.iter().map(Connection::close_shared)).await;
    }

    /// Close every connection; servers get a moment to exit on their own.
    pub async fn shutdown(self) {
        self.catalog.close().await;
        let late = self.late.into_iter().map(|(l, task)| l.close(task));
        futures::future::join_all(late).await;
        futures::future::join_all(self.connections.into_iter().map(Connection::close)).await;
    }
}

/// Which of the file's servers a start starts.
enum Started {
    /// Every server.
    All,
    /// Every server, a stdio server that fails its first start tried again (a gateway).
    AllRetrying,
    /// Only the configuration given, these other servers of the file left out.
    Only(Vec<String>),
}

/// How a start reaches one server ([`connect::connect`] for the servers file's).
pub type Connector = dyn Fn(
        &ServerSpec,
        Arc<dyn Person>,
        &Trace,
        connect::Limits,
    ) -> BoxFuture<'static, Result<Connection, ConnectError>>
    + Send
    + Sync;

/// Each server reached as the servers file says.
fn by_config() -> Box<Connector> {
    Box::new(|spec, person, trace, limits| {
        let (spec, trace) = (spec.clone(), trace.clone());
        Box::pin(async move { connect::connect(&spec, person, &trace, limits).await })
    })
}

/// Start every server at once, each within the connect time limit, with its tool list.
/// Each is reported in the configuration's order as soon as it and those before it are
/// ready or have failed, while the others still start; what is returned is in that
/// order too. A server that cannot be used is left out (returned with the reason).
async fn connect_all<'c>(
    config: &'c Config,
    person: &Arc<dyn Person>,
    trace: &Trace,
    connector: &Connector,
) -> (Vec<Connection>, Vec<Listing>, Vec<(&'c ServerSpec, String)>) {
    use futures::stream::{FuturesUnordered, StreamExt};
    let timeout = config.settings.connect_timeout;
    let limits = connect::Limits::from_settings(&config.settings);
    let attempt = |spec: &'c ServerSpec| async move {
        let conn = connector(spec, person.clone(), trace, limits)
            .await
            .map_err(|e| Unavailable {
                fix: Some(crate::probe::connect_failure(spec, &e, &config.source).fix),
                text: e.to_string(),
            })?;
        // The person's time signing in (a server that asks only now) does not count.
        let listed = conn
            .person_time()
            .clone()
            .within(
                timeout,
                catalog::list_tools(&conn, catalog::live::MAX_LIST_PAGES),
            )
            .await;
        let tools = match listed {
            Err(_) => Err(format!(
                "server {}: tools/list got no answer within {:.1} s",
                spec.name,
                timeout.as_secs_f64()
            )),
            Ok(Err(e)) => Err(format!("server {}: {e}", spec.name)),
            Ok(Ok(tools)) => Ok(tools),
        }
        .map_err(|text| Unavailable { text, fix: None })?;
        Ok::<_, Unavailable>((conn, tools))
    };
    let mut pending: FuturesUnordered<_> = config
        .servers
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let attempt = attempt(spec);
            async move { (i, attempt.await) }
        })
        .collect();
    let mut outcomes: Vec<Option<Result<_, Unavailable>>> = Vec::new();
    outcomes.resize_with(config.servers.len(), || None);
    let mut reported = 0;
    while let Some((i, outcome)) = pending.next().await {
        outcomes[i] = Some(outcome);
        // In the file's order, each as soon as it and the ones before it are known: a
        // start's screen reads the same every time.
        while let Some(Some(outcome)) = outcomes.get(reported) {
            match outcome {
                Ok((conn, listing)) => report_discovery(conn, listing, trace),
                Err(why) => report_unavailable(&config.servers[reported], why, trace),
            }
            reported += 1;
        }
    }
    let mut connections = Vec::new();
    let mut listings = Vec::new();
    let mut failed = Vec::new();
    for (spec, outcome) in config.servers.iter().zip(outcomes.into_iter().flatten()) {
        match outcome {
            Ok((conn, listing)) => {
                listings.push(listing);
                connections.push(conn);
            }
            Err(why) => failed.push((spec, why.text)),
        }
    }
    (connections, listings, failed)
}

/// Why a server could not be used at start: the error, and the fix its last words or the
/// kind of failure point to (as `doctor` and `mcp get` give it: [`crate::probe::connect_failure`]).
struct Unavailable {
    text: String,
    fix: Option<String>,
}

/// `server unavailable: …`, then what to do about it.
fn report_unavailable(spec: &ServerSpec, why: &Unavailable, trace: &Trace) {
    trace.add(
        Who::Host,
        format!("server unavailable: {}", why.text),
        json!({"server": spec.name, "error": why.text}),
    );
    if let Some(fix) = &why.fix {
        trace.add(
            Who::Host,
            format!("fix for {}: {fix}", spec.name),
            json!({"server": spec.name}),
        );
    }
}
