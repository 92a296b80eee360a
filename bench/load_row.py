"""Row 10 of bench/run: the gateway under load, every decision durable (issue 33).

`gh-gateload` plays many MCP clients at once over Streamable HTTP, each a caller with its own
bearer token and connection, speaking 2026-07-28, with a mix of operations on the support
desk: allowed calls, calls a rule denies, calls a rule asks about (the person's yes sent as
round 2, which nginx may hand to the other replica, when there are two), tools/list and
resources/read. The
ledger is on in every run but the reference: a decision's line is durable before its call
is sent. Measured:

- closed loop at 1, 16 and 64 callers: one replica on SQLite (the ledger file), one and two
  replicas on PostgreSQL (the ledger in it) behind nginx; the reference is one replica on
  SQLite with the ledger off, in the same run;
- open loop at rising rates (latency from when each operation was due, so a stall is not
  hidden): the highest rate each setup holds with the calls' p99 at or under 25 ms;
- one replica on PostgreSQL confined to CPU 0, with PostgreSQL, nginx and the callers on
  CPU 1: what one core of gateway gives, which docs/scaling.md multiplies;
- memory per connected caller: a replica's resident memory once 1,000 callers have each
  made a call and hold their connection, against before.

Every run is checked: no unexpected answer, nothing shed, and exactly one ledger line per
decision (a caller's first call included). A PostgreSQL cluster is made in a temporary
folder for the row and removed after it.
"""

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import gateway_row

CALLERS = [1, 16, 64]
TARGET_RATE = 2_000  # durable decisions per second per replica at 64 callers
TARGET_P99_MS = 25.0
MEMORY_CALLERS = 1_000
RULES = [
    {"tool": "support__get_ticket", "when": {"pointer": "/ticket_id", "glob": "T-9*"},
     "decision": "deny", "reason": "archived tickets are not read through the gateway"},
    {"tool": "support__get_ticket", "when": {"pointer": "/ticket_id", "equals": "T-30001"}, "decision": "ask"},
    {"tool": "support__*", "decision": "allow"},
]  # fmt: skip


def servers_file(h, work: Path, name: str, ledger: Path | None) -> Path:
    """The support desk as Sam of Larkfield, with its own names (so its resources pass
    through), the rules above, and the ledger in `ledger` (or off)."""
    gatehouse = {"rules": RULES, "gatewayNames": "unprefixed",
                 "ledger": {"path": str(ledger)} if ledger else False}  # fmt: skip
    return h.write_json(work / name, {
        "mcpServers": {"support": {"command": str(h.SERVERS), "args": ["support"],
                                   "env": {"MCP_USER": "usr-sam", "MCP_TENANT": "larkfield"}}},
        "gatehouse": gatehouse,
    })  # fmt: skip


