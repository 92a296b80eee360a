"""OAuth for the Python SDK client (py_mcp_client.py --oauth-browser CMD): the SDK's own
OAuthClientProvider (discovery, dynamic registration, PKCE, the resource indicator,
step-up on 403 insufficient_scope), its tokens kept in memory, its redirect back to a
listener on 127.0.0.1 run here, and each sign-in address opened with CMD (the tests'
headless Chromium, tests/oauth/browser.sh), as a person's browser would. Nothing here
prints a token or a code; `sign_ins` counts the addresses opened.
"""
import asyncio
import sys
import urllib.parse

from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider, OAuthFlowError
from mcp.shared.auth import OAuthClientMetadata

# How long one sign-in may take, the browser's included.
SIGN_IN_TIMEOUT = 60.0
# How long the listener waits for a request's head.
HEAD_TIMEOUT = 10.0
# The longest request head the listener reads (lines, bytes per line).
MAX_HEAD_LINES = 100
MAX_LINE_BYTES = 8192


class MemoryStorage:
    """The SDK's TokenStorage, in memory: one run, one sign-in."""

    def __init__(self) -> None:
        self.tokens = None
        self.client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens) -> None:
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info) -> None:
        self.client = client_info


class Loopback:
    """The redirect listener: the query of each GET /callback, in order."""

    async def start(self) -> "Loopback":
        self.answers: asyncio.Queue = asyncio.Queue()
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}/callback"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            first = await asyncio.wait_for(reader.readline(), HEAD_TIMEOUT)
            for _ in range(MAX_HEAD_LINES):
                line = await asyncio.wait_for(reader.readline(), HEAD_TIMEOUT)
                if line in (b"\r\n", b"\n", b"") or len(line) > MAX_LINE_BYTES:
                    break
            parts = first[:MAX_LINE_BYTES].decode("latin-1").split(" ")
            target = urllib.parse.urlsplit(parts[1] if len(parts) > 1 else "/")
            found = target.path == "/callback"
            if found:
                self.answers.put_nowait(dict(urllib.parse.parse_qsl(target.query)))
            body = b"Signed in; this window may be closed." if found else b"Not Found"
            status = b"200 OK" if found else b"404 Not Found"
            writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Type: text/plain\r\n"
                         + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
            await writer.drain()
        except (asyncio.TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()


class BrowserSignIn:
    """The person's side of each sign-in: the address opened with the browser command,
    the redirect awaited on the listener."""

    def __init__(self, browser: str, loopback: Loopback) -> None:
        self.browser = browser
        self.loopback = loopback
        self.sign_ins = 0
        self.running: list[asyncio.subprocess.Process] = []

    async def open(self, url: str) -> None:
        self.sign_ins += 1
        print("sign-in: opening the browser", file=sys.stderr, flush=True)
        self.running.append(await asyncio.create_subprocess_exec(self.browser, url))

    async def redirected(self) -> AuthorizationCodeResult:
        try:
            query = await asyncio.wait_for(self.loopback.answers.get(), SIGN_IN_TIMEOUT)
            print("sign-in: redirected back", file=sys.stderr, flush=True)
        except asyncio.TimeoutError:
            raise OAuthFlowError(f"no redirect came back within {SIGN_IN_TIMEOUT} s")
        if "error" in query:
            raise OAuthFlowError(f"the authorization server said {query['error']}")
        if "code" not in query:
            raise OAuthFlowError("the redirect carried no code")
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"),
                                       iss=query.get("iss"))

    async def close(self) -> None:
        for process in self.running:
            try:
                await asyncio.wait_for(process.wait(), SIGN_IN_TIMEOUT)
            except asyncio.TimeoutError:
                process.kill()


async def provider(server_url: str, browser: str) -> tuple[OAuthClientProvider, BrowserSignIn]:
    """The SDK's OAuth provider for `server_url`, signing in through `browser`."""
    loopback = await Loopback().start()
    person = BrowserSignIn(browser, loopback)
    metadata = OAuthClientMetadata(
        client_name="python-sdk-interop",
        redirect_uris=[loopback.redirect_uri],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    auth = OAuthClientProvider(server_url, metadata, MemoryStorage(),
                               redirect_handler=person.open, callback_handler=person.redirected)
    return auth, person
