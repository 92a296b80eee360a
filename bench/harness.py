"""Gatehouse against the Python SDK reference, in one run on one machine. Run by bench/run.

Every timed row runs the two sides interleaved (A, B, A, B, ...) so that the machine's
noise falls on both, and reports the median, min and max of each side and the ratio of
the medians. Nothing is timed until both sides are shown to do the same work: the same
tool calls, the same results, the same answer (see `check_parity`).

Rows are functions in ROWS; each returns table lines (row 9, the gateway, lives in
gateway_row.py). Adding a row is one function and one
entry there.
"""

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
REL = ROOT / "target" / "dist"
GATEHOUSE = REL / "gatehouse"
SERVERS = REL / "gatehouse-servers"  # what the built-in configuration starts
PY = BENCH / ".venv" / "bin" / "python"
REFERENCE = BENCH / "reference"
ECHO = BENCH / ".build" / "echo"
PEAKRSS = BENCH / ".build" / "peakrss"
QUESTION = "Draft a reply to ticket T-30002"
ALLOW = ["support__search_knowledge", "support__get_ticket"]
IDENTITY_ENV = {"MCP_USER": "${GATEHOUSE_USER}", "MCP_TENANT": "${GATEHOUSE_TENANT}"}


# ----------------------------------------------------------------------------- plumbing


@dataclass
class Settings:
    quick: bool
    work: Path
    pairs: int = 0  # cold asks, interleaved pairs
    mem_pairs: int = 0
    record_pairs: int = 0
    rate_rounds: int = 0
    gh_calls: int = 0
    py_calls: int = 0
    floor_rounds: int = 0
    scale_pairs: int = 0
    servers: int = 20
    tools_per_server: int = 50
    before: Path | None = None  # an earlier `gatehouse` binary, measured beside this one in rows 1, 3 and 6
    results: dict = field(default_factory=dict)

    def __post_init__(self):
        q = self.quick
        self.pairs = 5 if q else 15
        self.mem_pairs = 2 if q else 4
        self.record_pairs = 3 if q else 7
        self.rate_rounds = 2 if q else 3
        self.gh_calls = 1500 if q else 4000
        self.py_calls = 300 if q else 800
        self.floor_rounds = 10_000 if q else 30_000
        self.scale_pairs = 2 if q else 4


def say(text: str) -> None:
    print(f"[bench] {text}", file=sys.stderr, flush=True)


def env_with(**extra) -> dict:
    env = dict(os.environ)
    env.update(extra)
    return env


def run(cmd, *, env=None, check=True, timeout=600) -> subprocess.CompletedProcess:
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env, timeout=timeout)
    if check and p.returncode != 0:
        raise SystemExit(f"command failed ({p.returncode}): {' '.join(map(str, cmd))}\n{p.stderr[-3000:]}")
    return p


def timed(cmd, *, env=None) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    p = run(cmd, env=env)
    return time.perf_counter() - start, p


def watch_peak(cmd, *, env=None) -> dict:
    """Run `cmd`, sampling the host's VmHWM every millisecond, and read the tree's peak RSS
    from wait4 (the largest of the host and every child it reaped)."""
    proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    sampled = 0
    status_path = f"/proc/{proc.pid}/status"
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        try:
            with open(status_path) as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        sampled = max(sampled, int(line.split()[1]))
                        break
        except OSError:
            pass
        time.sleep(0.001)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"command failed ({proc.returncode}): {' '.join(map(str, cmd))}")
    return {"sampled_kb": sampled, "tree_kb": usage.ru_maxrss}


