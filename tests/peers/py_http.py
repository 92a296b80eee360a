"""Serve an ASGI app, or a Python SDK (mcp 2.3.0) `MCPServer`, on Streamable HTTP for the
interop tests.

Used by py_confirm_server.py and py_legacy_only_server.py for their `--http PORT` option,
and by http_tap.py. Everything binds 127.0.0.1 only (PORT 0 picks a free port) and prints
its address on stderr as one line, the way `gatehouse serve NAME --http` does:

    listening on http://127.0.0.1:41234/mcp

The SDK's own `mcp.run(transport="streamable-http", port=...)` cannot report the port it
got for port 0, so the socket is bound here and handed to uvicorn. The SDK turns on its
DNS rebinding protection for a 127.0.0.1 host (Host and Origin must be loopback names).
"""
import socket
import sys


def add_http_option(parser) -> None:
    parser.add_argument("--http", type=int, metavar="PORT",
                        help="serve Streamable HTTP at http://127.0.0.1:PORT/mcp (0: a free port) "
                             "instead of stdio")


def serve_asgi(app, port: int, path: str = "/mcp", *, lifespan: str = "auto") -> None:
    """Serve `app` on 127.0.0.1:PORT until killed, after printing its address."""
    import anyio  # here, so that the stdio servers never load uvicorn
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False,
                                           lifespan=lifespan))
    # The socket already accepts connections; they wait until uvicorn has started.
    print(f"listening on http://127.0.0.1:{sock.getsockname()[1]}{path}", file=sys.stderr, flush=True)
    anyio.run(lambda: server.serve(sockets=[sock]))


def serve_http(mcp, port: int, *, stateless: bool) -> None:
    """Serve `mcp` at http://127.0.0.1:PORT/mcp until killed."""
    serve_asgi(mcp.streamable_http_app(stateless_http=stateless, host="127.0.0.1"), port)
