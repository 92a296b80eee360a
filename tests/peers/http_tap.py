#!/usr/bin/env python3
"""Log every JSON-RPC message crossing a Streamable HTTP MCP connection: stdio_tap.py for HTTP.

  http_tap.py wire.log http://127.0.0.1:PORT/mcp [--port N]

A reverse proxy on 127.0.0.1 (port N, default 0: a free one) that forwards every request
(POST, GET, DELETE; headers and body as sent, the Authorization header included) to the
server and streams its answer back as it comes, event streams included. It prints its own
address on stderr, `listening on http://127.0.0.1:PORT/mcp`; give that to the client.

The log has the lines stdio_tap.py writes, '>> ' + a message the client sent and '<< ' + a
message the server sent (each JSON-RPC message of a JSON body or of an event stream's
`data:`), and one 'HTTP ' + JSON line per exchange: {"method", "status", "content_type",
"body": [{"method", "id"} of each message the request carried], "headers": {the MCP
headers of the request: mcp-protocol-version, mcp-method, mcp-name, mcp-session-id,
mcp-param-*},
"session": the Mcp-Session-Id the server answered, "authorization": true|false}.
Credentials are never written, only whether there were any.
"""
import argparse
import json
import os
import sys
import threading
from urllib.parse import urlsplit

import anyio
import httpx2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from py_http import serve_asgi  # noqa: E402

MCP_HEADERS = ("mcp-protocol-version", "mcp-method", "mcp-name", "mcp-session-id")
# SEP-2243's headers of a call's x-mcp-header arguments (Mcp-Param-Region, ...).
MCP_PARAM_PREFIX = "mcp-param-"
# Hop-by-hop headers, and those the proxy sets itself.
DROP_REQUEST = {b"host", b"content-length", b"connection", b"transfer-encoding", b"keep-alive"}
DROP_RESPONSE = {b"content-length", b"connection", b"transfer-encoding", b"keep-alive",
                 b"content-encoding"}

p = argparse.ArgumentParser()
p.add_argument("log")
p.add_argument("upstream")
p.add_argument("--port", type=int, default=0)
a = p.parse_args()
up = urlsplit(a.upstream)
origin = f"{up.scheme}://{up.netloc}"
log = open(a.log, "a", buffering=1)
lock = threading.Lock()
client = httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, read=None))


def write(tag: str, value) -> None:
    with lock:
        log.write(tag + " " + json.dumps(value, separators=(",", ":")) + "\n")


def messages(tag: str, data: bytes) -> list:
    """Log each JSON-RPC message of a body (one message or a batch); return them."""
    try:
        value = json.loads(data)
    except ValueError:
        return []
    found = value if isinstance(value, list) else [value]
    for m in found:
        write(tag, m)
    return found


async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    body = b""
    while True:
        event = await receive()
        if event["type"] == "http.disconnect":
            return
        body += event.get("body", b"")
        if not event.get("more_body"):
            break
    sent_messages = messages(">>", body) if body else []
    headers = [(k, v) for k, v in scope["headers"] if k.lower() not in DROP_REQUEST]
    url = origin + scope["path"] + (("?" + scope["query_string"].decode()) if scope["query_string"] else "")
    request = client.build_request(scope["method"], url, headers=headers, content=body)
    sent = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
    exchange = {"method": scope["method"],
                "body": [{"method": m.get("method"), "id": m.get("id")}
                         for m in sent_messages if isinstance(m, dict)],
                "headers": {h: v for h, v in sent.items()
                            if h in MCP_HEADERS or h.startswith(MCP_PARAM_PREFIX)},
                "authorization": "authorization" in sent}
    try:
        response = await client.send(request, stream=True)
    except httpx2.HTTPError as e:
        write("HTTP", {**exchange, "status": 502, "error": str(e)})
        await send({"type": "http.response.start", "status": 502, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return
    content_type = response.headers.get("content-type", "")
    write("HTTP", {**exchange, "status": response.status_code, "content_type": content_type,
                   "session": response.headers.get("mcp-session-id")})
    await send({"type": "http.response.start", "status": response.status_code,
                "headers": [(k, v) for k, v in response.headers.raw if k.lower() not in DROP_RESPONSE]})

    async def pump(cancel):
        pending = b""
        try:
            async for chunk in response.aiter_bytes():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
                if content_type.startswith("text/event-stream"):
                    pending += chunk
                    *lines, pending = pending.split(b"\n")
                    for line in lines:
                        line = line.rstrip(b"\r")
                        if line.startswith(b"data:"):
                            messages("<<", line[5:].strip())
                else:
                    pending += chunk
            if not content_type.startswith("text/event-stream") and pending:
                messages("<<", pending)
            await send({"type": "http.response.body", "body": b""})
        finally:
            await response.aclose()
            cancel.cancel()

    async def until_disconnect(cancel):
        while (await receive())["type"] != "http.disconnect":
            pass
        cancel.cancel()

    async with anyio.create_task_group() as tg:
        tg.start_soon(pump, tg.cancel_scope)
        tg.start_soon(until_disconnect, tg.cancel_scope)


if __name__ == "__main__":
    serve_asgi(app, a.port, up.path or "/", lifespan="off")