def read_peak(path: Path, wait_s: float = 10.0) -> int:
    """A server's peak RSS in KiB, as peakrss writes it when the server has exited: a host
    may return before its servers have finished exiting, so wait for the file a while."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            text = path.read_text()
            if text.endswith("\n"):
                return int(text)
        except FileNotFoundError:
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"bench: no peak memory in {path} {wait_s:.0f} s after its host ended")
        time.sleep(0.01)


def host_peak(watch: dict, servers_kb: list[int]) -> int:
    """The host's own peak: exact when the tree's peak is above every server's (then it is
    the host's), else the sampled high-water mark."""
    tree = watch["tree_kb"]
    return tree if tree > max(servers_kb, default=0) + 256 else max(watch["sampled_kb"], 1)


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def summary(xs) -> dict:
    return {"median": med(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


# ------------------------------------------------------------------------------- config


def write_json(path: Path, value) -> Path:
    path.write_text(json.dumps(value, indent=2))
    return path


def support_configs(work: Path, wrap_dir: Path | None = None) -> tuple[Path, Path]:
    """Servers files with only the support server: Gatehouse's and the reference's. With
    `wrap_dir`, each server runs under peakrss, which writes its peak RSS there."""

    def entry(command, args, tag):
        if wrap_dir is None:
            return {"command": str(command), "args": [str(a) for a in args], "env": IDENTITY_ENV}
        out = wrap_dir / f"{tag}.kb"
        return {"command": str(PEAKRSS), "args": [str(out), str(command), *map(str, args)], "env": IDENTITY_ENV}

    suffix = "-mem" if wrap_dir else ""
    # The reference host keeps no ledger: like is compared with like. The ledger's own cost
    # (one fdatasync per decision) is measured by `cargo bench --bench written_policy`.
    gh = {"mcpServers": {"support": entry(SERVERS, ["support"], "gh-support")},
          "gatehouse": {"allow": ALLOW, "ledger": False}}  # fmt: skip
    ref = {"mcpServers": {"support": entry(PY, [REFERENCE / "support_server.py"], "ref-support")},
           "gatehouse": {"allow": ALLOW}}  # fmt: skip
    return write_json(work / f"gh-support{suffix}.json", gh), write_json(work / f"ref-support{suffix}.json", ref)


def scale_configs(s: Settings, wrap_dir: Path | None = None) -> tuple[Path, Path]:
    tools_file = s.work / f"gen-{s.tools_per_server}.json"
    if not tools_file.exists():
        tools_file.write_text(run([REL / "gh-gen-server", "--dump", "--tools", s.tools_per_server]).stdout)

    def entry(command, args, tag, env):
        if wrap_dir is None:
            return {"command": str(command), "args": [str(a) for a in args], "env": env}
        return {"command": str(PEAKRSS), "args": [str(wrap_dir / f"{tag}.kb"), str(command), *map(str, args)],
                "env": env}  # fmt: skip

    n = s.servers
    gh = {"mcpServers": {f"s{i:02}": entry(REL / "gh-gen-server", ["--tools", s.tools_per_server], f"gh-s{i:02}", {})
                         for i in range(n)}}  # fmt: skip
    ref = {"mcpServers": {f"s{i:02}": entry(PY, [REFERENCE / "gen_server.py"], f"ref-s{i:02}",
                                            {"GEN_TOOLS_FILE": str(tools_file)}) for i in range(n)}}  # fmt: skip
    suffix = "-mem" if wrap_dir else ""
    return write_json(s.work / f"gh-scale{suffix}.json", gh), write_json(s.work / f"ref-scale{suffix}.json", ref)


def gh_ask(config: Path, *extra) -> list:
    return [GATEHOUSE, "ask", QUESTION, "--config", config, "--json", *extra]


def ref_ask(config: Path, *extra) -> list:
    return [PY, REFERENCE / "host.py", "ask", QUESTION, "--config", config, "--json", *extra]


# ------------------------------------------------------------------------------- parity


def essence(run_json: dict) -> dict:
    """What must be the same on both sides: the calls, what came back, the answer."""
    steps = run_json["steps"]
    return {
        "calls": [(s["text"], s["data"].get("arguments")) for s in steps if s["who"] == "model"],
        "results": [s["text"] for s in steps if s["who"] == "server"],
        "decisions": [s["text"] for s in steps if s["who"] == "host" and not s["text"].startswith("discovered")],
        "discovered": [s["text"] for s in steps if s["text"].startswith("discovered")],
        "answer": run_json["answer"],
    }


def check_parity(s: Settings) -> None:
    gh_cfg, ref_cfg = support_configs(s.work)
    gh = json.loads(run(gh_ask(gh_cfg)).stdout)
    ref = json.loads(run(ref_ask(ref_cfg)).stdout)
    a, b = essence(gh), essence(ref)
    problems = [k for k in a if a[k] != b[k]]
    # The reference server's tools must be the Rust server's definitions.
    check = (
        "import asyncio, json, os, sys\n"
        "from mcp import Client, StdioServerParameters\n"
        "async def main():\n"
        f"    p = StdioServerParameters(command={str(PY)!r}, args=[{str(REFERENCE / 'support_server.py')!r}],"
        " env=dict(os.environ, MCP_USER='usr-sam', MCP_TENANT='larkfield'))\n"
        "    async with Client(p) as c:\n"
        "        tools = (await c.list_tools()).tools\n"
        "    out = {t.name: t.model_dump(by_alias=True, exclude_none=True, mode='json') for t in tools}\n"
        "    print(json.dumps(out))\n"
        "asyncio.run(main())\n"
    )
    listed = json.loads(run([PY, "-c", check]).stdout)
    for name in ("search_knowledge", "get_ticket"):
        want = json.loads((ROOT / "crates/servers/tools" / f"support.{name}.json").read_text())
        if listed.get(name) != want:
            problems.append(f"tool definition {name}")
    s.results["parity"] = {"gatehouse": a, "reference": b, "problems": problems}
    if problems:
        say("the two sides do not do the same work; nothing is timed. Differences: " + ", ".join(problems))
        for k in a:
            if a[k] != b[k]:
                say(f"  {k}:\n    gatehouse: {a[k]}\n    reference: {b[k]}")
        raise SystemExit(3)
    say(f"parity: same {len(a['calls'])} tool calls, same results ({', '.join(a['results'])}), same answer, "
        "same tool definitions")  # fmt: skip


# ---------------------------------------------------------------------------------- rows


@dataclass
class Line:
    row: str
    metric: str
    gh: str
    ref: str
    ratio: str
    target: str = ""
    met: str = ""


def fmt_ms(x: float) -> str:
    return f"{x:.1f} ms" if x < 100 else f"{x:.0f} ms"


def fmt_spread(xs, fmt) -> str:
    return f"{fmt(med(xs))} [{fmt(min(xs))}–{fmt(max(xs))}]"


def fmt_kb(kb: float) -> str:
    return f"{kb / 1024:.1f} MiB"


def verdict(ok: bool | None) -> str:
    return "" if ok is None else ("met" if ok else "MISSED")


def row_cold_ask(s: Settings) -> list[Line]:
    """Row 1: cold `ask`, end to end (spawn, discover, two calls, answer)."""
    gh_cfg, ref_cfg = support_configs(s.work)
    gh_t, ref_t, before_t = [], [], []
    say(f"row 1: {s.pairs} interleaved pairs of cold asks")
    for _ in range(s.pairs):
        gh_t.append(timed(gh_ask(gh_cfg))[0] * 1000)
        ref_t.append(timed(ref_ask(ref_cfg))[0] * 1000)
        if s.before:
            before_t.append(timed([s.before, *gh_ask(gh_cfg)[1:]])[0] * 1000)
    say(f"row 1: {s.mem_pairs} interleaved pairs for peak memory (servers under peakrss)")
    mem_dir = s.work / "mem"
    mem_dir.mkdir(exist_ok=True)
    gh_mcfg, ref_mcfg = support_configs(s.work, mem_dir)
    gh_host, gh_srv, ref_host, ref_srv = [], [], [], []
    for _ in range(s.mem_pairs):
        for cfg, cmd, tag, hosts, srvs in ((gh_mcfg, gh_ask, "gh", gh_host, gh_srv),
                                           (ref_mcfg, ref_ask, "ref", ref_host, ref_srv)):  # fmt: skip
            watch = watch_peak(cmd(cfg))
            server_kb = read_peak(mem_dir / f"{tag}-support.kb")
            srvs.append(server_kb)
            hosts.append(host_peak(watch, [server_kb]))
    s.results["cold_ask"] = {"gh_ms": gh_t, "ref_ms": ref_t, "before_ms": before_t, "gh_host_kb": gh_host,
                             "gh_server_kb": gh_srv, "ref_host_kb": ref_host, "ref_server_kb": ref_srv}  # fmt: skip
    speed = med(ref_t) / med(gh_t)
    host_r, srv_r = med(ref_host) / med(gh_host), med(ref_srv) / med(gh_srv)
    before = []
    if s.before:
        r = med(before_t) / med(gh_t)
        before = [Line("1 cold ask", "wall time: this build (reference column: --before)", fmt_spread(gh_t, fmt_ms),
                       fmt_spread(before_t, fmt_ms), f"{r:.2f}× faster")]  # fmt: skip
    return before + [
        Line("1 cold ask", "wall time", fmt_spread(gh_t, fmt_ms), fmt_spread(ref_t, fmt_ms), f"{speed:.0f}× faster",
             "≥50× faster", verdict(speed >= 50)),  # fmt: skip
        Line("1 cold ask", "peak RSS, host", fmt_spread(gh_host, fmt_kb), fmt_spread(ref_host, fmt_kb),
             f"1/{host_r:.1f}", "≤1/8", verdict(host_r >= 8)),  # fmt: skip
        Line("1 cold ask", "peak RSS, server", fmt_spread(gh_srv, fmt_kb), fmt_spread(ref_srv, fmt_kb),
             f"1/{srv_r:.1f}", "≤1/8", verdict(srv_r >= 8)),  # fmt: skip
    ]


def row_first_answer(s: Settings) -> list[Line]:
    """Row 2: time to the first server answer, and the time for the rest of the question."""
    help_text = run([GATEHOUSE, "ask", "--help"]).stdout
    if "--record" not in help_text:
        return [Line("2 first answer", "pending: `gatehouse ask --record` is not in this build", "–", "–", "–")]
    gh_cfg, ref_cfg = support_configs(s.work)
    rec, tim = s.work / "gh-record.jsonl", s.work / "ref-timings.json"
    gh_first, gh_rest, ref_first, ref_rest = [], [], [], []
    say(f"row 2: {s.record_pairs} interleaved pairs with timings (gatehouse --record, reference --timings)")
    for _ in range(s.record_pairs):
        run(gh_ask(gh_cfg, "--record", rec))
        answers = [json.loads(ln)["t_ms"] for ln in rec.read_text().splitlines()
                   if json.loads(ln).get("direction") == "from_server"]  # fmt: skip
        gh_first.append(answers[0])
        gh_rest.append(answers[-1] - answers[0])
        run(ref_ask(ref_cfg, "--timings", tim))
        t = json.loads(tim.read_text())
        ref_first.append(t["spawn_to_first_answer_ms"])
        ref_rest.append(t["first_to_last_answer_ms"])
    s.results["first_answer"] = {"gh_first_ms": gh_first, "gh_rest_ms": gh_rest, "ref_first_ms": ref_first,
                                 "ref_rest_ms": ref_rest}  # fmt: skip
    r1, r2 = med(ref_first) / med(gh_first), med(ref_rest) / med(gh_rest)
    return [
        Line("2 first answer", "spawn → first server answer", fmt_spread(gh_first, fmt_ms),
             fmt_spread(ref_first, fmt_ms), f"{r1:.0f}× faster"),  # fmt: skip
        Line("2 first answer", "first → last answer (list, 2 calls)", fmt_spread(gh_rest, fmt_ms),
             fmt_spread(ref_rest, fmt_ms), f"{r2:.0f}× faster"),  # fmt: skip
    ]


def callrate(cmd, env=None) -> dict:
    return json.loads(run(cmd, env=env).stdout.strip().splitlines()[-1])


def row_call_rate(s: Settings) -> list[Line]:
    """Row 3: sequential tools/call through one stdio client; 8 concurrent callers; and
    the whole host path per call."""
    ident = env_with(MCP_USER="usr-sam", MCP_TENANT="larkfield")
    gh_cfg, ref_cfg = support_configs(s.work)
    gh_server = ["--", SERVERS, "support"]
    ref_server = ["--", PY, REFERENCE / "support_server.py"]
    cases = {
        "seq": ([REL / "gh-callrate", "--mode", "rmcp", "--calls", s.gh_calls, *gh_server],
                [PY, REFERENCE / "callrate.py", "--calls", s.py_calls, *ref_server]),  # fmt: skip
        "c8": ([REL / "gh-callrate", "--mode", "rmcp", "--concurrency", 8, "--calls", s.gh_calls, *gh_server],
               [PY, REFERENCE / "callrate.py", "--concurrency", 8, "--calls", s.py_calls, *ref_server]),  # fmt: skip
        "host": ([REL / "gh-callrate", "--mode", "host", "--calls", s.gh_calls, "--config", gh_cfg],
                 [PY, REFERENCE / "callrate.py", "--host", "--calls", s.py_calls, "--config", ref_cfg]),  # fmt: skip
    }
    out = {k: {"gh": [], "ref": []} for k in cases}
    # With --before, its sibling gh-callrate runs the host path too, in the same rounds.
    before_rate = s.before.parent / "gh-callrate" if s.before else None
    if before_rate and not before_rate.exists():
        raise SystemExit(f"row 3: --before has no gh-callrate beside it ({before_rate})")
    before_host = []
    say(f"row 3: {s.rate_rounds} interleaved rounds of {s.gh_calls} (Gatehouse) and {s.py_calls} (reference) calls")
    for _ in range(s.rate_rounds):
        for k, (gh_cmd, ref_cmd) in cases.items():
            out[k]["gh"].append(callrate(gh_cmd, ident))
            out[k]["ref"].append(callrate(ref_cmd, ident))
            if k == "host" and before_rate:
                before_host.append(callrate([before_rate, *gh_cmd[1:]], ident))
    out["host"]["before"] = before_host
    s.results["call_rate"] = out
    lines = []
    names = {"seq": "calls/s, 1 caller", "c8": "calls/s, 8 callers", "host": "calls/s, host path (propose)"}
    for k, label in names.items():
        g = [r["calls_per_s"] for r in out[k]["gh"]]
        r = [r["calls_per_s"] for r in out[k]["ref"]]
        ratio = med(g) / med(r)
        target = "≥50×" if k in ("seq", "c8") else ""
        lines.append(Line("3 call rate", label, fmt_spread(g, lambda x: f"{x:,.0f}"), fmt_spread(r, lambda x: f"{x:,.0f}"),
                          f"{ratio:.1f}×", target, verdict(ratio >= 50) if target else ""))  # fmt: skip
        for p in ("p50_us", "p99_us"):
            g = [x[p] for x in out[k]["gh"]]
            rr = [x[p] for x in out[k]["ref"]]
            lines.append(Line("3 call rate", f"  {p[:3]} µs, {label.split(', ', 1)[1]}",
                              fmt_spread(g, lambda x: f"{x:,.0f}"), fmt_spread(rr, lambda x: f"{x:,.0f}"),
                              f"1/{med(rr) / med(g):.1f}"))  # fmt: skip
    if before_host:
        lines += host_before_lines(out["host"]["gh"], before_host)
    return lines


def host_before_lines(gh: list, before: list) -> list[Line]:
    """With --before: the host path of this build against the earlier one's, same rounds."""
    rate = lambda rs: [r["calls_per_s"] for r in rs]  # noqa: E731
    lines = [Line("3 call rate", "calls/s, host path: this build (reference column: --before)",
                  fmt_spread(rate(gh), lambda x: f"{x:,.0f}"), fmt_spread(rate(before), lambda x: f"{x:,.0f}"),
                  f"{med(rate(gh)) / med(rate(before)):.2f}×")]  # fmt: skip
    for p in ("p50_us", "p99_us"):
        g, b = [x[p] for x in gh], [x[p] for x in before]
        lines.append(Line("3 call rate", f"  {p[:3]} µs, host path: this build (reference column: --before)",
                          fmt_spread(g, lambda x: f"{x:,.0f}"), fmt_spread(b, lambda x: f"{x:,.0f}"),
                          f"{med(g) / med(b):.2f} of before"))  # fmt: skip
    return lines


def request_bytes(s: Settings) -> int:
    """The size of the tools/call get_ticket request Gatehouse sends, from its recording."""
    rec = s.work / "gh-record.jsonl"
    if not rec.exists() and "--record" in run([GATEHOUSE, "ask", "--help"]).stdout:
        run(gh_ask(support_configs(s.work)[0], "--record", rec))
    if rec.exists():
        for ln in rec.read_text().splitlines():
            d = json.loads(ln)
            if d.get("direction") == "to_server" and d.get("method") == "tools/call":
                return int(d["bytes"])
    return 300


def row_floor(s: Settings) -> list[Line]:
    """Row 4: the transport's floor (a JSON line echoed over a pipe) against Gatehouse's
    per-call round trip, measured the same way: on one CPU, and across two."""
    size = request_bytes(s)
    ident = env_with(MCP_USER="usr-sam", MCP_TENANT="larkfield")
    gh_cfg, _ = support_configs(s.work)
    lines, results = [], {}
    say(f"row 4: pipe floor ({size}-byte line) and per-call round trips, taskset -c 0 and -c 0,1")
    for cpus, label in (("0", "1 CPU"), ("0,1", "2 CPUs")):
        floor, raw, host = [], [], []
        for _ in range(s.rate_rounds):
            floor.append(callrate(["taskset", "-c", cpus, REL / "gh-pipe-floor", "--bytes", size, "--rounds",
                                   s.floor_rounds, "--", ECHO]))  # fmt: skip
            raw.append(callrate(["taskset", "-c", cpus, REL / "gh-callrate", "--mode", "rmcp", "--calls", s.gh_calls,
                                 "--", SERVERS, "support"], ident))  # fmt: skip
            host.append(callrate(["taskset", "-c", cpus, REL / "gh-callrate", "--mode", "host", "--calls", s.gh_calls,
                                  "--config", gh_cfg], ident))  # fmt: skip
        results[cpus] = {"floor": floor, "rmcp": raw, "host": host}
        for p in ("p50_us", "mean_us"):
            f = [x[p] for x in floor]
            for name, runs in (("rmcp client call", raw), ("host path call", host)):
                g = [x[p] for x in runs]
                ratio = med(g) / med(f)
                lines.append(Line(f"4 floor, {label}", f"{p[:-3]} µs: {name} vs pipe floor",
                                  fmt_spread(g, lambda x: f"{x:,.1f}"), fmt_spread(f, lambda x: f"{x:,.1f}"),
                                  f"{ratio:.1f}× floor", "≤4× floor", verdict(ratio <= 4)))  # fmt: skip
    s.results["floor"] = {"bytes": size, **results}
    return lines


HTTP_TOKEN = "gh-bench-token-4b1d"  # loopback only; both servers check its SHA-256
PROTOCOL = "2026-07-28"


def http_request_body() -> str:
    """A 2026-07-28 `tools/call get_ticket T-30002`: the per-request `_meta` carries the
    version, the client's capabilities and its identity (no initialize, no session)."""
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "get_ticket", "arguments": {"ticket_id": "T-30002"},
        "_meta": {"io.modelcontextprotocol/protocolVersion": PROTOCOL,
                  "io.modelcontextprotocol/clientCapabilities": {},
                  "io.modelcontextprotocol/clientInfo": {"name": "gh-bench-wrk", "version": "0.1.0"}}}},
        separators=(",", ":"))  # fmt: skip


