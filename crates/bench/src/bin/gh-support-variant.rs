//! `gh-support-variant`: the support server of `gatehouse serve support` (the same
//! `SupportServer`), started in other ways, to measure what the way it is started costs
//! per call. Not a product: an experiment for the profile in docs/benchmarks.md.
//!
//!     gh-support-variant [--runtime multi|current] [--stdio blocking|pipe]
//!
//! - `--runtime multi --stdio blocking` is what `gatehouse serve support` does today: a
//!   multi-threaded tokio runtime and rmcp's `stdio()` (tokio's stdin/stdout, which read
//!   and write on the blocking thread pool, two thread hand-offs per message).
//! - `--runtime current --stdio pipe`: one thread, and stdin/stdout as non-blocking pipes
//!   driven by the runtime's epoll (`tokio::net::unix::pipe`), no hand-offs.
//!
//! MCP_USER and MCP_TENANT name the caller, as for the real server.

use std::os::fd::{FromRawFd, OwnedFd};

use gatehouse_bench::Flags;
use gatehouse_servers::{common::Caller, support::SupportServer};
use rmcp::ServiceExt;

async fn serve(stdio: &str) -> anyhow::Result<()> {
    let server = SupportServer::new(Caller::from_env())?;
    match stdio {
        "blocking" => {
            server
                .serve(rmcp::transport::stdio())
                .await?
                .waiting()
                .await?;
        }
        "pipe" => {
            // SAFETY: fds 0 and 1 are this process's stdin and stdout, owned from here on;
            // nothing else in this program reads or writes them.
            let (stdin, stdout) = unsafe { (OwnedFd::from_raw_fd(0), OwnedFd::from_raw_fd(1)) };
            let rx = tokio::net::unix::pipe::Receiver::from_owned_fd(stdin)?;
            let tx = tokio::net::unix::pipe::Sender::from_owned_fd(stdout)?;
            server.serve((rx, tx)).await?.waiting().await?;
        }
        other => anyhow::bail!("unknown --stdio {other:?} (blocking or pipe)"),
    }
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let flags = Flags::parse();
    let runtime = match flags.get("runtime").unwrap_or("multi") {
        "multi" => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?,
        "current" => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?,
        other => anyhow::bail!("unknown --runtime {other:?} (multi or current)"),
    };
    let stdio = flags.get("stdio").unwrap_or("blocking").to_owned();
    runtime.block_on(serve(&stdio))
}
