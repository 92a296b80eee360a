#!/usr/bin/env python3
"""The warm AgentDojo (warm.py) as a command: what make.py writes into the servers files
and the graders when a run has one (`AGENTDOJO_WARM`), in place of server.py and grade.py.
It imports nothing of AgentDojo, so it starts in tens of milliseconds.

    via.py SOCKET server            # an MCP server over stdio, as server.py
    via.py SOCKET grade ARGS...     # a verdict, as grade.py ARGS...
"""

import json
import os
import socket
import sys
import threading

KEPT = ("AGENTDOJO_", "GATEHOUSE_EVAL_DIR")


def main() -> int:
    path, role, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    env = {k: v for k, v in os.environ.items() if k.startswith(KEPT)}
    stdin = sys.stdin.read() if role == "grade" else ""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    job = {"role": role, "env": env, "args": args, "stdin": stdin}
    conn.sendall((json.dumps(job) + "\n").encode())
    if role == "grade":
        said = json.loads(conn.makefile("rb").readline() or b'{"code": 2, "stderr": "warm.py gave no verdict"}')
        sys.stderr.write(said["stderr"])
        return said["code"]

    def up():
        while chunk := os.read(0, 65536):
            conn.sendall(chunk)
        conn.shutdown(socket.SHUT_WR)

    threading.Thread(target=up, daemon=True).start()
    while chunk := conn.recv(65536):
        os.write(1, chunk)
    return 0


if __name__ == "__main__":
    sys.exit(main())
