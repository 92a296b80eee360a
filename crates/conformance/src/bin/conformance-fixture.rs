//! `conformance-fixture [--listen 127.0.0.1:PORT]`: the conformance fixture on Streamable
//! HTTP at `http://ADDR/mcp`, without authentication, loopback only. It prints
//! `listening on http://ADDR/mcp` on stderr once it accepts connections and stops on
//! SIGTERM or Ctrl-C.

#![warn(clippy::too_many_lines)]

use std::net::SocketAddr;

use gatehouse_conformance::fixture::Fixture;
use gatehouse_http::{self as http, Auth, HttpOptions};

fn usage() -> ! {
    eprintln!("usage: conformance-fixture [--listen 127.0.0.1:PORT]   (port 0 picks a free one)");
    std::process::exit(2);
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut addr: SocketAddr = "127.0.0.1:0".parse()?;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--listen" => {
                addr = args
                    .next()
                    .and_then(|a| a.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            "-h" | "--help" => usage(),
            _ => usage(),
        }
    }
    anyhow::ensure!(
        addr.ip().is_loopback(),
        "the conformance fixture has no authentication: listen on a loopback address, not {}",
        addr.ip()
    );
    let options = HttpOptions {
        addr,
        tokens: None,
        no_auth: true,
        allowed_origins: vec![],
        allowed_hosts: vec![],
        oauth: None,
        limits: http::HttpLimits::default(),
    };
    http::serve(
        Fixture::new(),
        Auth::Off,
        http::SessionAccess::AnyCaller,
        &options,
    )
    .await
}