HTTP_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": PROTOCOL,
    "Mcp-Method": "tools/call",
    "Mcp-Name": "get_ticket",
    "Authorization": f"Bearer {HTTP_TOKEN}",
}


def wrk_script(work: Path) -> Path:
    lua = ['wrk.method = "POST"', f"wrk.body = {json.dumps(http_request_body())}"]
    lua += [f'wrk.headers["{k}"] = "{v}"' for k, v in HTTP_HEADERS.items()]
    # The summary on stdout as one JSON line (latency in µs), after wrk's own text.
    lua.append("""done = function(summary, latency, requests)
  io.write(string.format('\\nWRKJSON {"requests": %d, "duration_us": %d, "non2xx": %d, "errors": %d, '
    .. '"p50_us": %.1f, "p99_us": %.1f, "mean_us": %.1f}\\n',
    summary.requests, summary.duration, summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    latency:percentile(50), latency:percentile(99), latency.mean))
end""")
    path = work / "tools_call.lua"
    path.write_text("\n".join(lua) + "\n")
    return path


def ensure_wrk() -> None:
    if shutil.which("wrk"):
        return
    say("installing wrk")
    if subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], capture_output=True).returncode != 0:
        run(["apt-get", "update", "-qq"])
        run(["apt-get", "install", "-y", "-qq", "wrk"])


