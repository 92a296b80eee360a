//! `gh-pipe-floor`: the transport's floor. One JSON line of `--bytes` bytes written to a
//! child's stdin and read back from its stdout, `--rounds` times, with blocking I/O and
//! nothing else: what any stdio round trip costs before a client or server does any work.
//!
//!     gh-pipe-floor [--bytes B] [--rounds N] [--warmup W] -- ECHO_PROGRAM ARGS...
#![warn(clippy::too_many_lines)]

use std::{
    io::{BufRead, BufReader, Write},
    process::{Command, Stdio},
    time::Instant,
};

use gatehouse_bench::{Flags, extend, latency_stats};
use serde_json::json;

fn main() -> anyhow::Result<()> {
    let flags = Flags::parse();
    let bytes = flags.number("bytes", 300)?.max(64);
    let (rounds, warmup) = (
        flags.number("rounds", 20_000)?,
        flags.number("warmup", 1_000)?,
    );
    let (program, args) = flags
        .rest
        .split_first()
        .ok_or_else(|| anyhow::anyhow!("give the echo program after --"))?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    let mut stdin = child.stdin.take().expect("piped");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
    // A JSON-RPC request of the given size, as one line.
    let head = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_ticket","arguments":{"ticket_id":"T-30002"},"pad":""#;
    let mut line = String::from(head);
    line.push_str(&"x".repeat(bytes.saturating_sub(head.len() + 3)));
    line.push_str("\"}}\n");
    let mut back = String::with_capacity(line.len());
    let mut round = || -> anyhow::Result<()> {
        stdin.write_all(line.as_bytes())?;
        stdin.flush()?;
        back.clear();
        stdout.read_line(&mut back)?;
        anyhow::ensure!(back == line, "the echo changed the line");
        Ok(())
    };
    for _ in 0..warmup {
        round()?;
    }
    let mut samples = Vec::with_capacity(rounds);
    let start = Instant::now();
    for _ in 0..rounds {
        let t = Instant::now();
        round()?;
        samples.push(t.elapsed());
    }
    let wall = start.elapsed().as_secs_f64();
    drop(stdin);
    let _ = child.wait();
    let out = extend(
        json!({
            "mode": "pipe",
            "bytes": line.len(),
            "calls": rounds,
            "wall_s": wall,
            "calls_per_s": rounds as f64 / wall,
        }),
        latency_stats(&mut samples),
    );
    println!("{out}");
    Ok(())
}
