#!/usr/bin/env python3
"""Keeps AgentDojo loaded for a run: importing it takes about two seconds, twice an attempt
(the suite's server and its grader), which would be most of a held-out suite's time.

    warm.py SOCKET          # listen; `run` starts it and stops it

Each connection to SOCKET is one process's worth of work in a fork of this one, so every
attempt still starts from nothing of the attempts before it: the first line is
`{"role": "server"|"grade", "env": {...}, "args": [...], "stdin": "..."}` (from via.py).
A server then speaks MCP over the connection as it would over stdio; a grader's verdict
comes back as one line `{"code": N, "stderr": "..."}`.
"""

import io
import json
import os
import signal
import socket
import sys
from contextlib import redirect_stderr

import common  # noqa: F401  (the suites and the attack, loaded once here)
import grade
import server


def child(conn: socket.socket) -> int:
    header = b""
    while not header.endswith(b"\n"):
        got = conn.recv(1)
        if not got:
            return 1
        header += got
    job = json.loads(header)
    os.environ.update(job["env"])
    if job["role"] == "server":
        os.dup2(conn.fileno(), 0)
        os.dup2(conn.fileno(), 1)
        server.serve()
        return 0
    sys.argv = ["grade.py", *job["args"]]
    sys.stdin = io.StringIO(job["stdin"])
    said = io.StringIO()
    with redirect_stderr(said):
        try:
            code = grade.main()
        except Exception as e:  # the grader's own failure, said as its stderr
            print(f"grade.py failed: {e!r}", file=said)
            code = 2
    conn.sendall((json.dumps({"code": code, "stderr": said.getvalue()}) + "\n").encode())
    return 0


def main() -> int:
    path = sys.argv[1]
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children reaped by the kernel
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    print("ready", flush=True)
    while True:
        conn, _ = listener.accept()
        if os.fork() == 0:
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            try:
                code = child(conn)
            finally:
                sys.stdout.flush()
            os._exit(code)
        conn.close()


if __name__ == "__main__":
    sys.exit(main())
