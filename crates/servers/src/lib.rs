//! The reference MCP servers Gatehouse is shown and tested with, and two for its tests
//! (`testbed`, `hostile`). Each module is one server; `common` holds what they share
//! (identity, logging, result shapes), `membership` who belongs to which organization and
//! what each role may do. Every server runs on
//! stdio ([`serve_stdio`]) or over Streamable HTTP ([`serve_http`], on `gatehouse_http`,
//! which tells who is calling).
#![warn(missing_docs)]
#![warn(clippy::too_many_lines)]

pub mod built_in;
pub mod cmdb;
pub mod command;
pub mod common;
pub mod data;
pub mod desk;
pub mod hostile;
pub mod membership;
pub mod orders;
pub mod replay;
pub mod store;
pub mod support;
pub mod tasks;
pub mod testbed;
pub mod tickets;

use std::path::PathBuf;

use gatehouse_http as http;
use rmcp::ServiceExt;

use desk::Served;

/// The servers `gatehouse serve NAME` can start.
pub const SERVER_NAMES: &[&str] = &["support", "cmdb", "tickets", "orders", "testbed", "hostile"];

/// Options some servers take.
#[derive(Debug, Default, Clone)]
pub struct ServeOptions {
    /// The tickets server's store (default: [`tickets::default_db_path`]).
    pub db: Option<PathBuf>,
    /// The task store (default: [`tasks::default_db_path`] for the orders server; the
    /// testbed keeps its tasks in memory unless one is named here or in [`tasks::ENV_DB`]).
    pub tasks_db: Option<PathBuf>,
}

impl ServeOptions {
    /// The orders server, with its tasks in the task store.
    fn orders(&self, caller: common::Caller) -> anyhow::Result<orders::OrdersServer> {
        let path = self.tasks_db.clone().unwrap_or_else(tasks::default_db_path);
        let tasks = tasks::Tasks::open(&path, "orders", tasks::TaskSettings::from_env()?)?;
        Ok(orders::OrdersServer::new(caller)?.with_tasks(tasks))
    }

    /// The testbed, with its tasks in the task store named, else in memory.
    fn testbed(&self) -> anyhow::Result<testbed::Testbed> {
        let settings = tasks::TaskSettings::from_env()?;
        let named = self.tasks_db.clone().or_else(|| {
            std::env::var_os(tasks::ENV_DB)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        });
        let tasks = match named {
            Some(path) => tasks::Tasks::open(&path, "testbed", settings)?,
            None => tasks::Tasks::in_memory("testbed", settings)?,
        };
        Ok(testbed::Testbed::new(testbed::TestbedOptions::from_env()?).with_tasks(tasks))
    }
}

/// Run a server on stdio until the client goes away. The server comes boxed, so that the
/// transport's code is compiled once rather than once per server: a smaller binary is a
/// smaller resident set for every server process.
async fn run(server: Box<dyn rmcp::service::DynService<rmcp::RoleServer>>) -> anyhow::Result<()> {
    let service = match stdio_pipes()? {
        Some(pipes) => server.serve(pipes).await?,
        None => server.serve(rmcp::transport::stdio()).await?,
    };
    service.waiting().await?;
    // Handlers woken by a last cancellation get a moment to finish (and log) before the
    // process ends; yielding costs microseconds, not a fixed delay.
    for _ in 0..16 {
        tokio::task::yield_now().await;
    }
    Ok(())
}

/// When stdin and stdout are pipes (as when a host starts the server), read and write them
/// as non-blocking pipes driven by the runtime itself: no hand-off to tokio's blocking
/// threads on every message, which measured twice the calls per second. On a terminal or
/// a file, the usual stdio is used.
#[cfg(unix)]
fn stdio_pipes() -> anyhow::Result<
    Option<(
        tokio::net::unix::pipe::Receiver,
        tokio::net::unix::pipe::Sender,
    )>,
