#!/usr/bin/env python3
"""A foreign MCP client on the official Python SDK (mcp 2.3.0), for the interop tests.

Adapted from the team's peer notes. It connects to a stdio server command, or with --url
to a server on Streamable HTTP (--header NAME:VALUE, repeatable, adds a header to every
request, e.g. --header "Authorization: Bearer TOKEN"), negotiates
(mode auto: `server/discover` at 2026-07-28, falling back to `initialize` at 2025-11-25;
mode legacy: `initialize` only), lists tools, resources and prompts, then makes the calls
asked for, in order. It prints one JSON document on stdout; the SDK's logs and the
server's stderr go to stderr.

  py_mcp_client.py [--mode auto|legacy|2026-07-28] [--call NAME [--args JSON]]...
                   [--read URI] [--answer KEY=VALUE]... [--decline | --cancel] [--no-list]
                   [--timeout SECONDS] -- COMMAND ARGS...
  py_mcp_client.py [same options] [--header "NAME: VALUE"]... --url http://127.0.0.1:PORT/mcp
  py_mcp_client.py [same options] --oauth-browser CMD --url http://127.0.0.1:PORT/mcp

--session-file FILE writes the session's id (an older revision's Mcp-Session-Id) to FILE
once connected; --go-file FILE then waits (at most --timeout seconds) for FILE to exist
before the calls, so a test can act in between; --keep-session leaves the session open at
the end (no DELETE). The output's "sessionId" is the session's id.

With --oauth-browser the client signs in with the SDK's own OAuth provider when the
server answers 401 (or 403 insufficient_scope), opening each sign-in address with CMD
(py_oauth.py); the output's "sign_ins" counts them.

Each --call takes the --args that follows it (default {}). The server gets this
process's whole environment (the SDK passes only an allow-list unless told).
Forms a server sends (elicitation/create on the handshake revisions, input_required
on 2026-07-28; both reach the same callback) are accepted with the --answer values,
typed by the form's schema, declined with --decline, or dismissed without an answer
with --cancel (the person closed the dialog); every form is recorded under
"elicitations".

Output keys: protocolVersion, serverInfo, capabilities, tools, resources,
resourceTemplates, prompts, calls: [{name, arguments, result | error}], read,
elicitations, progress, error. A list, call or read that fails gets {"error": {code,
message, data}} (a JSON-RPC error) or {"error": {type, message}} (the SDK refused the
answer, or a timeout) in its place and the rest still runs. Exit status: 0 ok, 1 a call
returned isError or something failed, 2 the connection failed.
"""
import argparse
import asyncio
import contextlib
import json
import os
import sys
from typing import Any

from peer_json import dump, innermost, typed
import py_oauth

import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError



def failure(e: Exception) -> dict:
    """A JSON-RPC error as {code, message, data}; anything else (the SDK refusing what
    the server sent, a timeout) as {type, message}."""
    if isinstance(e, MCPError):
        return {"code": e.code, "message": e.message, "data": e.data}
    return {"type": type(e).__name__, "message": str(e)}


def parse_calls(argv: list[str]) -> list[tuple[str, dict]]:
    """Pair every --call with the --args after it (before the next --call)."""
    calls: list[tuple[str, dict]] = []
    i = 0
    while i < len(argv):
        if argv[i] == "--call":
            calls.append((argv[i + 1], {}))
            i += 2
        elif argv[i] == "--args" and calls:
            calls[-1] = (calls[-1][0], json.loads(argv[i + 1]))
            i += 2
        elif argv[i] == "--":
            break
        else:
            i += 1
    return calls


