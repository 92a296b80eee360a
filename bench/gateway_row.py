"""Row 9 of bench/run: what `gatehouse gateway` adds to a call, measured against the same call
made direct, in the same run (issue 20's figures).

- stdio: `gh-callrate` calls `get_ticket` on `gatehouse serve support` direct, and
  `support__get_ticket` through `gatehouse gateway` in front of the same server (p50, p99).
- HTTP: wrk, 16 connections, `tools/call` on 2026-07-28 (stateless) to `serve support
  --http` direct and to `gateway --http` in front of it (requests/s, p50, p99).
- Replicas: the same wrk run through nginx to one gateway replica and to two sharing one
  state store (on this 2-core machine the second replica has no core of its own, so the
  figure says what a replica costs more than what it gains).
- Memory per connected client: the gateway's resident memory after 200 more legacy
  (2025-11-25) sessions, per session.
- The second round of a confirmation: round 1 on replica A, round 2 on A or on B (the
  other replica opens the sealed state from the shared store), median time of round 2.

The ledger is off in these servers files (as in row 3's host path): a decision's ledger
line is a disk sync that follows the disk, measured in docs/benchmarks.md. The module is
kept apart from harness.py, whose helpers it takes as `h`, so that the harness stays one
screenful per row.
"""

import hashlib
import json
import re
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

SESSIONS = 195  # legacy sessions opened for the memory-per-client figure
PER_CALLER = 15  # under the HTTP layer's bound of 16 sessions per caller
MEMORY_CALLERS = [f"gh-bench-caller-{i:02d}" for i in range((SESSIONS + PER_CALLER - 1) // PER_CALLER)]
CONFIRMATIONS = 40  # second rounds timed on each replica
WRK_SECS = 4
NGINX = "/usr/sbin/nginx"


def servers_file(h, work: Path, name: str, rules: list | None = None) -> Path:
    """The gateway's servers file: the support desk as Sam of Larkfield, every tool allowed
    (or these rules), no ledger."""
    rules = rules if rules is not None else [{"tool": "support__*", "decision": "allow"}]
    gatehouse = {"rules": rules, "ledger": False}
    return h.write_json(work / name, {
        "mcpServers": {"support": {"command": str(h.SERVERS), "args": ["support"],
                                   "env": {"MCP_USER": "usr-sam", "MCP_TENANT": "larkfield"}}},
        "gatehouse": gatehouse,
    })  # fmt: skip


def body(tool: str, rid: int = 1, **extra) -> bytes:
    params = {"name": tool, "arguments": {"ticket_id": "T-30002"}, **extra,
              "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
                        "io.modelcontextprotocol/clientInfo": {"name": "gh-bench", "version": "0.1.0"}}}  # fmt: skip
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}).encode()


def headers(h, tool: str) -> dict:
    return dict(h.HTTP_HEADERS, **{"Mcp-Name": tool})


