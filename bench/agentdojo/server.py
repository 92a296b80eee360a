#!/usr/bin/env python3
"""One AgentDojo suite served as an MCP server (the official Python SDK's low-level
`Server`), its environment injected for one pair of a user task and an injection task.

    AGENTDOJO_SUITE=banking AGENTDOJO_USER_TASK=user_task_0 \
    AGENTDOJO_INJECTION_TASK=injection_task_1 python server.py

Every function of the suite is a tool, with AgentDojo's description and its argument
schema; a call runs the function on the environment as AgentDojo's own pipeline does, and
the result is its text as an agent reads it. After every call the environment is written
to `$GATEHOUSE_EVAL_DIR/agentdojo-env.pickle`, where the grader reads the world afterwards.
Pickled, not JSON: workspace's and travel's inbox, calendar and drive rebuild themselves
from their initial items when read from JSON, which would undo every change of the run.
"""

import os
import pickle

import anyio
from agentdojo.agent_pipeline.tool_execution import tool_result_to_str
from agentdojo.functions_runtime import FunctionsRuntime
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, ListToolsResult, TextContent, Tool

import common

def serve() -> None:
    """Serve the pair the environment names over stdin and stdout, until stdin ends."""
    suite = common.suite(os.environ["AGENTDOJO_SUITE"])
    env, _ = common.environment(suite, os.environ["AGENTDOJO_USER_TASK"],
                                os.environ.get("AGENTDOJO_INJECTION_TASK"))
    runtime = FunctionsRuntime(suite.tools)
    tools = [Tool(name=f.name, description=f.description,
                  input_schema=f.parameters.model_json_schema()) for f in suite.tools]
    names = {t.name for t in tools}
    out = os.path.join(os.environ.get("GATEHOUSE_EVAL_DIR", "."), "agentdojo-env.pickle")

    def save():
        with open(out + ".part", "wb") as f:
            pickle.dump(env, f)
        os.replace(out + ".part", out)

    async def list_tools(_ctx, _params) -> ListToolsResult:
        return ListToolsResult(tools=tools)

    async def call_tool(_ctx, params) -> CallToolResult:
        if params.name not in names:
            raise MCPError(code=-32602, message=f"unknown tool: {params.name}")
        result, error = runtime.run_function(env, params.name, params.arguments or {})
        save()
        if error:
            return CallToolResult(content=[TextContent(type="text", text=error)], is_error=True)
        return CallToolResult(content=[TextContent(type="text", text=tool_result_to_str(result))])

    server = Server(f"agentdojo-{suite.name}", version="1.0.0",
                    on_list_tools=list_tools, on_call_tool=call_tool)

    async def main() -> None:
        save()
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)


if __name__ == "__main__":
    serve()