async def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--mode", default="auto")
    p.add_argument("--call", action="append", default=[])
    p.add_argument("--args", action="append", default=[])
    p.add_argument("--read")
    p.add_argument("--answer", action="append", default=[])
    p.add_argument("--decline", action="store_true")
    p.add_argument("--cancel", action="store_true")
    p.add_argument("--no-list", action="store_true")
    p.add_argument("--timeout", type=float, default=20.0)
    p.add_argument("--url")
    p.add_argument("--header", action="append", default=[])
    p.add_argument("--oauth-browser")
    p.add_argument("--session-file")
    p.add_argument("--go-file")
    p.add_argument("--keep-session", action="store_true")
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    a = p.parse_args()
    own = sys.argv[1:sys.argv.index("--")] if "--" in sys.argv else sys.argv[1:]
    calls = parse_calls(own)
    cmd = [c for c in a.cmd if c != "--"]
    if bool(cmd) == bool(a.url):
        p.error("give either --url or the server command after --")
    headers = {}
    for h in a.header:
        name, sep, value = h.partition(":")
        if not sep:
            p.error(f"--header wants NAME: VALUE, got {h!r}")
        headers[name.strip()] = value.strip()
    answers = dict(kv.split("=", 1) for kv in a.answer)

    elicitations: list[Any] = []
    progress: list[Any] = []

    async def on_elicit(ctx: Any, params: Any) -> types.ElicitResult:
        elicitations.append(dump(params))
        if a.decline:
            return types.ElicitResult(action="decline")
        if a.cancel:
            return types.ElicitResult(action="cancel")
        schema = getattr(params, "requested_schema", None) or {}
        props = schema.get("properties") or {}
        content = {k: typed(v, props.get(k, {})) for k, v in answers.items()}
        return types.ElicitResult(action="accept", content=content)

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append({"progress": value, "total": total, "message": message})

    out: dict[str, Any] = {}
    rc = 0
    session_ids: list[str] = []

    async def on_response(response: Any) -> None:
        sid = response.headers.get("mcp-session-id")
        if sid and sid not in session_ids:
            session_ids.append(sid)
    auth, person = None, None
    if a.oauth_browser:
        if not a.url:
            p.error("--oauth-browser needs --url")
        auth, person = await py_oauth.provider(a.url, a.oauth_browser)
    try:
        async with contextlib.AsyncExitStack() as stack:
            if a.url:
                # The SDK takes headers through the httpx client it is given (and closes
                # only a client it made itself); its examples' timeouts.
                http = await stack.enter_async_context(
                    httpx2.AsyncClient(headers=headers, auth=auth,
                                       timeout=httpx2.Timeout(30.0, read=300.0),
                                       event_hooks={"response": [on_response]}))
                server: Any = streamable_http_client(a.url, http_client=http,
                                                     terminate_on_close=not a.keep_session)
            else:
                server = StdioServerParameters(command=cmd[0], args=cmd[1:], env=dict(os.environ))
            c = await stack.enter_async_context(
                Client(server, mode=a.mode, read_timeout_seconds=a.timeout,
                       elicitation_callback=on_elicit, cache=None))
            out["protocolVersion"] = c.protocol_version
            out["sessionId"] = session_ids[0] if session_ids else None
            if a.session_file:
                with open(a.session_file + ".part", "w") as f:
                    f.write(out["sessionId"] or "")
                os.replace(a.session_file + ".part", a.session_file)
            out["serverInfo"] = dump(c.server_info)
            caps = c.server_capabilities
            out["capabilities"] = dump(caps)
            if not a.no_list:
                listings = [("tools", caps.tools, c.list_tools),
                            ("resources", caps.resources, c.list_resources),
                            ("resourceTemplates", caps.resources, c.list_resource_templates),
                            ("prompts", caps.prompts, c.list_prompts)]
                for key, offered, list_them in listings:
                    if offered is None:
                        continue
                    try:
                        out[key] = dump(await list_them()).get(key, [])
                    except Exception as e:  # one failed list does not hide the others
                        out[key] = {"error": failure(e)}
                        rc = max(rc, 1)
            if a.go_file:
                for _ in range(int(a.timeout * 10)):
                    if os.path.exists(a.go_file):
                        break
                    await asyncio.sleep(0.1)
                else:
                    raise TimeoutError(f"{a.go_file} did not appear")
            out["calls"] = []
            for name, args in calls:
                entry: dict[str, Any] = {"name": name, "arguments": args}
                try:
                    r = await c.call_tool(name, args, progress_callback=on_progress)
                    entry["result"] = dump(r)
                    if r.is_error:
                        rc = max(rc, 1)
                except Exception as e:
                    entry["error"] = failure(e)
                    rc = max(rc, 1)
                out["calls"].append(entry)
            if a.read:
                try:
                    out["read"] = dump(await c.read_resource(a.read))
                except Exception as e:
                    out["read"] = {"error": failure(e)}
                    rc = max(rc, 1)
    except BaseException as e:  # a test peer reports, it does not trace back
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        out["error"] = innermost(e)
        rc = 2
    if person is not None:
        await person.close()
        out["sign_ins"] = person.sign_ins
    out["elicitations"] = elicitations
    out["progress"] = progress
    print(json.dumps(out, indent=2))
    return rc


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
