//! `gatehouse lab`: a local web interface to the host.
//!
//! The conversation with each turn's steps as they happen, a timeline of every model
//! call, server round and wait for the person, a row per tool call, the person's
//! approvals and forms, a manual panel that runs one tool through the host's checks, and
//! an explorer that steps through every recorded message of a turn or of a file written
//! by `gatehouse ask --record`.
//!
//! - [`server`]: the guard (token, `Host`, `Origin`), the routes and the event stream.
//! - [`session`]: the host, the model and the conversation; the turns the page starts.
//! - [`person`]: the person at the browser ([`gatehouse::person::Person`]).
//! - [`events`]: the observer that turns the host's work into events for the page.
//! - [`record`]: recordings of every message, for the explorer and `--record`.
//! - [`eval_view`]: an eval's report and its runs' recordings (`--eval DIR`).
//!
//! The page (`assets/lab`) is built into the binary; nothing is fetched from elsewhere.

pub mod eval_view;
pub mod events;
pub mod person;
pub mod recordings;
pub mod server;
pub mod session;

use std::{net::SocketAddr, sync::Arc};

use gatehouse::{host::Host, trace::Trace};
use tokio_util::sync::CancellationToken;

use crate::args::LabArgs;

/// Start the host and serve the lab until Ctrl-C.
pub async fn run(args: LabArgs) -> anyhow::Result<()> {
    // An eval's folder is checked before anything starts.
    let eval = match &args.eval {
        Some(dir) => Some(eval_view::EvalDir::open(dir)?),
        None => None,
    };
    let config = crate::start::load_config(&args.host, true)?;
    let model = if args.manual {
        None
    } else {
        let mut model = crate::start::load_model(&args.host, &config)?;
        model.preflight().await?;
        Some(model)
    };
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], args.port)))
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on 127.0.0.1:{}: {e}", args.port))?;
    let port = listener.local_addr()?.port();

    let hub = Arc::new(events::Hub::default());
    let recordings = Arc::new(recordings::Recordings::new());
    let person = Arc::new(person::WebPerson::new(hub.clone()));
    let observer = Arc::new(events::LabObserver::new(hub.clone(), recordings.clone()));
    let host = Host::start(&config, person.clone(), Trace::new(observer)).await;
    if let Some(only) = &args.host.tools {
        host.offer_only(only);
    }
    let lab = Arc::new(session::Lab::new(host, hub, person, recordings, model));

    let token = gatehouse::trace::random_hex(16);
    let closing = CancellationToken::new();
    let app = server::router(
        server::AppState {
            lab: lab.clone(),
            token: token.clone(),
            closing: closing.clone(),
            eval: eval.map(Arc::new),
        },
        server::Guard {
            token: token.clone(),
            port,
        },
    );
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        writeln!(out, "gatehouse lab: http://127.0.0.1:{port}/?token={token}")?;
        writeln!(out, "(open it in a browser; Ctrl-C stops the lab)")?;
        out.flush()?;
    }
    let shutdown = closing.clone();
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            let _ = tokio::signal::ctrl_c().await;
            shutdown.cancel();
        })
        .await?;
    // Turns still waiting for the person hold the host; their servers end with the process.
    if let Ok(lab) = Arc::try_unwrap(lab) {
        lab.host.shutdown().await;
    }
    Ok(())
}