> {
    use std::{
        fs::File,
        mem::ManuallyDrop,
        os::{
            fd::{FromRawFd, OwnedFd},
            unix::fs::FileTypeExt,
        },
    };
    let is_pipe = |fd| {
        // SAFETY: fd 0 and 1 stay open for the life of the process; ManuallyDrop keeps
        // this look from closing them.
        let file = ManuallyDrop::new(unsafe { File::from_raw_fd(fd) });
        file.metadata()
            .map(|m| m.file_type().is_fifo())
            .unwrap_or(false)
    };
    if !(is_pipe(0) && is_pipe(1)) {
        return Ok(None);
    }
    // SAFETY: from here on the server alone owns fds 0 and 1; nothing else in the process
    // reads stdin or writes stdout (logs go to stderr).
    let (stdin, stdout) = unsafe { (OwnedFd::from_raw_fd(0), OwnedFd::from_raw_fd(1)) };
    Ok(Some((
        tokio::net::unix::pipe::Receiver::from_owned_fd(stdin)?,
        tokio::net::unix::pipe::Sender::from_owned_fd(stdout)?,
    )))
}

#[cfg(not(unix))]
fn stdio_pipes() -> anyhow::Result<Option<(tokio::io::Stdin, tokio::io::Stdout)>> {
    Ok(None)
}

/// Run one reference server on stdio until the client goes away.
pub async fn serve_stdio(name: &str, options: ServeOptions) -> anyhow::Result<()> {
    let caller = common::Caller::from_env();
    match name {
        "support" => run(Served::new(support::SupportServer::new(caller)?).into_dyn()).await,
        "cmdb" => run(Served::new(cmdb::CmdbServer::new(caller)?).into_dyn()).await,
        "orders" => run(Served::new(options.orders(caller)?).into_dyn()).await,
        "tickets" => {
            let db = options.db.unwrap_or_else(tickets::default_db_path);
            run(Served::new(tickets::TicketsServer::new(caller, &db)?).into_dyn()).await
        }
        "testbed" => {
            if !testbed::misbehave_at_start() {
                std::process::exit(1);
            }
            run(options.testbed()?.into_dyn()).await
        }
        // Raw JSON lines on purpose: its attacks are on the wire rmcp would not let it write.
        "hostile" => hostile::run(hostile::Scenario::from_env()?),
        other => anyhow::bail!(
            "there is no reference server named {other:?} (known: {})",
            SERVER_NAMES.join(", ")
        ),
    }
}

/// Serve one reference server over Streamable HTTP until SIGTERM or Ctrl-C. Each request's
/// caller comes from its bearer token (`--tokens`), or from the environment with
/// `--no-auth` (local testing only).
pub async fn serve_http(
    name: &str,
    options: ServeOptions,
    http_options: http::HttpOptions,
) -> anyhow::Result<()> {
    anyhow::ensure!(
        name != "hostile",
        "the hostile test server speaks stdio only"
    );
    anyhow::ensure!(
        SERVER_NAMES.contains(&name),
        "there is no reference server named {name:?} (known: {})",
        SERVER_NAMES.join(", ")
    );
    let members = membership::Memberships::embedded()?;
    let auth = http::Auth::from_options(&http_options, members)?;
    let caller = auth.default_caller();
    let o = &http_options;
    // The servers that check membership on every call open legacy sessions for members
    // only; the others for any caller with a token.
    let members = http::SessionAccess::Members(members);
    let anyone = http::SessionAccess::AnyCaller;
    match name {
        "support" => {
            http::serve(
                Served::new(support::SupportServer::new(caller)?),
                auth,
                members,
                o,
            )
            .await
        }
        "cmdb" => http::serve(Served::new(cmdb::CmdbServer::new(caller)?), auth, anyone, o).await,
        "orders" => http::serve(Served::new(options.orders(caller)?), auth, anyone, o).await,
        "tickets" => {
            let db = options.db.unwrap_or_else(tickets::default_db_path);
            let server = Served::new(tickets::TicketsServer::new(caller, &db)?);
            http::serve(server, auth, members, o).await
        }
        _ => {
            if !testbed::misbehave_at_start() {
                std::process::exit(1);
            }
            http::serve(options.testbed()?, auth, anyone, o).await
        }
    }
}
