"""`tools/call` round trips through one Python SDK client, the reference for gh-callrate.

    python callrate.py [--calls N] [--warmup W] [--concurrency C] [--host] -- SERVER ARGS...

Default: the SDK's `Client` (mode "auto": discover at 2026-07-28, else initialize) calls
`get_ticket {"ticket_id": "T-30002"}` from C concurrent callers sharing the client.
`--host`: each call goes through the reference host's whole path (`Host.propose`: policy,
schema check, the call, result shaping, the trace), one caller, as gh-callrate --mode host.
Prints one JSON object, as gh-callrate does.
"""

import argparse
import asyncio
import json
import math
import os
import sys
import time
from pathlib import Path

from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent))
import host as reference  # noqa: E402

ARGS = {"ticket_id": "T-30002"}


def stats(samples: list[float]) -> dict:
    s = sorted(samples)
    n = len(s)
    at = lambda q: s[min(max(math.ceil(n * q), 1), n) - 1]  # noqa: E731
    us = lambda x: round(x * 1e7) / 10  # noqa: E731
    return {"n": n, "min_us": us(s[0]), "p50_us": us(at(0.5)), "p90_us": us(at(0.9)), "p99_us": us(at(0.99)),
            "max_us": us(s[-1]), "mean_us": us(sum(s) / n)}  # fmt: skip


async def sdk(args) -> dict:
    command, *rest = args.server
    params = StdioServerParameters(command=command, args=rest, env=dict(os.environ))
    async with Client(params) as client:
        first = await client.call_tool("get_ticket", ARGS)
        if first.is_error or "Hugo" not in json.dumps(first.structured_content):
            raise SystemExit(f"get_ticket did not succeed: {first}")
        for _ in range(args.warmup):
            await client.call_tool("get_ticket", ARGS)
        per_caller = math.ceil(args.calls / args.concurrency)
        samples: list[float] = []

        async def caller():
            for _ in range(per_caller):
                t = time.perf_counter()
                await client.call_tool("get_ticket", ARGS)
                samples.append(time.perf_counter() - t)

        start = time.perf_counter()
        await asyncio.gather(*(caller() for _ in range(args.concurrency)))
        wall = time.perf_counter() - start
        protocol = client.protocol_version
    return {"mode": "sdk", "protocol": protocol, "concurrency": args.concurrency, "calls": len(samples),
            "wall_s": wall, "calls_per_s": len(samples) / wall, **stats(samples)}  # fmt: skip


async def host_path(args) -> dict:
    config = reference.load_config(args.config, "usr-sam", "larkfield")
    host = reference.Host(config, reference.Trace(show=False), None)
    await host.start()
    call = {"id": "call_1", "name": "support__get_ticket", "arguments": reference.compact(ARGS)}
    stderr, sys.stderr = sys.stderr, open(os.devnull, "w")  # the host.tool_call records
    try:
        first = await host.propose(call)
        if "Hugo" not in first["text"]:
            raise SystemExit(f"the host did not run the call: {first['text']}")
        for _ in range(args.warmup):
            await host.propose(call)
        samples = []
        start = time.perf_counter()
        for i in range(args.calls):
            t = time.perf_counter()
            await host.propose(call)
            samples.append(time.perf_counter() - t)
            if i % 256 == 0:
                host.trace.steps.clear()
        wall = time.perf_counter() - start
    finally:
        sys.stderr = stderr
    await host.shutdown()
    return {"mode": "host", "concurrency": 1, "calls": len(samples), "wall_s": wall,
            "calls_per_s": len(samples) / wall, **stats(samples)}  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--calls", type=int, default=1000)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--host", action="store_true")
    p.add_argument("--config")
    p.add_argument("server", nargs="*")
    args = p.parse_args()
    out = asyncio.run(host_path(args) if args.host else sdk(args))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