def start_http(cmd, *, env, url_from_stderr: bool, port: int | None, log: Path):
    """Start a server pinned to CPU 1 and wait until it answers on loopback; its URL."""
    errf = open(log, "w+")
    proc = subprocess.Popen(["taskset", "-c", "1", *map(str, cmd)], stdout=subprocess.DEVNULL, stderr=errf, env=env)
    deadline = time.monotonic() + 30
    url = None if url_from_stderr else f"http://127.0.0.1:{port}/mcp"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"row 5: server exited ({proc.returncode}): {log.read_text()[-2000:]}")
        if url is None:
            m = re.search(r"listening on (http://127\.0\.0\.1:\d+/mcp)", log.read_text())
            url = m.group(1) if m else None
        if url is not None:
            try:
                status, _ = http_call(url)
                if status:
                    return proc, url
            except OSError:
                pass
        time.sleep(0.05)
    proc.kill()
    raise SystemExit(f"row 5: server did not start: {log.read_text()[-2000:]}")


def http_call(url: str, token: str = HTTP_TOKEN) -> tuple[int, dict | None]:
    """One tools/call; the status and the JSON-RPC answer (from JSON or an SSE stream)."""
    import urllib.error
    import urllib.request

    headers = dict(HTTP_HEADERS, Authorization=f"Bearer {token}")
    req = urllib.request.Request(url, data=http_request_body().encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            status, text = r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, None
    for cand in [text, *(ln[5:].strip() for ln in text.splitlines() if ln.startswith("data:"))]:
        try:
            msg = json.loads(cand)
        except ValueError:
            continue
        if isinstance(msg, dict) and msg.get("id") == 1:
            return status, msg
    return status, None


def stop(proc) -> None:
    """End a server: SIGTERM, then SIGKILL after 10 s."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def row_http(s: Settings) -> list[Line]:
    """Row 5: tools/call over Streamable HTTP (2026-07-28, stateless), from wrk with 16
    connections on loopback: Gatehouse's `serve support --http --tokens` against the
    reference's `mcp.run("streamable-http", stateless_http=True)` behind the same bearer
    check. Servers on CPU 1, wrk on CPU 0; interleaved rounds."""
    ensure_wrk()
    import hashlib

    digest = hashlib.sha256(HTTP_TOKEN.encode()).hexdigest()
    tokens = write_json(s.work / "tokens.json", [{"user": "usr-sam", "tenant": "larkfield", "sha256": digest}])
    script = wrk_script(s.work)
    ident = env_with(MCP_USER="usr-sam", MCP_TENANT="larkfield")
    secs = 5
    sides = {
        "gh": lambda: start_http([GATEHOUSE, "serve", "support", "--http", "127.0.0.1:0", "--tokens", tokens],
                                 env=ident, url_from_stderr=True, port=None, log=s.work / "gh-http.log"),
        "ref": lambda: (lambda port: start_http([PY, REFERENCE / "support_server.py", "--http", port,
                                                 "--token-sha256", digest], env=ident, url_from_stderr=False,
                                                port=port, log=s.work / "ref-http.log"))(free_port()),
    }  # fmt: skip
    out = {"gh": [], "ref": [], "check": {}}
    say(f"row 5: {s.rate_rounds} interleaved rounds of wrk -t1 -c16 -d{secs}s (servers on CPU 1, wrk on CPU 0)")
    for i in range(s.rate_rounds):
        for side, start in sides.items():
            proc, url = start()
            try:
                if i == 0:
                    status, msg = http_call(url)
                    bad_status, _ = http_call(url, token="wrong-token")
                    ok = status == 200 and msg is not None and "result" in msg and not msg["result"].get("isError")
                    out["check"][side] = {"status": status, "answer": msg, "wrong_token_status": bad_status}
                    if not ok or bad_status != 401:
                        raise SystemExit(f"row 5: {side} did not answer 200 with a result (or took a wrong token): "
                                         f"{status} {msg} / {bad_status}")  # fmt: skip
                p = run(["taskset", "-c", "0", "wrk", "-t1", "-c16", f"-d{secs}s", "--latency", "-s", script, url],
                        timeout=secs + 60)  # fmt: skip
                res = json.loads(p.stdout.split("WRKJSON ", 1)[1].splitlines()[0])
                res["rps"] = res["requests"] / (res["duration_us"] / 1e6)
                if res["non2xx"] or res["errors"]:
                    raise SystemExit(f"row 5: {side}: {res['non2xx']} non-2xx answers, {res['errors']} errors")
                out[side].append(res)
            finally:
                stop(proc)
    s.results["http"] = out
    g = [r["rps"] for r in out["gh"]]
    r = [r["rps"] for r in out["ref"]]
    ratio = med(g) / med(r)
    gp50, gp99 = med([x["p50_us"] for x in out["gh"]]), med([x["p99_us"] for x in out["gh"]])
    rp50, rp99 = med([x["p50_us"] for x in out["ref"]]), med([x["p99_us"] for x in out["ref"]])
    num = lambda x: f"{x:,.0f}"  # noqa: E731
    return [
        Line("5 HTTP", "tools/call requests/s, 16 connections (wrk)", fmt_spread(g, num), fmt_spread(r, num),
             f"{ratio:.1f}×", "≥15×", verdict(ratio >= 15)),  # fmt: skip
        Line("5 HTTP", "  p50 / p99 µs, 16 connections", f"{num(gp50)} / {num(gp99)}", f"{num(rp50)} / {num(rp99)}",
             f"1/{rp50 / gp50:.1f}, 1/{rp99 / gp99:.1f}", "GH p99 < ref p50",
             verdict(gp99 < rp50) + (f" ({rp50 / gp99:.1f}×)" if gp99 < rp50 else "")),  # fmt: skip
    ]


def row_scale(s: Settings) -> list[Line]:
    """Row 6: catalog scale, 20 servers of 50 tools: time to a ready catalog, memory, and
    the bytes of tool definitions sent to the model with every model call."""
    gh_cfg, ref_cfg = scale_configs(s)
    n = s.servers
    # The same tools on both sides, in the same order.
    gh_names = [t["name"] for t in json.loads(run([GATEHOUSE, "tools", "--config", gh_cfg, "--json"]).stdout)]
    stats_file = s.work / "ref-scale-stats.json"
    ref_names = [t["name"] for t in json.loads(run([PY, REFERENCE / "host.py", "tools", "--config", ref_cfg, "--json",
                                                    "--stats", stats_file]).stdout)]  # fmt: skip
    if gh_names != ref_names or len(gh_names) != n * s.tools_per_server:
        raise SystemExit(f"row 6: the catalogs differ ({len(gh_names)} and {len(ref_names)} tools); nothing is timed")
    gh_t, ref_t, before_t = [], [], []
    say(f"row 6: {s.scale_pairs} interleaved pairs of `tools` on {n} servers × {s.tools_per_server} tools")
    for _ in range(s.scale_pairs):
        gh_t.append(timed([GATEHOUSE, "tools", "--config", gh_cfg, "--json"])[0] * 1000)
        ref_t.append(timed([PY, REFERENCE / "host.py", "tools", "--config", ref_cfg, "--json"])[0] * 1000)
        if s.before:
            before_t.append(timed([s.before, "tools", "--config", gh_cfg, "--json"])[0] * 1000)
    mem_dir = s.work / "mem-scale"
    mem_dir.mkdir(exist_ok=True)
    gh_mcfg, ref_mcfg = scale_configs(s, mem_dir)
    mem = {}
    say("row 6: one run each for peak memory (servers under peakrss)")
    sides = [("gh", [GATEHOUSE, "tools", "--config", gh_mcfg, "--json"]),
             ("ref", [PY, REFERENCE / "host.py", "tools", "--config", ref_mcfg, "--json"])]  # fmt: skip
    if s.before:
        sides.append(("before", [s.before, "tools", "--config", gh_mcfg, "--json"]))
    for tag, cmd in sides:
        # The before binary runs the same Gatehouse servers: their peaks are written as gh's.
        watch = watch_peak(cmd)
        servers = [read_peak(mem_dir / f"{'gh' if tag == 'before' else tag}-s{i:02}.kb") for i in range(n)]
        mem[tag] = {"host_kb": host_peak(watch, servers), "servers_kb": servers}
    ctx = json.loads(run([REL / "gh-context", "--config", gh_cfg]).stdout)
    ref_stats = json.loads(stats_file.read_text())
    built = json.loads(run([REL / "gh-context", "--catalog-memory", n * s.tools_per_server]).stdout)
    quality = json.loads(run([REL / "gh-context", "--catalog-memory-quality"]).stdout)
    s.results["scale"] = {"gh_ms": gh_t, "ref_ms": ref_t, "before_ms": before_t, "memory": mem, "gh_context": ctx, "ref_stats": ref_stats,
                          "catalog_memory": built, "quality_catalog_memory": quality}  # fmt: skip
    speed = med(ref_t) / med(gh_t)
    host_r = mem["ref"]["host_kb"] / mem["gh"]["host_kb"]
    srv_r = med(mem["ref"]["servers_kb"]) / med(mem["gh"]["servers_kb"])
    worst = max(mem["gh"]["servers_kb"]) / 1024
    gb, rb = ctx["model_bytes"], ref_stats["model_tools_bytes"]
    return [
        Line("6 catalog 20×50", "time to a ready catalog (`tools`)", fmt_spread(gh_t, fmt_ms),
             fmt_spread(ref_t, fmt_ms), f"{speed:.0f}× faster"),  # fmt: skip
        Line("6 catalog 20×50", "peak RSS, host", fmt_kb(mem["gh"]["host_kb"]), fmt_kb(mem["ref"]["host_kb"]),
             f"1/{host_r:.1f}", "≤1/8", verdict(host_r >= 8)),  # fmt: skip
        Line("6 catalog 20×50", f"peak RSS, each server (median; Gatehouse max {worst:.1f} MiB)",
             fmt_kb(med(mem["gh"]["servers_kb"])), fmt_kb(med(mem["ref"]["servers_kb"])), f"1/{srv_r:.1f}", "≤1/8",
             verdict(srv_r >= 8)),  # fmt: skip
        Line("6 catalog 20×50", "tool definitions, every one (as before; toolSearch never)", f"{gb:,} B (~{gb // 4:,} tok)",
             f"{rb:,} B (~{rb // 4:,} tok)", f"{gb / rb:.2f}"),  # fmt: skip
        *before_lines(s, gh_t, before_t, mem),
        *searched_lines("6 catalog 20×50", ctx, rb),
        *build_lines("6 catalog 20×50", "row 6's generated tools", built),
        *build_lines("6 catalog 20×50", "the quality set's 1,000 tools", quality),
    ]


def before_lines(s: Settings, gh_t: list, before_t: list, mem: dict) -> list[Line]:
    """With --before: the earlier binary on the same catalog, in the same run."""
    if not s.before:
        return []
    ratio = med(before_t) / med(gh_t)
    mb, mg = mem["before"]["host_kb"], mem["gh"]["host_kb"]
    return [
        Line("6 catalog 20×50", "time to a ready catalog: this build (reference column: --before)",
             fmt_spread(gh_t, fmt_ms), fmt_spread(before_t, fmt_ms), f"{ratio:.2f}× faster"),  # fmt: skip
        Line("6 catalog 20×50", "peak RSS, host: this build (reference column: --before)", fmt_kb(mg), fmt_kb(mb),
             f"1/{mb / mg:.2f}"),  # fmt: skip
    ]


def searched_lines(row: str, ctx: dict, before: int) -> list[Line]:
    """The largest model call of the README's turn, now, against every definition."""
    mc = ctx["max_call_bytes"]
    calls = ", ".join(f"{c['bytes']:,}" for c in ctx["per_call"])
    return [
        Line(row, f"tool definitions per model call, largest of a turn (each call: {calls} B)",
             f"{mc:,} B (~{mc // 4:,} tok)", f"every one: {before:,} B", f"1/{before / mc:.0f}" if mc else "–",
             "≤16 KB", verdict(mc <= 16 * 1024)),  # fmt: skip
    ]


def build_lines(row: str, what: str, m: dict) -> list[Line]:
    """The catalog's build in one process: schemas checked and compiled on first use (now)
    against every schema compiled and kept at build (the host before)."""
    before_kb = m["catalog_build_kb"] + m["eager_compiled_kb"]
    return [
        Line(row, f"catalog memory, {what} (reference column: every schema compiled and kept, as before)",
             fmt_kb(m["catalog_build_kb"]), fmt_kb(before_kb), f"1/{before_kb / max(m['catalog_build_kb'], 1):.1f}"),
        Line(row, f"catalog build time, {what} (each distinct schema compiled once to check it)",
             fmt_ms(m["catalog_build_ms"]), fmt_ms(m["catalog_build_ms"] + m["eager_compile_ms"]), ""),
    ]


def row_context(s: Settings) -> list[Line]:
    """Row 7: context cost of the built-in servers: the raw MCP definitions (tools/list)
    against what Gatehouse sends the model with every call."""
    db = s.work / "tickets.db"
    ctx = json.loads(run([REL / "gh-context", "--built-in", GATEHOUSE],
                         env=env_with(GATEHOUSE_TICKETS_DB=str(db))).stdout)  # fmt: skip
    s.results["context"] = ctx
    raw, sent = ctx["raw_defs_bytes"], ctx["model_bytes"]
    kept = "yes" if ctx["parameters_identical_to_input_schema"] else "NO"
    per = ", ".join(f"{x['server']} {x['raw_defs_bytes']:,} B" for x in ctx["servers"])
    extra = f" (+ host tool {', '.join(ctx['host_tools'])})" if ctx["host_tools"] else ""
    mc = ctx["max_call_bytes"]
    return [
        Line("7 context", f"tool definitions per model call, {ctx['tools']} tools{extra}",
             f"{sent:,} B (~{ctx['model_tokens']:,} tok)", f"raw MCP: {raw:,} B (~{ctx['raw_defs_tokens']:,} tok)",
             f"{sent / raw:.2f} of raw"),  # fmt: skip
        Line("7 context", f"largest model call of the README's turn ({len(ctx['per_call'])} calls; within the budget: every definition)",
             f"{mc:,} B", f"before: {sent:,} B", f"{mc / sent:.2f}", "≤16 KB", verdict(mc <= 16 * 1024)),  # fmt: skip
        Line("7 context", f"raw tools/list by server: {per}", "", "", ""),
        Line("7 context", "every inputSchema constraint kept (parameters == inputSchema)", kept, "", ""),
    ]


def row_tool_search(s: Settings) -> list[Line]:
    """Row 8: tool search quality on bench/catalog (1,000 tools, the requests as people type
    them): top-1 and top-5 recall of the host's search_tools against a plain BM25 over names
    and descriptions, and what each part of the ranker adds."""
    say("row 8: tool search on the quality set")
    q = json.loads(run([REL / "gh-toolsearch"]).stdout)
    s.results["tool_search"] = q
    lines = []
    # The targets are on the test part (never tuned on); fresh was written without reading
    # the tools (bench/catalog/README.md).
    for part, target in (("test", True), ("fresh", False)):
        host, plain = q["host_parts"][part], q["plain_bm25_parts"][part]
        n = host["requests"]
        lines += [
            Line("8 tool search", f"top-5 recall, {part} part, {n} requests over {q['catalog_tools']:,} tools (reference: plain BM25)",
                 f"{host['top5']:.1f} %", f"{plain['top5']:.1f} %", f"{host['top5'] - plain['top5']:+.1f} pts",
                 "≥90 %" if target else "", verdict(host["top5"] >= 90) if target else ""),  # fmt: skip
            Line("8 tool search", f"top-1 recall, {part} part", f"{host['top1']:.1f} %", f"{plain['top1']:.1f} %",
                 f"{host['top1'] - plain['top1']:+.1f} pts", "≥65 %" if target else "",
                 verdict(host["top1"] >= 65) if target else ""),  # fmt: skip
        ]
    for step in q["steps"]:
        parts = " · ".join(f"{p} {t1:.1f} / {t5:.1f} %" for p, (t1, t5) in step["top1_top5"].items())
        lines.append(Line("8 tool search", f"  {step['method']}: top-1 / top-5", parts, "", ""))
    told = q["nothing_good"]["fresh"]["no_right_tool_turned_away"]
    lines.append(Line("8 tool search", "fresh requests no tool serves, told nothing fits", f"{told[0]} of {told[1]}", "", ""))
    lines.append(Line("8 tool search", "index build (1,000 tools) / one search", f"{q['index_build_ms']:.1f} ms / {q['search_ms']:.2f} ms", "", ""))
    return lines


def row_gateway(s: Settings) -> list[Line]:
    """Row 9: `gatehouse gateway` against the same call made direct (bench/gateway_row.py)."""
    sys.path.insert(0, str(BENCH))
    import gateway_row

    return gateway_row.row(s, sys.modules[__name__])


def row_load(s: Settings) -> list[Line]:
    """Row 10: the gateway under load, every decision durable (bench/load_row.py)."""
    sys.path.insert(0, str(BENCH))
    import load_row

    return load_row.row(s, sys.modules[__name__])


ROWS = [row_cold_ask, row_first_answer, row_call_rate, row_floor, row_http, row_scale, row_context, row_tool_search,
        row_gateway, row_load]  # fmt: skip


# ---------------------------------------------------------------------------------- main


def machine() -> dict:
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), platform.processor())  # fmt: skip
    sqlite = run([PY, "-c", "import sqlite3; print(sqlite3.sqlite_version)"]).stdout.strip()
    mcp = run([PY, "-c", "import importlib.metadata as m; print(m.version('mcp'))"]).stdout.strip()
    return {
        "nproc": os.cpu_count(), "cpu": cpu, "kernel": platform.release(),
        "python": run([PY, "--version"]).stdout.strip(), "mcp": mcp, "python_sqlite": sqlite,
        "gatehouse": run([GATEHOUSE, "--version"]).stdout.strip(),
        "rustc": (run(["rustc", "--version"], check=False).stdout.strip() if shutil.which("rustc") else "?"),
    }  # fmt: skip


