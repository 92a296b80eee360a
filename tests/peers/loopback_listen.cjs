// node --require tests/peers/loopback_listen.cjs SERVER.js ...
//
// For Node servers that listen on a bare port (server-everything's `streamableHttp` mode
// calls express's `app.listen(PORT)`, which binds every interface): every `listen` given
// a port and no host binds 127.0.0.1 instead, and once listening the process prints its
// address on stderr as one line, `listening on http://127.0.0.1:PORT`. With PORT=0 the
// system picks a free port and that line says which.
"use strict";
const net = require("net");

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  if (typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first))) {
    args[0] = Number(first);
    if (typeof args[1] !== "string") args.splice(1, 0, "127.0.0.1");
  } else if (first && typeof first === "object" && first.host === undefined && first.path === undefined) {
    args[0] = { ...first, host: "127.0.0.1" };
  }
  this.once("listening", () => {
    const at = this.address();
    if (at && typeof at === "object") {
      process.stderr.write(`listening on http://${at.address}:${at.port}\n`);
    }
  });
  return listen.apply(this, args);
};
