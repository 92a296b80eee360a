//! The binary as a server on 127.0.0.1: the reference servers on Streamable HTTP
//! (`gatehouse serve NAME --http`, with a tokens file) and the lab (`gatehouse lab`).

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::Duration,
};

use serde_json::json;

use super::process::{LIMIT, Process, Spawn, Stream};

/// Sam's bearer token in [`tokens_file`]: `usr-sam` of `larkfield`.
pub const SAM_TOKEN: &str = "tok-sam-larkfield-interop-5d0e7c1a93b2";

/// Omar's token: `usr-omar` of `larkfield` (another user of Sam's organization).
pub const OMAR_TOKEN: &str = "tok-omar-larkfield-interop-7a4c2e9d0b13";
/// Sam's token acting in `bramble` (the same user in another organization).
pub const SAM_IN_BRAMBLE_TOKEN: &str = "tok-sam-bramble-interop-3f8b1d6c5e20";

/// The tests' tokens file for `gatehouse serve --http --tokens` (hashed): [`SAM_TOKEN`],
/// [`OMAR_TOKEN`] and [`SAM_IN_BRAMBLE_TOKEN`], and the HTTP tests' people
/// (`http_server::SAM`, …), each token its own caller.
pub fn tokens_file(dir: &Path) -> PathBuf {
    use super::http_server as hs;
    let path = dir.join("tokens.json");
    let hash = gatehouse_http::tokens::hash_token;
    std::fs::write(
        &path,
        json!([
            {"user": "usr-sam", "tenant": "larkfield", "sha256": hash(SAM_TOKEN), "client": "interop"},
            {"user": "usr-omar", "tenant": "larkfield", "sha256": hash(OMAR_TOKEN)},
            {"user": "usr-sam", "tenant": "bramble", "sha256": hash(SAM_IN_BRAMBLE_TOKEN)},
            {"user": "usr-sam", "tenant": "larkfield", "sha256": hash(hs::SAM), "client": "sam-laptop"},
            {"user": "usr-omar", "tenant": "larkfield", "sha256": hash(hs::OMAR)},
            {"user": "usr-camille", "tenant": "larkfield", "sha256": hash(hs::CAMILLE_IN_LARKFIELD)},
            {"user": "usr-jun", "tenant": "larkfield", "sha256": hash(hs::JUN)},
            {"user": "usr-camille", "tenant": "bramble", "sha256": hash(hs::CAMILLE)},
            {"user": "usr-tomas", "tenant": "larkfield", "sha256": hash(hs::TOMAS)},
        ])
        .to_string(),
    )
    .expect("the tokens file is written");
    path
}

/// `gatehouse serve NAME --http 127.0.0.1:0 --tokens FILE`, with the tickets store at `db`
/// and no caller in its environment (over HTTP the token says who calls); its stderr (its
/// log) kept.
pub fn serve_http(name: &str, tokens: &Path, db: &Path) -> Process {
    let mut cmd = Command::new(super::exe());
    cmd.args(["serve", name, "--http", "127.0.0.1:0", "--tokens"])
        .arg(tokens);
    let tasks_db = db.with_file_name("server-tasks.db");
    let cmd = super::in_fresh_world(
        cmd,
        &[
            ("GATEHOUSE_TICKETS_DB", db.to_str().unwrap()),
            ("GATEHOUSE_SERVER_TASKS_DB", tasks_db.to_str().unwrap()),
        ],
    );
    Spawn::new(cmd, format!("gatehouse serve {name} --http")).serving(
        Stream::Stderr,
        "listening on ",
        LIMIT,
    )
}

/// `gatehouse lab --port 0 ARGS…`, its address (`http://127.0.0.1:PORT/?token=…`) read
/// from stdout; stopped with Ctrl-C, so it closes its servers, when dropped.
pub fn lab(args: &[&str]) -> Process {
    lab_with(args, &[])
}

/// [`lab`] with extra environment (a model endpoint's address, say).
pub fn lab_with(args: &[&str], env: &[(&str, &str)]) -> Process {
    let mut argv = vec!["lab", "--port", "0"];
    argv.extend_from_slice(args);
    Spawn::new(super::gatehouse_command(&argv, env), "gatehouse lab")
        .interrupt_first(Duration::from_secs(3))
        .serving(Stream::Stdout, "gatehouse lab: ", Duration::from_secs(60))
}