def post(url: str, data: bytes, hdrs: dict) -> tuple[int, dict | None, dict]:
    """One POST; the status, the JSON-RPC message (JSON or the first SSE `data:` that
    parses) and the response headers."""
    req = urllib.request.Request(url, data=data, headers=hdrs, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            status, text, got = r.status, r.read().decode(), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, None, dict(e.headers)
    for cand in [text, *(ln[5:].strip() for ln in text.splitlines() if ln.startswith("data:"))]:
        try:
            msg = json.loads(cand)
        except ValueError:
            continue
        if isinstance(msg, dict) and ("result" in msg or "error" in msg):
            return status, msg, got
    return status, None, got


def result_of(msg: dict | None, what: str) -> dict:
    if not msg or "result" not in msg:
        raise SystemExit(f"row 9: {what}: no result: {msg}")
    return msg["result"]


def wrk(h, script: Path, url: str, pin: bool = True) -> dict:
    cmd = ["wrk", "-t1", "-c16", f"-d{WRK_SECS}s", "--latency", "-s", script, url]
    p = h.run((["taskset", "-c", "0"] if pin else []) + cmd, timeout=WRK_SECS + 60)
    res = json.loads(p.stdout.split("WRKJSON ", 1)[1].splitlines()[0])
    res["rps"] = res["requests"] / (res["duration_us"] / 1e6)
    if res["non2xx"] or res["errors"]:
        raise SystemExit(f"row 9: {url}: {res['non2xx']} non-2xx answers, {res['errors']} errors")
    return res


def wrk_script_for(h, work: Path, tool: str) -> Path:
    """row 5's wrk script, calling `tool` (the gateway names it SERVER__TOOL)."""
    base = h.wrk_script(work).read_text()
    base = base.replace('\\"name\\":\\"get_ticket\\"', f'\\"name\\":\\"{tool}\\"')
    base = base.replace('wrk.headers["Mcp-Name"] = "get_ticket"', f'wrk.headers["Mcp-Name"] = "{tool}"')
    path = work / f"call-{tool}.lua"
    path.write_text(base)
    return path


def start_gateway(h, work: Path, config: Path, state: Path, tokens: Path, log: str, pin: bool = True):
    cmd = [h.GATEHOUSE, "gateway", "--config", config, "--state", state, "--http", "127.0.0.1:0",
           "--tokens", tokens, "-q"]  # fmt: skip
    errf = open(work / log, "w+")
    proc = subprocess.Popen([*(["taskset", "-c", "1"] if pin else []), *map(str, cmd)],
                            stdout=subprocess.DEVNULL, stderr=errf)  # fmt: skip
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"row 9: the gateway exited: {(work / log).read_text()[-2000:]}")
        m = re.search(r"(http://127\.0\.0\.1:\d+/mcp)", (work / log).read_text())
        if m:
            url = m.group(1)
            status, msg, _ = post(url, body("support__get_ticket"), headers(h, "support__get_ticket"))
            if status == 200 and msg and "result" in msg:
                return proc, url
        time.sleep(0.05)
    h.stop(proc)
    raise SystemExit(f"row 9: the gateway did not start: {(work / log).read_text()[-2000:]}")


def start_nginx(work: Path, ports: list[int], port: int, connections: int = 256):
    d = work / f"nginx-{len(ports)}"
    d.mkdir(exist_ok=True)
    upstream = "".join(f"    server 127.0.0.1:{p};\n" for p in ports)
    # One process in the foreground (no master, no workers): the row owns its pid.
    (d / "nginx.conf").write_text(f"""daemon off; master_process off; worker_processes 1;
pid {d}/nginx.pid; error_log {d}/error.log warn;
events {{ worker_connections {connections}; }}
http {{
  access_log off;
  client_body_temp_path {d}/b; proxy_temp_path {d}/p; fastcgi_temp_path {d}/f;
  uwsgi_temp_path {d}/u; scgi_temp_path {d}/s;
  upstream gw {{
{upstream}    keepalive 32;
  }}
  server {{
    listen 127.0.0.1:{port};
    location /mcp {{
      proxy_pass http://gw; proxy_http_version 1.1; proxy_set_header Host $http_host;
      proxy_set_header Connection ""; proxy_buffering off;
    }}
  }}
}}
""")
    proc = subprocess.Popen([NGINX, "-c", d / "nginx.conf", "-p", d], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)  # fmt: skip
    time.sleep(0.3)
    if proc.poll() is not None:
        raise SystemExit(f"row 9: nginx exited: {(d / 'error.log').read_text()[-2000:]}")
    return proc, f"http://127.0.0.1:{port}/mcp"


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise SystemExit(f"row 9: no VmRSS for {pid}")


