#!/usr/bin/env python3
"""A confirmation server on the official Python SDK (mcp 2.3.0), for the interop tests.

Its one write, `open_ticket(host, summary)`, asks the user first:

* on 2026-07-28 it answers the first round with an `InputRequiredResult` (a form with a
  `priority` field) and a `requestState`. The SDK's `RequestStateBoundary` seals that
  state with AES-256-GCM (an ephemeral per-process key) and binds it to the method, the
  tool, a digest of the arguments and the server's name; a replay with other arguments
  is refused with -32602 "Invalid or expired requestState" before this code runs;
* on the handshake revisions (<= 2025-11-25) it asks mid-call with `elicitation/create`.

`list_tickets()` tells what was opened in this process. One JSON line per request goes to
stderr: {"operation": "mcp.request", "server": "py-confirm", "method", "name",
"protocol", "outcome"}.

  py_confirm_server.py              # stdio
  py_confirm_server.py --http PORT  # Streamable HTTP, stateless, at http://127.0.0.1:PORT/mcp
                                    # (0: a free port; the address is printed on stderr)

Over HTTP it runs the SDK's stateless mode (`stateless_http=True`): no session, each
request stands alone, which suits 2026-07-28; `_opened` still lives as long as the process.
"""
import itertools
import json
import sys
import time
from typing import Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult
from pydantic import BaseModel
from typing_extensions import TypedDict

NAME = "py-confirm"
mcp = MCPServer(NAME, version="0.1.0",
                instructions="Incident tickets. Opening a ticket always asks the user first.")

HANDSHAKE = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
# What the handler keeps between the rounds. The SDK seals it; the handler only ever sees
# plaintext it minted itself.
ASKED = "asked-the-user"
PRIORITY_FORM = {"type": "object",
                 "properties": {"priority": {"type": "string", "enum": ["P1", "P2", "P3"],
                                             "description": "How urgent the incident is."}},
                 "required": ["priority"]}

_ids = itertools.count(7100)
_opened: list[dict] = []


async def log_requests(ctx, call_next):
    """One JSON line per inbound request on stderr (notifications are not logged)."""
    if ctx.request_id is None:
        return await call_next(ctx)
    t0 = time.perf_counter()
    outcome = "ok"
    try:
        result = await call_next(ctx)
        kind = result.get("resultType") if isinstance(result, dict) else getattr(result, "result_type", None)
        if kind == "input_required":
            outcome = "input_required"
        elif (result.get("isError") if isinstance(result, dict) else getattr(result, "is_error", False)):
            outcome = "tool_error"
        return result
    except Exception as e:  # logged, then passed on unchanged
        outcome = f"error {getattr(e, 'code', type(e).__name__)}"
        raise
    finally:
        params = ctx.params if isinstance(ctx.params, dict) else {}
        print(json.dumps({"operation": "mcp.request", "server": NAME, "method": ctx.method,
                          "name": params.get("name"), "protocol": ctx.protocol_version,
                          "outcome": outcome, "ms": round((time.perf_counter() - t0) * 1000, 1)}),
              file=sys.stderr, flush=True)


mcp.middleware.append(log_requests)


class Ticket(TypedDict):
    id: str
    host: str
    summary: str
    priority: Literal["P1", "P2", "P3"]


class Priority(BaseModel):
    priority: Literal["P1", "P2", "P3"]


def _open(host: str, summary: str, priority: str) -> Ticket:
    ticket: Ticket = {"id": f"INC-{next(_ids)}", "host": host, "summary": summary, "priority": priority}
    _opened.append(dict(ticket))
    return ticket


@mcp.tool()
async def open_ticket(host: str, summary: str, ctx: Context) -> Ticket | InputRequiredResult:
    """Open an incident ticket about a host; the user confirms it and picks its priority first."""
    caps = ctx.client_capabilities
    if caps is None or caps.elicitation is None:
        raise ToolError("this host cannot ask the user; no ticket was opened")
    if ctx.protocol_version in HANDSHAKE:
        # Older revisions: ask mid-call; the client answers elicitation/create.
        answer = await ctx.elicit(message=f"Open an incident ticket for {host}?", schema=Priority)
        if answer.action != "accept":
            raise ToolError(f"the user answered {answer.action}: no ticket was opened")
        return _open(host, summary, answer.data.priority)
    response = (ctx.input_responses or {}).get("confirm")
    if response is None or ctx.request_state != ASKED:
        return InputRequiredResult(request_state=ASKED, input_requests={"confirm": ElicitRequest(
            params=ElicitRequestFormParams(message=f"Open an incident ticket for {host}?",
                                           requested_schema=PRIORITY_FORM))})
    if response.action != "accept":
        raise ToolError(f"the user answered {response.action}: no ticket was opened")
    priority = (response.content or {}).get("priority")
    if priority not in ("P1", "P2", "P3"):
        raise ToolError("no valid priority; no ticket was opened")
    return _open(host, summary, priority)


class Listing(TypedDict):
    total: int
    tickets: list[Ticket]


@mcp.tool()
def list_tickets() -> Listing:
    """List the tickets this server opened since it started."""
    return {"total": len(_opened), "tickets": list(_opened)}


if __name__ == "__main__":
    import argparse

    from py_http import add_http_option, serve_http

    parser = argparse.ArgumentParser(description="The Python SDK confirmation server.")
    add_http_option(parser)
    args = parser.parse_args()
    if args.http is None:
        mcp.run()
    else:
        serve_http(mcp, args.http, stateless=True)