def table(lines: list[Line]) -> str:
    head = Line("row", "metric", "Gatehouse", "reference", "ratio", "target", "")
    cols = [head, *lines]
    widths = [max(len(getattr(c, f)) for c in cols) for f in ("row", "metric", "gh", "ref", "ratio", "target", "met")]
    out = []
    for i, c in enumerate(cols):
        cells = [getattr(c, f).ljust(w) for f, w in zip(("row", "metric", "gh", "ref", "ratio", "target", "met"), widths)]
        out.append("| " + " | ".join(cells) + " |")
        if i == 0:
            out.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--quick", action="store_true", help="fewer runs (about 2 minutes)")
    p.add_argument("--rows", help="only these rows, e.g. 1,3,7")
    p.add_argument("--out", default=str(BENCH / "results"), help="where to keep the results (JSON and table)")
    p.add_argument("--before", help="an earlier gatehouse binary: rows 1 and 6 time it beside this build (row 6 its peak memory too), "
                   "row 3 its sibling gh-callrate's host path")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="gatehouse-bench-") as tmp:
        s = Settings(quick=args.quick, work=Path(tmp), before=Path(args.before) if args.before else None)
        start = time.perf_counter()
        info = machine()
        say(f"machine: {info['nproc']} × {info['cpu']}; {info['gatehouse']}; {info['python']}, mcp {info['mcp']}")
        check_parity(s)
        wanted = {int(x) for x in args.rows.split(",")} if args.rows else None
        lines: list[Line] = []
        for i, row in enumerate(ROWS, start=1):
            if wanted is None or i in wanted:
                lines.extend(row(s))
        elapsed = time.perf_counter() - start
        text = table(lines)
        mode = "quick" if args.quick else "full"
        header = (f"Gatehouse vs the Python SDK reference ({mode} run, {elapsed:.0f} s) on {info['nproc']} × "
                  f"{info['cpu']}, {info['kernel']}; {info['gatehouse']}, {info['rustc']}; {info['python']}, "
                  f"mcp {info['mcp']}. Median [min–max] over interleaved runs.")  # fmt: skip
        print(header)
        print()
        print(text)
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "latest.md").write_text(header + "\n\n" + text + "\n")
        s.results["machine"] = info
        s.results["elapsed_s"] = elapsed
        (out / "latest.json").write_text(json.dumps(s.results, indent=2, default=str))
        say(f"kept in {out}/latest.md and latest.json")


if __name__ == "__main__":
    main()
