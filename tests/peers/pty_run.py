"""Run a command at a real terminal (a pseudo-terminal), answer its prompts as a person
would, and write everything it showed to stdout, byte for byte.

    python3 pty_run.py SECONDS PROMPT=ANSWER ... -- COMMAND ARGS ...

Each PROMPT=ANSWER is used once, in order: when the screen since the last answer shows
PROMPT, ANSWER and a newline are typed. The command is killed after SECONDS. The exit
status is the command's (124 if it was killed).
"""

import os
import pty
import select
import signal
import sys
import time


def main() -> int:
    args = sys.argv[1:]
    split = args.index("--")
    limit = float(args[0])
    answers = [a.split("=", 1) for a in args[1:split]]
    command = args[split + 1 :]
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(command[0], command)
    deadline = time.monotonic() + limit
    screen = b""
    since = 0
    status = None
    while True:
        if status is None:
            done, code = os.waitpid(pid, os.WNOHANG)
            if done:
                status = os.waitstatus_to_exitcode(code)
        if status is None and time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            status = 124
        ready, _, _ = select.select([fd], [], [], 0.05)
        chunk = b""
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            screen += chunk
        # The command is gone and the terminal has nothing more to show.
        if status is not None and not chunk:
            break
        if answers and answers[0][0].encode() in screen[since:]:
            prompt, answer = answers.pop(0)
            since = screen.index(prompt.encode(), since) + len(prompt)
            os.write(fd, answer.encode() + b"\n")
    sys.stdout.buffer.write(screen)
    return status


if __name__ == "__main__":
    sys.exit(main())
