// Read an MCP server package's tool definitions with its own code, without serving:
// Server.connect is a no-op, the tools/list handler it registers is called directly.
// usage: node capture.mjs PACKAGE_DIR [ARGS...]  (prints {"tools": [...]})
import { createRequire } from "node:module";
import path from "node:path";
import fs from "node:fs";
import { pathToFileURL } from "node:url";
const dir = path.resolve(process.argv[2]);
const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
const bin = typeof pkg.bin === "string" ? pkg.bin : Object.values(pkg.bin || {})[0] || pkg.main;
const require = createRequire(path.join(dir, "package.json"));
// Every copy of the SDK this package may load.
let sdkIndex = require.resolve("@modelcontextprotocol/sdk/server/index.js");
if (sdkIndex.includes("/dist/cjs/") && pkg.type === "module") sdkIndex = sdkIndex.replace("/dist/cjs/", "/dist/esm/");
const { Server } = await import(pathToFileURL(sdkIndex).href);
let handlers = new Map();
const orig = Server.prototype.setRequestHandler;
Server.prototype.setRequestHandler = function (schema, handler) {
  const m = schema?.shape?.method; const method = m?.value ?? m?._def?.value ?? m?.def?.values?.[0] ?? schema?._def?.shape?.()?.method?._def?.value;
  handlers.set(method, handler); if (process.env.DEBUG_CAPTURE) console.error("registered", method, Object.keys(schema?.shape ?? {}));
  return orig.call(this, schema, handler);
};
Server.prototype.connect = async function () {};
process.argv = [process.argv[0], path.join(dir, bin), ...process.argv.slice(3)];
const realExit = process.exit;
process.exit = (code) => { throw new Error("the module called process.exit(" + code + ")"); };
try { await import(pathToFileURL(path.join(dir, bin)).href); } catch (e) { console.error("import:", e.message); }
await new Promise((r) => setTimeout(r, 300));
const list = handlers.get("tools/list");
if (!list) { console.error("no tools/list handler"); realExit(1); }
const result = await list({ method: "tools/list", params: {} }, { signal: new AbortController().signal, sendRequest: async () => ({}), sendNotification: async () => {} });
process.stdout.write(JSON.stringify(result) + "\n");
realExit(0);