class Postgres:
    """A throwaway PostgreSQL cluster, run as the `postgres` user when we are root."""

    def __init__(self, work: Path, cpus: str | None = None):
        found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
        if not found:
            raise SystemExit("row 10: PostgreSQL is missing (bench/run installs it; or scripts/install-test-peers.sh postgres)")
        self.bin = found[-1].parent
        # A folder of its own under /tmp: the bench's work folder is root's alone, and the
        # cluster runs as `postgres` when we are root.
        self.dir = Path(tempfile.mkdtemp(prefix=f"gatehouse-bench-pg-{work.name}-"))
        self.as_user = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
        if self.as_user:
            subprocess.run(["chown", "postgres:", self.dir], check=True)
        self.port = free_port()
        self.db = 0
        def run(*cmd):
            p = subprocess.run([*self.as_user, *map(str, cmd)], capture_output=True, text=True)
            if p.returncode != 0:
                raise SystemExit(f"row 10: {' '.join(map(str, cmd))} failed: {p.stderr[-2000:]}")
        run(self.bin / "initdb", "-D", self.dir / "data", "-U", "postgres", "-A", "trust", "-E", "UTF8")
        pin = ["taskset", "-c", cpus] if cpus else []
        subprocess.run([*self.as_user, *pin, str(self.bin / "pg_ctl"), "start", "-w", "-D", str(self.dir / "data"),
                        "-l", str(self.dir / "pg.log"),
                        "-o", f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c max_connections=200"],
                       check=True, stdout=subprocess.DEVNULL)  # fmt: skip
        self._run = run

    def fresh(self) -> str:
        """A new empty database's URL."""
        self.db += 1
        name = f"load{self.db}"
        self._run(self.bin / "createdb", "-h", "127.0.0.1", "-p", self.port, "-U", "postgres", name)
        return f"postgres://postgres@127.0.0.1:{self.port}/{name}"

    def wal_syncs(self) -> int:
        """How many times the cluster has synced its WAL (`pg_stat_wal.wal_sync`): each
        commit that wrote anything, however many decisions it holds."""
        p = subprocess.run([*self.as_user, str(self.bin / "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U",
                            "postgres", "-d", "postgres", "-tAc", "select wal_sync from pg_stat_wal"],
                           check=True, capture_output=True, text=True)  # fmt: skip
        return int(p.stdout.strip())

    def lines(self, url: str) -> int:
        name = url.rsplit("/", 1)[1]
        p = subprocess.run([*self.as_user, str(self.bin / "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U",
                            "postgres", "-d", name, "-tAc", "select count(*) from gatehouse_ledger"],
                           check=True, capture_output=True, text=True)  # fmt: skip
        return int(p.stdout.strip())

    def stop(self) -> None:
        subprocess.run([*self.as_user, str(self.bin / "pg_ctl"), "stop", "-w", "-m", "fast", "-D",
                        str(self.dir / "data")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        shutil.rmtree(self.dir, ignore_errors=True)


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_replica(h, work: Path, config: Path, state: str, tokens: Path, log: str, key: Path | None,
                  cpus: str | None = None):
    """One `gateway --http`; its process and URL once it answers tools/list."""
    cmd = [h.GATEHOUSE, "gateway", "--config", config, "--state", state, "--http", "127.0.0.1:0",
           "--tokens", tokens, "-q", *(["--key-file", key] if key else [])]  # fmt: skip
    errf = open(work / log, "w+")
    pin = ["taskset", "-c", cpus] if cpus else []
    proc = subprocess.Popen([*pin, *map(str, cmd)], stdout=subprocess.DEVNULL, stderr=errf)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"row 10: the gateway exited: {(work / log).read_text()[-2000:]}")
        m = re.search(r"(http://127\.0\.0\.1:\d+/mcp)", (work / log).read_text())
        if m:
            return proc, m.group(1)
        time.sleep(0.05)
    h.stop(proc)
    raise SystemExit(f"row 10: the gateway did not start: {(work / log).read_text()[-2000:]}")


def load(h, urls: list[str], callers: int, args: list, pids: list[int], cpus: str | None = None,
         strict: bool = True) -> dict:
    """One gh-gateload run. `strict`: any unexpected answer or shed operation stops the row;
    otherwise (an open loop past what the setup holds) they are the run's result."""
    pin = ["taskset", "-c", cpus] if cpus else []
    cmd = [*pin, h.REL / "gh-gateload", "--urls", ",".join(urls), "--callers", callers,
           "--pids", ",".join(map(str, pids)), *args]  # fmt: skip
    p = h.run(cmd, timeout=600)
    out = json.loads(p.stdout)
    lat = out["call_latency"]
    h.say(f"row 10:   {callers} callers {' '.join(map(str, args))}: {out['decisions_per_s']:,.0f} decisions/s, "
          f"p50/p99/p99.9 {lat.get('p50_us', 0) / 1000:.1f}/{lat.get('p99_us', 0) / 1000:.1f}/"
          f"{lat.get('p999_us', 0) / 1000:.1f} ms, {out['unexpected']} unexpected, {out['shed']} shed")  # fmt: skip
    if strict and (out["unexpected"] or out["shed"]):
        raise SystemExit(f"row 10: {out['unexpected']} unexpected answers, {out['shed']} shed:\n{p.stderr[-2000:]}")
    return out


class Setup:
    """One way of running the gateway: its replicas, their state and where the ledger is."""

    def __init__(self, h, work: Path, name: str, tokens: Path, *, replicas: int, pg: Postgres | None,
                 ledger: bool = True, cpus: str | None = None, load_cpus: str | None = None):
        self.h, self.work, self.name, self.pg = h, work, name, pg
        self.load_cpus = load_cpus
        self.ledger_file = work / f"{name}.ledger.jsonl" if ledger else None
        config = servers_file(h, work, f"{name}.json", self.ledger_file)
        self.state = pg.fresh() if pg else str(work / f"{name}.db")
        key = None
        if pg:
            key = work / "gateway.key"
            if not key.exists():
                key.write_text(os.urandom(32).hex())
                key.chmod(0o600)
        self.procs, urls = [], []
        for i in range(replicas):
            proc, url = start_replica(h, work, config, self.state, tokens, f"{name}-{i}.log", key, cpus)
            self.procs.append(proc)
            urls.append(url)
        self.nginx = None
        if pg:
            ports = [int(u.rsplit(":", 1)[1].split("/")[0]) for u in urls]
            self.nginx, url = gateway_row.start_nginx(work, ports, h.free_port(), connections=8192)
            if load_cpus:
                subprocess.run(["taskset", "-pc", load_cpus, str(self.nginx.pid)], check=True, stdout=subprocess.DEVNULL)
            # nginx balances every request, an asked call's second round included: with two
            # replicas it lands on either, and the other opens its sealed state.
            self.urls = [url]
        else:
            self.urls = urls
        self.expected_lines = 0

    def lines(self) -> int:
        if self.ledger_file is None:
            return 0
        if self.pg:
            return self.pg.lines(self.state)
        return sum(1 for _ in self.ledger_file.open()) if self.ledger_file.exists() else 0

    def run(self, callers: int, args: list, strict: bool = True) -> dict:
        synced = self.pg.wal_syncs() if self.pg else 0
        out = load(self.h, self.urls, callers, args, [p.pid for p in self.procs], self.load_cpus, strict)
        if self.pg:
            out["wal_syncs"] = self.pg.wal_syncs() - synced
        # One line per decision, and per caller's first call; a request that failed may
        # have been decided or not, so past one the count is at least that.
        self.expected_lines += out["decisions"] + callers
        if self.ledger_file is None:
            return out
        got = self.lines()
        if got < self.expected_lines or (got != self.expected_lines and not out["unexpected"]):
            raise SystemExit(f"row 10: {self.name}: {got} ledger lines for {self.expected_lines} decisions")
        self.expected_lines = got
        return out

    def close(self) -> None:
        if self.nginx:
            self.h.stop(self.nginx)
        for p in self.procs:
            self.h.stop(p)


def highest_rate(setup: Setup, callers: int, rates: list[int], seconds: int) -> dict:
    """Open loop at each rate in turn; the highest whose calls' p99 is within the target
    (and every run it took to find it)."""
    best, runs = None, []
    for rate in rates:
        out = setup.run(callers, ["--rate", rate, "--seconds", seconds], strict=False)
        p99 = out["call_latency"].get("p99_us", float("inf")) / 1000
        failed = out["unexpected"] + out["shed"]
        runs.append({"rate": rate, "p99_ms": p99, "decisions_per_s": out["decisions_per_s"], "failed": failed})
        if p99 > TARGET_P99_MS or failed:
            break
        best = {"rate": rate, "p99_ms": p99, "decisions_per_s": out["decisions_per_s"]}
    return {"best": best, "runs": runs}


def row(s, h) -> list:
    """Row 10: the gateway under load, the ledger on."""
    work = s.work / "load"
    work.mkdir(exist_ok=True)
    tokens = work / "tokens.json"
    h.run([h.REL / "gh-gateload", "--write-tokens", tokens, "--callers", MEMORY_CALLERS])
    calls = 3_000 if s.quick else 6_000
    secs = 3 if s.quick else 5
    # Finer where the target lies (2,250 operations a second are 2,025 decisions).
    rates = [1_000, 2_000, 2_250, 2_500, 3_000, 3_500, 4_000, 5_000, 6_000]
    out: dict = {"closed": {}, "open": {}}
    pg = Postgres(work)
    try:
        setups = [("sqlite", dict(replicas=1, pg=None)), ("sqlite-no-ledger", dict(replicas=1, pg=None, ledger=False)),
                  ("pg-1", dict(replicas=1, pg=pg)), ("pg-2", dict(replicas=2, pg=pg))]  # fmt: skip
        for name, how in setups:
            h.say(f"row 10: {name}: closed loop at {CALLERS} callers, {calls} operations each")
            setup = Setup(h, work, name, tokens, **how)
            try:
                out["closed"][name] = {c: setup.run(c, ["--calls", calls]) for c in CALLERS}
                if name in ("sqlite", "pg-1"):
                    h.say(f"row 10: {name}: open loop at rising rates, {secs} s each")
                    out["open"][name] = highest_rate(setup, 64, rates, secs)
            finally:
                setup.close()
        # On a fresh replica, so that what earlier runs left (the allocator's pages, the
        # run's kept steps) is not counted.
        h.say(f"row 10: memory of {MEMORY_CALLERS} connected callers, on a fresh replica")
        setup = Setup(h, work, "memory", tokens, replicas=1, pg=None)
        try:
            out["memory"] = setup.run(MEMORY_CALLERS, ["--calls", MEMORY_CALLERS])["memory"][0]
        finally:
            setup.close()
    finally:
        pg.stop()
    # One replica on one core, PostgreSQL and the rest on the other.
    pinned = Postgres(work, cpus="1")
    try:
        h.say("row 10: one replica on CPU 0, PostgreSQL and the callers on CPU 1")
        setup = Setup(h, work, "pg-pinned", tokens, replicas=1, pg=pinned, cpus="0", load_cpus="1")
        try:
            out["pinned"] = {"closed": setup.run(64, ["--calls", calls]),
                             "open": highest_rate(setup, 64, rates, secs)}  # fmt: skip
        finally:
            setup.close()
    finally:
        pinned.stop()
    s.results["load"] = out
    return lines(h, out)


def lines(h, out: dict) -> list:
    L, rows = h.Line, []
    ref = out["closed"]["sqlite-no-ledger"]
    names = {"sqlite": "1 replica, SQLite", "pg-1": "1 replica, PostgreSQL", "pg-2": "2 replicas, PostgreSQL"}
    for name, label in names.items():
        for c in CALLERS:
            got, base = out["closed"][name][c], ref[c]
            lat = got["call_latency"]
            rows.append(L("10 load", f"{label}, {c} callers: decisions/s · p50/p99/p99.9 ms",
                          f"{got['decisions_per_s']:,.0f} · {lat['p50_us'] / 1000:.1f}/{lat['p99_us'] / 1000:.1f}/"
                          f"{lat['p999_us'] / 1000:.1f}",
                          f"{base['decisions_per_s']:,.0f} no ledger",
                          f"{got['decisions_per_s'] / base['decisions_per_s']:.2f}×"))  # fmt: skip
    per_sync = []
    for name in ("pg-1", "pg-2"):
        got = out["closed"][name][64]
        per_sync.append(f"{got['decisions'] / max(got['wal_syncs'], 1):.1f}")
    rows.append(L("10 load", "PostgreSQL, 64 callers: decisions per WAL sync, 1 · 2 replicas", " · ".join(per_sync),
                  "", ""))  # fmt: skip
    # The target is a rate held with the tail bounded: in a closed loop of 64 callers the
    # latency is 64 over the rate whatever the rate, so it is judged in the open loop.
    target = f"≥{TARGET_RATE:,} decisions/s at p99 ≤{TARGET_P99_MS:.0f} ms"
    held = [(out["open"]["sqlite"], "1 replica, SQLite"), (out["open"]["pg-1"], "1 replica, PostgreSQL"),
            (out["pinned"]["open"], "1 PostgreSQL replica on one core")]  # fmt: skip
    for runs, label in held:
        best = runs["best"]
        shown = f"{best['rate']:,}/s: {best['decisions_per_s']:,.0f} decisions/s, p99 {best['p99_ms']:.1f} ms" if best else "none"
        ok = bool(best) and best["decisions_per_s"] >= TARGET_RATE
        rows.append(L("10 load", f"{label}, 64 callers: highest open-loop rate, calls' p99 ≤ {TARGET_P99_MS:.0f} ms",
                      shown, "", "", target, h.verdict(ok)))  # fmt: skip
    p = out["pinned"]["closed"]
    rows.append(L("10 load", "1 PostgreSQL replica on one core, 64 callers closed loop: decisions/s",
                  f"{p['decisions_per_s']:,.0f}", "", ""))  # fmt: skip
    m = out["memory"]
    rows.append(L("10 load", f"memory per connected caller ({MEMORY_CALLERS:,} callers)",
                  f"{(m['connected_kb'] - m['before_kb']) / MEMORY_CALLERS:.1f} KiB",
                  f"{h.fmt_kb(m['before_kb'])} before", ""))  # fmt: skip
    return rows
