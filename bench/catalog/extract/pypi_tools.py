"""Read the tool definitions of PyPI MCP servers with their own code, without serving.

Servers built on the SDK's MCPServer: build it (create_server) and ask it list_tools().
mcp-server-sqlite (written for an older SDK): its types.Tool(...) literals, read from the
source with ast.literal_eval. Prints {"NAME": {"tools": [...]}}.
"""
import ast, asyncio, importlib, inspect, json, sys, tempfile, pathlib

async def built(module, *args):
    server = importlib.import_module(module).create_server(*args)
    tools = await server.list_tools()
    return [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools]

def literal_tools(module):
    source = inspect.getsource(importlib.import_module(module))
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "Tool":
            out.append({k.arg: ast.literal_eval(k.value) for k in node.keywords})
    return out

async def main():
    repo = pathlib.Path(tempfile.mkdtemp())
    out = {
        "git": await built("mcp_server_git.server", repo),
        "fetch": await built("mcp_server_fetch.server"),
        "time": await built("mcp_server_time.server", "UTC"),
        "sqlite": literal_tools("mcp_server_sqlite.server"),
    }
    json.dump({k: {"tools": v} for k, v in out.items()}, sys.stdout)

asyncio.run(main())
