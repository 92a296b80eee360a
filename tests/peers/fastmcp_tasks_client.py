#!/usr/bin/env python3
"""A foreign client that speaks the tasks extension of 2026-07-28 (SEP-2663): the FastMCP
4.1.4 client with fastmcp-tasks 4.1.4 (its import puts the extension on every Client), for
the interop tests of the reference servers' tasks.

    fastmcp_tasks_client.py --plan JSON [--header "NAME: VALUE"]... [--answer KEY=VALUE]...
                            [--decline] (--url http://127.0.0.1:PORT/mcp | -- COMMAND ARGS...)

The plan is a JSON list of steps, run in order on one connection:

  {"call": NAME, "arguments": {...}}     client.call_tool: FastMCP follows a task the
                                         server makes to its end (tasks/get, and questions
                                         inside it answered through the elicitation
                                         handler with tasks/update), as for any call
  {"task": NAME, "arguments": {...}, "then": "result" | "cancel" | "keep"}
                                         call_tool_task: the task's handle; then its result,
                                         or tasks/cancel and a wait for its end, or nothing
  {"get": TASK_ID} / {"cancel": TASK_ID} tasks/get or tasks/cancel of any id, as sent

Questions (elicitation/create, inside a task or not) are accepted with the --answer values,
typed by the form's schema, or declined with --decline; each is recorded under
"elicitations". Over stdio the server gets this process's whole environment.

It prints one JSON document: {protocolVersion, serverInfo, extensions, steps: [...],
elicitations}. A step that fails gets {"error": {code, message} | {type, message}} and the
rest still runs. Exit status: 0, or 2 when the connection failed.
"""
import argparse
import asyncio
import json
import os
import sys
from functools import partial
from typing import Any

import fastmcp_tasks  # noqa: F401  (registers the client half of the extension)
import mcp_types as types
from fastmcp import Client
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
from fastmcp_tasks import call_tool_task
from fastmcp_tasks.client import _send_cancel, _send_get
from mcp.shared.exceptions import MCPError
from peer_json import dump as dump_json
from peer_json import typed

# FastMCP's models carry defaults that are None; those are left out.
dump = partial(dump_json, drop="none")

# The longest a handle's wait for a task's end may take, in seconds.
WAIT_LIMIT = 60.0


def failure(e: BaseException) -> dict:
    """A JSON-RPC error as {code, message}; anything else as {type, message}."""
    if isinstance(e, MCPError):
        return {"code": e.error.code, "message": e.error.message}
    return {"type": type(e).__name__, "message": str(e)}



def elicitation_handler(answers: dict[str, str], decline: bool, seen: list):
    async def on_elicit(message, response_type, params, context):
        schema = getattr(params, "requested_schema", None) or {}
        seen.append({"message": message, "requestedSchema": schema})
        if decline:
            return types.ElicitResult(action="decline")
        props = schema.get("properties", {})
        content = {k: typed(v, props.get(k, {})) for k, v in answers.items() if k in props}
        return types.ElicitResult(action="accept", content=content)

    return on_elicit


def call_result(result: Any) -> dict:
    return {
        "isError": result.is_error,
        "content": [dump(c) for c in result.content],
        "structuredContent": result.structured_content,
    }


async def step(client: Client, s: dict) -> dict:
    if "call" in s:
        result = await client.call_tool(s["call"], s.get("arguments", {}), raise_on_error=False)
        return {"result": call_result(result)}
    if "task" in s:
        task = await call_tool_task(client, s["task"], s.get("arguments", {}), raise_on_error=False)
        out: dict = {"taskId": task.task_id, "created": dump(task.create_result)}
        then = s.get("then", "result")
        if then == "result":
            out["result"] = call_result(await task.result())
        elif then == "cancel":
            await task.cancel()
            out["final"] = dump(await task.wait(timeout=WAIT_LIMIT))
        return out
    if "get" in s:
        return {"task": dump(await _send_get(client.session, s["get"]))}
    if "cancel" in s:
        await _send_cancel(client.session, s["cancel"])
        return {"acknowledged": True}
    raise ValueError(f"not a step: {s}")


def transport(args) -> Any:
    headers = {}
    for h in args.header:
        name, _, value = h.partition(":")
        headers[name.strip()] = value.strip()
    if args.url:
        return StreamableHttpTransport(args.url, headers=headers)
    if not args.command:
        sys.exit("give --url or -- COMMAND")
    return StdioTransport(args.command[0], args.command[1:], env=dict(os.environ), keep_alive=False)


async def main() -> int:
    argv = sys.argv[1:]
    command: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, command = argv[:at], argv[at + 1:]
    p = argparse.ArgumentParser()
    p.add_argument("--plan", required=True)
    p.add_argument("--url")
    p.add_argument("--header", action="append", default=[])
    p.add_argument("--answer", action="append", default=[])
    p.add_argument("--decline", action="store_true")
    args = p.parse_args(argv)
    args.command = command
    answers = dict(a.split("=", 1) for a in args.answer)
    seen: list = []
    out: dict = {"steps": [], "elicitations": seen}
    try:
        client = Client(transport(args), elicitation_handler=elicitation_handler(answers, args.decline, seen))
        async with client:
            out["protocolVersion"] = client.protocol_version
            out["serverInfo"] = dump(client.server_info)
            caps = dump(client.server_capabilities) or {}
            out["extensions"] = sorted((caps.get("extensions") or {}).keys())
            for s in json.loads(args.plan):
                try:
                    out["steps"].append(await step(client, s))
                except Exception as e:  # a failed step is recorded; the rest still runs
                    out["steps"].append({"error": failure(e)})
    except Exception as e:
        out["error"] = failure(e)
        print(json.dumps(out), flush=True)
        return 2
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
