#!/usr/bin/env python3
"""A foreign MCP client on the official Python SDK (mcp 2.3.0) that takes only URL-mode
questions: it declares `elicitation: {url: {}}` (no form), built with the SDK's own
capability types, for the gateway's approval-page tests.

  py_url_client.py --url http://127.0.0.1:PORT/mcp
                   (--header "Authorization: Bearer T" | --oauth-browser CMD)
                   [--mode auto|legacy] --call NAME [--args JSON]
                   [--action accept|decline|cancel] [--content JSON]
                   [--url-file FILE] [--timeout SECONDS]

With --oauth-browser it signs in with the SDK's own OAuth provider when the server asks
(py_oauth.py, as py_mcp_client.py does); the output's "sign_ins" counts the sign-ins.

Each URL question is recorded under "elicitations" and its URL appended to --url-file
(one a line; a test hands it to a browser, as a person would open it), then answered
with --action (default accept: the person agreed to open it) and, if given, --content
(which a URL answer must not carry: the gateway has to ignore it). It prints one JSON
document: protocolVersion, capabilities (what it declared), elicitations, and the
call's result or error; on stderr, each HTTP request and response's status as it
goes (where a slow run stuck). Exit status: 0 ok, 1 the call failed, 2 the connection failed.
"""
import argparse
import asyncio
import contextlib
import json
import sys
from typing import Any

import py_oauth
from peer_json import dump, innermost

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError


def url_only(self: ClientSession, version: str) -> types.ClientCapabilities:
    """The SDK's own capabilities, with elicitation narrowed to URL mode."""
    caps = ORIGINAL(self, version)
    if caps.elicitation is None:
        return caps
    url = types.ElicitationCapability(url=types.UrlElicitationCapability())
    return caps.model_copy(update={"elicitation": url})


ORIGINAL = ClientSession._build_capabilities
ClientSession._build_capabilities = url_only


async def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--header", action="append", default=[])
    p.add_argument("--mode", default="auto")
    p.add_argument("--call", required=True)
    p.add_argument("--args", default="{}")
    p.add_argument("--action", default="accept")
    p.add_argument("--content")
    p.add_argument("--url-file")
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--oauth-browser")
    a = p.parse_args()
    headers = {}
    for h in a.header:
        name, _, value = h.partition(":")
        headers[name.strip()] = value.strip()

    elicitations: list[Any] = []

    async def on_elicit(ctx: Any, params: Any) -> types.ElicitResult:
        asked = dump(params)
        elicitations.append(asked)
        url = asked.get("url") if isinstance(asked, dict) else None
        if a.url_file and url:
            with open(a.url_file, "a", encoding="utf-8") as f:
                f.write(url + "\n")
        content = json.loads(a.content) if a.content else None
        return types.ElicitResult(action=a.action, content=content)

    async def said_request(request: Any) -> None:
        print(f"-> {request.method} {request.url}", file=sys.stderr, flush=True)

    async def said_response(response: Any) -> None:
        print(f"<- {response.status_code} {response.request.url}", file=sys.stderr, flush=True)

    out: dict[str, Any] = {}
    rc = 0
    auth, person = None, None
    if a.oauth_browser:
        auth, person = await py_oauth.provider(a.url, a.oauth_browser)
    try:
        async with contextlib.AsyncExitStack() as stack:
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=headers, auth=auth,
                                   timeout=httpx2.Timeout(30.0, read=300.0),
                                   event_hooks={"request": [said_request],
                                                "response": [said_response]}))
            server = streamable_http_client(a.url, http_client=http)
            c = await stack.enter_async_context(
                Client(server, mode=a.mode, read_timeout_seconds=a.timeout,
                       elicitation_callback=on_elicit, cache=None))
            out["protocolVersion"] = c.protocol_version
            out["capabilities"] = dump(c.session._build_capabilities(c.protocol_version), drop="none")
            try:
                r = await c.call_tool(a.call, json.loads(a.args))
                out["result"] = dump(r)
                rc = 1 if r.is_error else 0
            except MCPError as e:
                out["error"] = {"code": e.code, "message": e.message, "data": e.data}
                rc = 1
            except Exception as e:  # the SDK gave up (rounds, a timeout)
                out["error"] = {"type": type(e).__name__, "message": str(e)}
                rc = 1
    except BaseException as e:  # a test peer reports, it does not trace back
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        out["error"] = innermost(e)
        rc = 2
    out["elicitations"] = elicitations
    if person is not None:
        out["sign_ins"] = person.sign_ins
        await person.close()
    print(json.dumps(out, indent=2))
    return rc


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
