"""Drive a full-screen terminal program (Claude Code's interface) at a pseudo-terminal as a
person would: wait for a text on the screen, press keys, and so on; then stop it.

    python3 tui_run.py SECONDS COLUMNS ROWS WAIT=>KEYS ... -- COMMAND ARGS ...

Each WAIT=>KEYS is used once, in order: when WAIT shows on the screen since the keys
before were pressed (escape sequences taken out, runs of blanks made one space), KEYS are
typed (Python escapes: \\r is Enter, \\x1b Escape, \\x1b[B the down arrow). When every step is
done the program's session is stopped (SIGTERM, then SIGKILL), as a person closes the
terminal. Everything the screen showed is written to stdout, escape sequences taken out.
The exit status is 0 when every step was done, 124 when SECONDS ran out first (the program
is killed), 1 when the program ended first.
"""

import os
import pty
import re
import select
import signal
import struct
import sys
import termios
import time
import fcntl

# Control sequences (CSI, OSC, and two-byte escapes) taken out of what the screen shows.
ESCAPES = re.compile(rb"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[ -~]")
# How long the program has to end after SIGTERM before it is killed.
STOP_GRACE = 2.0
# How long the screen is left to settle after a WAIT shows, before the keys are pressed.
SETTLE = 0.3


def visible(raw: bytes) -> str:
    text = ESCAPES.sub(b" ", raw).decode("utf-8", "replace")
    return re.sub(r"\s+", " ", text)


def stop(pid: int) -> None:
    for sig, grace in ((signal.SIGTERM, STOP_GRACE), (signal.SIGKILL, 0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if os.waitpid(pid, os.WNOHANG)[0]:
                return
            time.sleep(0.05)
    os.waitpid(pid, 0)


def main() -> int:
    args = sys.argv[1:]
    split = args.index("--")
    limit, columns, rows = float(args[0]), int(args[1]), int(args[2])
    steps = [a.split("=>", 1) for a in args[3:split]]
    command = args[split + 1 :]
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(command[0], command)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    deadline = time.monotonic() + limit
    screen, since, status = b"", 0, None
    while steps and status is None:
        if time.monotonic() > deadline:
            status = 124
            break
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                status = 1
                break
            screen += chunk
        wait, keys = steps[0]
        if wait in visible(screen[since:]):
            time.sleep(SETTLE)
            os.write(fd, keys.encode().decode("unicode_escape").encode())
            steps.pop(0)
            since = len(screen)
    stop(pid)
    sys.stdout.write(visible(screen))
    return 0 if status is None else status


if __name__ == "__main__":
    sys.exit(main())
