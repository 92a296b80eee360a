"""A server of generated tools, written with the Python SDK's low-level `Server` (the way
to serve a tool list that is data, not functions): the reference for gh-gen-server.

    GEN_TOOLS_FILE=tools.json python gen_server.py

The file is `gh-gen-server --dump --tools N`, so both servers offer byte-for-byte the same
definitions. Every call answers with a small structured result naming the tool and its
arguments, as gh-gen-server does.
"""

import json
import os

import anyio

from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, ListToolsResult, TextContent, Tool

TOOLS = [Tool.model_validate(t) for t in json.loads(open(os.environ["GEN_TOOLS_FILE"]).read())]
NAMES = {t.name for t in TOOLS}


async def list_tools(_ctx, _params) -> ListToolsResult:
    return ListToolsResult(tools=TOOLS)


async def call_tool(_ctx, params) -> CallToolResult:
    if params.name not in NAMES:
        raise MCPError(code=-32602, message=f"unknown tool: {params.name}")
    value = {"tool": params.name, "arguments": params.arguments}
    text = json.dumps(value, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=value)


server = Server("gen-mcp", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
