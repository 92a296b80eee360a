"""A FastMCP 4.1.4 server whose tools run as tasks (fastmcp-tasks 4.1.4, the tasks
extension of 2026-07-28, SEP-2663), for the interop tests: the host drives a foreign
task to its result, answers a question inside a task through the person, and cancels one.

    fastmcp_tasks_server.py --http PORT   # Streamable HTTP at http://127.0.0.1:PORT/mcp (0: free)

Each tool logs one JSON line on stderr when it starts and when it ends or is cancelled,
so a test sees what the server did, not only what the host says.
"""
import argparse
import asyncio
import json
import os
import sys
from datetime import timedelta

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mcp_types as t  # noqa: E402
from fastmcp import Context, FastMCP  # noqa: E402
from fastmcp.exceptions import ToolError  # noqa: E402
from fastmcp.utilities.tasks import TaskConfig  # noqa: E402
from fastmcp_tasks import TasksExtension  # noqa: E402

from py_http import serve_asgi  # noqa: E402

mcp = FastMCP("fm-tasks")
mcp.add_extension(TasksExtension())  # memory:// backend, in-process worker

POLL = timedelta(milliseconds=200)


def log(**event) -> None:
    print(json.dumps(event), file=sys.stderr, flush=True)


@mcp.tool(task=TaskConfig(mode="required", poll_interval=POLL))
async def slow_compute(seconds: float = 1, label: str = "") -> str:
    """Sleep for `seconds`, as a task, then say so."""
    log(event="started", tool="slow_compute", seconds=seconds)
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        log(event="cancelled", tool="slow_compute")
        raise
    log(event="finished", tool="slow_compute")
    return f"computed {label} after {seconds}s"


@mcp.tool(task=TaskConfig(mode="required", poll_interval=POLL))
async def failing_job() -> str:
    """A task that ends with a tool error."""
    await asyncio.sleep(0.3)
    raise ToolError("failing_job always fails")


@mcp.tool(task=TaskConfig(mode="required", poll_interval=POLL))
async def confirm_delete(filename: str, ctx: Context):
    """Ask the person inside the task, then report the answer."""
    answers = ctx.input_responses
    if not answers:
        schema = {"type": "object", "properties": {"confirm": {"type": "boolean"}},
                  "required": ["confirm"]}
        request = t.ElicitRequest(params=t.ElicitRequestFormParams(
            message=f"Delete {filename}?", requested_schema=schema))
        return t.InputRequiredResult(input_requests={"confirm": request})
    answer = answers.get("confirm")
    if hasattr(answer, "model_dump"):  # an ElicitResult: action, content
        answer = answer.model_dump(mode="json", by_alias=True, exclude_none=True)
    log(event="answered", tool="confirm_delete", answer=answer)
    return f"confirm_delete {filename}: {json.dumps(answer)}"


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, metavar="PORT", required=True)
    args = parser.parse_args()
    serve_asgi(mcp.http_app(path="/mcp"), args.http, lifespan="on")