def open_session(h, url: str, token: str) -> str:
    """A 2025-11-25 session (initialize, then initialized) with this bearer token; its id."""
    hdrs = {k: v for k, v in h.HTTP_HEADERS.items() if k not in ("MCP-Protocol-Version", "Mcp-Method", "Mcp-Name")}
    hdrs["Authorization"] = f"Bearer {token}"
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "gh-bench", "version": "0"}}}
    status, msg, got = post(url, json.dumps(init).encode(), hdrs)
    sid = next((v for k, v in got.items() if k.lower() == "mcp-session-id"), None)
    if status != 200 or not sid:
        raise SystemExit(f"row 9: initialize answered {status} without a session: {msg}")
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    hdrs = dict(hdrs, **{"Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"})
    req = urllib.request.Request(url, data=json.dumps(note).encode(), headers=hdrs, method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        r.read()
    return sid


def second_rounds(h, url_a: str, url_b: str) -> dict:
    """Confirmations begun on A and finished on A or on B; round 2's times, in ms."""
    tool = "support__get_ticket"
    times = {"same": [], "other": []}
    for i in range(CONFIRMATIONS):
        for where, url in (("same", url_a), ("other", url_b)):
            _, msg, _ = post(url_a, body(tool, 2 * i + 1), headers(h, tool))
            asked = result_of(msg, "round 1")
            if asked.get("resultType") != "input_required":
                raise SystemExit(f"row 9: round 1 did not ask: {asked}")
            answer = {"gatehouse.approve": {"action": "accept", "content": {"approve": True}}}
            data = body(tool, 2 * i + 2, requestState=asked["requestState"], inputResponses=answer)
            start = time.perf_counter()
            _, msg, _ = post(url, data, headers(h, tool))
            took = (time.perf_counter() - start) * 1000
            done = result_of(msg, "round 2")
            if done.get("isError") or done.get("resultType") == "input_required":
                raise SystemExit(f"row 9: round 2 on {where} did not run the call: {done}")
            times[where].append(took)
    return times


def row(s, h) -> list:
    """Row 9: the gateway against the same call made direct."""
    h.ensure_wrk()
    work = s.work / "gateway"
    work.mkdir(exist_ok=True)
    digest = hashlib.sha256(h.HTTP_TOKEN.encode()).hexdigest()
    # Sam, and the callers of the memory figure (each may hold PER_CALLER sessions).
    holders = [{"user": "usr-sam", "tenant": "larkfield", "sha256": digest}]
    holders += [{"user": f"usr-{t}", "tenant": "larkfield", "sha256": hashlib.sha256(t.encode()).hexdigest()}
                for t in MEMORY_CALLERS]  # fmt: skip
    tokens = h.write_json(work / "tokens.json", holders)
    config = servers_file(h, work, "servers.json")
    ident = h.env_with(MCP_USER="usr-sam", MCP_TENANT="larkfield")
    out: dict = {"stdio": {"direct": [], "gateway": []}, "http": {"direct": [], "gateway": []}}

    # stdio, interleaved rounds
    calls = s.gh_calls // 2
    say = h.say
    say(f"row 9: {s.rate_rounds} interleaved rounds of {calls} stdio calls, direct and through the gateway")
    for i in range(s.rate_rounds):
        out["stdio"]["direct"].append(h.callrate(
            [h.REL / "gh-callrate", "--mode", "rmcp", "--calls", calls, "--", h.SERVERS, "support"], ident))
        out["stdio"]["gateway"].append(h.callrate(
            [h.REL / "gh-callrate", "--mode", "rmcp", "--calls", calls, "--tool", "support__get_ticket", "--",
             h.GATEHOUSE, "gateway", "--config", config, "--state", work / f"stdio-{i}.db", "-q"], ident))  # fmt: skip

    # HTTP, interleaved rounds
    direct_script = h.wrk_script(work)
    gw_script = wrk_script_for(h, work, "support__get_ticket")
    say(f"row 9: {s.rate_rounds} interleaved rounds of wrk -c16 -d{WRK_SECS}s, direct and through the gateway")
    for i in range(s.rate_rounds):
        proc, url = h.start_http([h.GATEHOUSE, "serve", "support", "--http", "127.0.0.1:0", "--tokens", tokens],
                                 env=ident, url_from_stderr=True, port=None, log=work / "direct.log")  # fmt: skip
        try:
            out["http"]["direct"].append(wrk(h, direct_script, url))
        finally:
            h.stop(proc)
        proc, url = start_gateway(h, work, config, work / f"http-{i}.db", tokens, "gw.log")
        try:
            out["http"]["gateway"].append(wrk(h, gw_script, url))
        finally:
            h.stop(proc)

    # memory per legacy session, on one gateway
    proc, url = start_gateway(h, work, config, work / "mem.db", tokens, "gw-mem.log")
    try:
        open_session(h, url, h.HTTP_TOKEN)
        before = rss_kb(proc.pid)
        for i in range(SESSIONS):
            open_session(h, url, MEMORY_CALLERS[i // PER_CALLER])
        after = rss_kb(proc.pid)
    finally:
        h.stop(proc)
    out["memory"] = {"before_kb": before, "after_kb": after, "sessions": SESSIONS}

    # replicas behind nginx, and the second round on the other replica
    state = work / "replicas.db"
    ask = servers_file(h, work, "ask.json", rules=[{"tool": "support__get_ticket", "decision": "ask"}])
    a, url_a = start_gateway(h, work, config, state, tokens, "gw-a.log", pin=False)
    b, url_b = start_gateway(h, work, config, state, tokens, "gw-b.log", pin=False)
    port_a, port_b = (int(u.rsplit(":", 1)[1].split("/")[0]) for u in (url_a, url_b))
    try:
        out["replicas"] = {"one": [], "two": []}
        for i in range(s.rate_rounds):
            for key, ports in (("one", [port_a]), ("two", [port_a, port_b])):
                ngx, url = start_nginx(work, ports, h.free_port())
                try:
                    out["replicas"][key].append(wrk(h, gw_script, url, pin=False))
                finally:
                    h.stop(ngx)
    finally:
        h.stop(a)
        h.stop(b)
    qa, q_url_a = start_gateway(h, work, ask, work / "ask.db", tokens, "gw-qa.log", pin=False)
    qb, q_url_b = start_gateway(h, work, ask, work / "ask.db", tokens, "gw-qb.log", pin=False)
    try:
        out["second_round_ms"] = second_rounds(h, q_url_a, q_url_b)
    finally:
        h.stop(qa)
        h.stop(qb)
    s.results["gateway"] = out
    return lines(h, out)


def lines(h, out: dict) -> list:
    num = lambda x: f"{x:,.0f}"  # noqa: E731
    L = h.Line
    rows = []
    for transport in ("stdio", "http"):
        d, g = out[transport]["direct"], out[transport]["gateway"]
        rate = "calls_per_s" if transport == "stdio" else "rps"
        gd, gg = [x[rate] for x in d], [x[rate] for x in g]
        rows.append(L("9 gateway", f"{transport}: calls/s, through the gateway", h.fmt_spread(gg, num),
                      h.fmt_spread(gd, num) + " direct", f"1/{h.med(gd) / h.med(gg):.1f}"))  # fmt: skip
        for p in ("p50_us", "p99_us"):
            xd, xg = [x[p] for x in d], [x[p] for x in g]
            rows.append(L("9 gateway", f"  {transport}: {p[:3]} µs per call (added)", h.fmt_spread(xg, num),
                          h.fmt_spread(xd, num) + " direct",
                          f"{h.med(xg) / h.med(xd):.1f}× (+{num(h.med(xg) - h.med(xd))} µs)"))  # fmt: skip
    one, two = ([x["rps"] for x in out["replicas"][k]] for k in ("one", "two"))
    rows.append(L("9 gateway", "HTTP via nginx: requests/s, two replicas", h.fmt_spread(two, num),
                  h.fmt_spread(one, num) + " one", f"{h.med(two) / h.med(one):.2f}×"))  # fmt: skip
    m = out["memory"]
    per = (m["after_kb"] - m["before_kb"]) / m["sessions"]
    rows.append(L("9 gateway", f"memory per client ({m['sessions']} legacy sessions)", f"{per:.1f} KiB",
                  f"{h.fmt_kb(m['before_kb'])} with one", ""))  # fmt: skip
    same, other = out["second_round_ms"]["same"], out["second_round_ms"]["other"]
    rows.append(L("9 gateway", "confirmation round 2, ms (other replica)", h.fmt_spread(other, lambda x: f"{x:.2f}"),
                  h.fmt_spread(same, lambda x: f"{x:.2f}") + " same", f"{h.med(other) / h.med(same):.2f}×"))  # fmt: skip
    return rows
