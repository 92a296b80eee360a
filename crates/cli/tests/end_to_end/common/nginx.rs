//! nginx as the tests' balancer: one process of its own per test, its config, pid and
//! logs in the test's folder, round robin over loopback upstreams, stopped when dropped.
//! As a tap ([`start_tap`]), one upstream and the `Authorization` header of every request
//! it passes on written down, so a test sees what credential reached a server.

use std::{
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use super::{
    http_server::START_TIMEOUT,
    ports::{Taken, free_port, on_a_free_port, says_taken},
};

pub fn nginx_binary() -> PathBuf {
    let candidates = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("nginx"))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default()
        .into_iter()
        .chain([PathBuf::from("/usr/sbin/nginx")]);
    for candidate in candidates {
        if candidate.is_file() {
            return candidate;
        }
    }
    panic!(
        "nginx is missing: this test runs two instances behind it. \
         Install it with `scripts/install-test-peers.sh nginx` (Debian's nginx package)."
    );
}

/// nginx on a loopback port, its config, pid and logs in `dir`; stopped when dropped.
pub struct Nginx {
    child: Child,
    /// The proxy's MCP endpoint.
    pub url: String,
    /// Its folder: config, pid, logs.
    pub dir: PathBuf,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-QUIT", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// nginx round-robin over `upstreams` (loopback ports), `/mcp` proxied to them.
pub fn start_nginx(dir: &Path, upstreams: &[u16]) -> Nginx {
    start(&dir.join("nginx"), upstreams, "")
}

/// The access log of a tap: one line per request, its `Authorization` header as it came
/// (`-` when there was none).
pub const TAP_LOG: &str = "authorization.log";

/// nginx in front of the server at `upstream` (a loopback port), in `dir/tap`, writing
/// the `Authorization` header of each request to [`TAP_LOG`] ([`Nginx::authorizations`]).
pub fn start_tap(dir: &Path, upstream: u16) -> Nginx {
    let logs = dir.join("tap");
    let format = format!(
        "log_format tap '$http_authorization';\n  access_log {}/{TAP_LOG} tap;",
        logs.display()
    );
    start(&logs, &[upstream], &format)
}

impl Nginx {
    /// A tap's lines: the `Authorization` header of every request, in order.
    pub fn authorizations(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.join(TAP_LOG))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

/// nginx in `dir` over `upstreams`, with `logging` (log formats and access logs) added to
/// its `http` block; on another port if the one picked was taken before nginx bound it.
fn start(dir: &Path, upstreams: &[u16], logging: &str) -> Nginx {
    let dir = dir.to_path_buf();
    std::fs::create_dir_all(&dir).unwrap();
    on_a_free_port("nginx", |port| start_on(&dir, port, upstreams, logging))
}

/// nginx on `port`, or [`Taken`] when that port was no longer free.
fn start_on(dir: &Path, port: u16, upstreams: &[u16], logging: &str) -> Result<Nginx, Taken> {
    let nginx = nginx_binary();
    let _ = std::fs::remove_file(dir.join("error.log"));
    let _ = std::fs::remove_file(dir.join("nginx.pid"));
    let servers: String = upstreams
        .iter()
        .map(|p| format!("    server 127.0.0.1:{p};\n"))
        .collect();
    let d = dir.display();
    // One process (no master, no workers), in the foreground: the test owns its pid.
    let config = format!(
        "daemon off;
master_process off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log info;
events {{ worker_connections 64; }}
http {{
  access_log {d}/access.log;
  {logging}
  client_body_temp_path {d}/client_body;
  proxy_temp_path {d}/proxy;
  fastcgi_temp_path {d}/fastcgi;
  uwsgi_temp_path {d}/uwsgi;
  scgi_temp_path {d}/scgi;
  upstream tickets {{
{servers}  }}
  server {{
    listen 127.0.0.1:{port};
    location /mcp {{
      proxy_pass http://tickets;
      proxy_http_version 1.1;
      proxy_set_header Host $http_host;
      proxy_set_header Connection \"\";
      proxy_buffering off;
      proxy_read_timeout 660s;
      client_max_body_size 1m;
    }}
  }}
}}
"
    );
    let conf = dir.join("nginx.conf");
    std::fs::write(&conf, config).unwrap();
    let child = Command::new(&nginx)
        .arg("-p")
        .arg(dir)
        .arg("-e")
        .arg(dir.join("error.log"))
        .arg("-c")
        .arg(&conf)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", nginx.display()));
    let mut proxy = Nginx {
        child,
        url: format!("http://127.0.0.1:{port}/mcp"),
        dir: dir.to_path_buf(),
    };
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Ok(Some(status)) = proxy.child.try_wait() {
            let log = std::fs::read_to_string(proxy.dir.join("error.log")).unwrap_or_default();
            if says_taken(&log) {
                return Err(Taken);
            }
            panic!("nginx exited ({status}); error log:\n{log}");
        }
        // Its pid file is written once its socket is bound: before that, a connection could
        // reach whoever took the port first.
        let pid = std::fs::read_to_string(proxy.dir.join("nginx.pid")).unwrap_or_default();
        if pid.trim() == proxy.child.id().to_string()
            && std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        {
            return Ok(proxy);
        }
        assert!(Instant::now() < deadline, "nginx did not listen on {port}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_port_taken_before_nginx_binds_it_is_given_up_for_another() {
    let dir = tempfile::tempdir().unwrap();
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = held.local_addr().unwrap().port();
    let upstream = free_port();
    assert!(matches!(
        start_on(dir.path(), taken, &[upstream], ""),
        Err(Taken)
    ));
    let nginx = start(dir.path(), &[upstream], "");
    assert!(!nginx.url.contains(&format!(":{taken}/")), "{}", nginx.url);
}
