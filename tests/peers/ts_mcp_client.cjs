#!/usr/bin/env node
// A foreign MCP client on the official TypeScript SDK (@modelcontextprotocol/sdk 1.32.2,
// installed by `scripts/install-test-peers.sh ts_sdk`), for the gateway's interop tests.
//
// It connects to a stdio server command, or with --url to a server on Streamable HTTP
// (--header "NAME: VALUE", repeatable), with the `initialize` handshake (the SDK's newest
// revision, 2025-11-25), declaring form elicitation; lists the tools, then makes the calls
// asked for, in order. Every elicitation/create form is recorded and accepted with the
// --answer KEY=VALUE values (typed by the form's schema), or declined with --decline. It
// prints one JSON document on stdout: protocolVersion, serverInfo, tools, calls: [{name,
// arguments, result | error}], elicitations, error.
//
//   ts_mcp_client.cjs [--call NAME [--args JSON]]... [--answer KEY=VALUE]... [--decline]
//                     [--no-list] (--url URL [--header "NAME: VALUE"]... | -- COMMAND ARGS...)
"use strict";

const path = require("path");

const peers = path.resolve(process.env.GATEHOUSE_PEERS || path.join(__dirname, "..", "..", "target", "peers"));
const sdk = path.join(peers, "ts_sdk", "node_modules", "@modelcontextprotocol", "sdk", "dist", "cjs");
const { Client } = require(path.join(sdk, "client", "index.js"));
const { StdioClientTransport } = require(path.join(sdk, "client", "stdio.js"));
const { StreamableHTTPClientTransport } = require(path.join(sdk, "client", "streamableHttp.js"));
const { ElicitRequestSchema } = require(path.join(sdk, "types.js"));

function parse(argv) {
  const opts = { calls: [], answers: {}, decline: false, list: true, headers: {}, url: null, cmd: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--") { opts.cmd = argv.slice(i + 1); break; }
    else if (a === "--call") opts.calls.push({ name: argv[++i], arguments: {} });
    else if (a === "--args") opts.calls[opts.calls.length - 1].arguments = JSON.parse(argv[++i]);
    else if (a === "--answer") { const [k, ...v] = argv[++i].split("="); opts.answers[k] = v.join("="); }
    else if (a === "--decline") opts.decline = true;
    else if (a === "--no-list") opts.list = false;
    else if (a === "--url") opts.url = argv[++i];
    else if (a === "--header") { const [k, ...v] = argv[++i].split(":"); opts.headers[k.trim()] = v.join(":").trim(); }
    else throw new Error(`unknown argument ${a}`);
  }
  return opts;
}

// An answer typed by the form's schema: booleans and numbers as the form asks for them.
function typed(schema, key, value) {
  const type = schema && schema.properties && schema.properties[key] && schema.properties[key].type;
  if (type === "boolean") return value === "true";
  if (type === "number" || type === "integer") return Number(value);
  return value;
}

function failure(e) {
  return e && typeof e.code === "number"
    ? { code: e.code, message: e.message, data: e.data }
    : { type: (e && e.name) || "Error", message: String((e && e.message) || e) };
}

async function main() {
  const opts = parse(process.argv.slice(2));
  const out = { calls: [], elicitations: [] };
  const client = new Client(
    { name: "gatehouse-ts-test", version: "0.1.0" },
    { capabilities: { elicitation: { form: {} } } },
  );
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    const params = request.params;
    out.elicitations.push({ message: params.message, requestedSchema: params.requestedSchema });
    if (opts.decline) return { action: "decline" };
    const content = {};
    for (const [k, v] of Object.entries(opts.answers)) content[k] = typed(params.requestedSchema, k, v);
    return { action: "accept", content };
  });
  const transport = opts.url
    ? new StreamableHTTPClientTransport(new URL(opts.url), { requestInit: { headers: opts.headers } })
    : new StdioClientTransport({ command: opts.cmd[0], args: opts.cmd.slice(1), env: process.env, stderr: "inherit" });
  // The revision `initialize` agreed on, as the SDK hands it to the transport.
  let negotiated = null;
  const setVersion = transport.setProtocolVersion;
  transport.setProtocolVersion = (version) => {
    negotiated = version;
    if (setVersion) setVersion.call(transport, version);
  };
  try {
    await client.connect(transport);
  } catch (e) {
    out.error = failure(e);
    console.log(JSON.stringify(out));
    process.exit(2);
  }
  out.protocolVersion = negotiated;
  out.serverInfo = client.getServerVersion() || null;
  if (opts.list) {
    try { out.tools = (await client.listTools()).tools; } catch (e) { out.tools = { error: failure(e) }; }
  }
  let failed = false;
  for (const call of opts.calls) {
    try {
      const result = await client.callTool({ name: call.name, arguments: call.arguments });
      failed = failed || result.isError === true;
      out.calls.push({ ...call, result });
    } catch (e) {
      failed = true;
      out.calls.push({ ...call, error: failure(e) });
    }
  }
  await client.close();
  console.log(JSON.stringify(out));
  process.exit(failed ? 1 : 0);
}

main().catch((e) => {
  console.log(JSON.stringify({ error: failure(e) }));
  process.exit(2);
});
