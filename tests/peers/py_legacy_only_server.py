#!/usr/bin/env python3
"""A server on the official Python SDK (mcp 2.3.0), restricted to revision 2025-11-25.

It answers `server/discover` (and any request on the 2026-07-28 wire) with -32022
Unsupported protocol version, `data: {"supported": ["2025-11-25"], "requested": ...}`,
and serves the `initialize` handshake. A 2026-07-28 client that follows the revision
to the letter stops at the -32022 (rmcp 3.11: `NoCompatibleProtocolVersion`); a host
must connect anyway with `initialize`.

The SDK's own stdio loop is dual-era and locks a connection to 2026-07-28 on its first
enveloped request (after which it refuses `initialize`), so this server runs the SDK's
handshake-only loop (`serve_loop`) instead and refuses the 2026-07-28 wire itself.

Tools: add(a, b) -> {"sum"}; echo(text); whoami() -> what the server saw of the client;
pick_color() -> asks with elicitation/create (the handshake revisions' way).
One JSON line per request on stderr, as py_confirm_server.py writes them.

  py_legacy_only_server.py              # stdio
  py_legacy_only_server.py --http PORT  # Streamable HTTP with sessions, at
                                        # http://127.0.0.1:PORT/mcp (0: a free port; the
                                        # address is printed on stderr)

Over HTTP the SDK serves each request on its own era, so the middleware alone refuses the
2026-07-28 wire; sessions (not the stateless mode) let `pick_color` ask mid-call.
"""
import json
import sys
from typing import Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import UNSUPPORTED_PROTOCOL_VERSION
from pydantic import BaseModel
from typing_extensions import TypedDict

NAME = "py-legacy-only"
SUPPORTED = ["2025-11-25"]
mcp = MCPServer(NAME, version="0.1.0")


def _refuse(requested) -> None:
    raise MCPError(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version",
                   data={"supported": SUPPORTED, "requested": requested})


async def only_2025_11_25(ctx, call_next):
    params = ctx.params if isinstance(ctx.params, dict) else {}
    meta = params.get("_meta") or {}
    outcome = "ok"
    try:
        if ctx.request_id is not None:
            if ctx.method == "server/discover":
                _refuse(meta.get("io.modelcontextprotocol/protocolVersion"))
            if "io.modelcontextprotocol/protocolVersion" in meta:
                _refuse(meta["io.modelcontextprotocol/protocolVersion"])
        return await call_next(ctx)
    except Exception as e:
        outcome = f"error {getattr(e, 'code', type(e).__name__)}"
        raise
    finally:
        if ctx.request_id is not None:
            print(json.dumps({"operation": "mcp.request", "server": NAME, "method": ctx.method,
                              "name": params.get("name"),
                              "protocol": meta.get("io.modelcontextprotocol/protocolVersion")
                              or params.get("protocolVersion") or ctx.protocol_version,
                              "outcome": outcome}), file=sys.stderr, flush=True)


mcp.middleware.append(only_2025_11_25)


class Sum(TypedDict):
    sum: int


@mcp.tool()
def add(a: int, b: int) -> Sum:
    """Add two integers."""
    return {"sum": a + b}


@mcp.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@mcp.tool()
def whoami(ctx: Context) -> dict:
    """What the server saw of this client: the negotiated revision and its capabilities."""
    caps = ctx.client_capabilities
    return {"protocolVersion": ctx.protocol_version,
            "clientCapabilities": caps.model_dump(exclude_none=True, by_alias=True) if caps else None}


class Color(BaseModel):
    color: Literal["red", "green", "blue"]


@mcp.tool()
async def pick_color(ctx: Context) -> str:
    """Ask the user for a color (elicitation/create, the handshake revisions' way)."""
    answer = await ctx.elicit(message="Which color?", schema=Color)
    if answer.action != "accept":
        return f"no color: the user answered {answer.action}"
    return f"the user picked {answer.data.color}"


async def main() -> None:
    from mcp.server.runner import serve_loop
    from mcp.server.stdio import stdio_server

    server = mcp._lowlevel_server  # the SDK's low-level server behind MCPServer
    async with stdio_server() as (read_stream, write_stream):
        async with server.lifespan(server) as state:
            await serve_loop(server, read_stream, write_stream, lifespan_state=state,
                             init_options=server.create_initialization_options())


if __name__ == "__main__":
    import argparse

    import anyio
    from py_http import add_http_option, serve_http

    parser = argparse.ArgumentParser(description="The Python SDK server that speaks 2025-11-25 only.")
    add_http_option(parser)
    args = parser.parse_args()
    if args.http is None:
        anyio.run(main)
    else:
        serve_http(mcp, args.http, stateless=False)
