// The lab's page: one event stream from the host, drawn as a conversation, a timeline per
// turn, a table of tool calls, the person's questions, a manual panel and an explorer.
// Everything shown comes from the host; nothing is fetched from anywhere else.
"use strict";

const TOKEN = document.querySelector('meta[name="lab-token"]').content;
const $ = (id) => document.getElementById(id);

/** Build an element: el("div", {class: "x", onclick: f}, child, "text", ...). */
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

const pretty = (v) => JSON.stringify(v, null, 2);
/** A text that may hold JSON, shown pretty when it does. */
function prettyText(text) {
  try { return pretty(JSON.parse(text)); } catch { return text; }
}
const isEmpty = (v) => v === null || v === undefined || (typeof v === "object" && Object.keys(v).length === 0);

/** Call the lab's API with the token; returns {ok, status, body}. */
async function api(path, body) {
  const init = { headers: { "X-Lab-Token": TOKEN } };
  if (body !== undefined) {
    init.method = "POST";
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  const type = res.headers.get("content-type") || "";
  const data = type.startsWith("application/json") ? await res.json().catch(() => ({})) : await res.text();
  return { ok: res.ok, status: res.status, body: data };
}

// ---------------------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------------------
const state = {
  lastSeq: -1,
  model: null,
  manual: false,
  tools: [],
  turns: new Map(), // turn number -> Turn
  running: null,    // the running turn's number
  calls: [],        // every tool record, in order
  selectedCall: null,
  prompts: new Map(),
};

/** One turn: its events, its DOM, its calls. */
class Turn {
  constructor(n, start) {
    this.n = n;
    this.kind = start ? start.kind : "startup";
    this.start = start;
    this.events = [];
    this.calls = [];
    this.details = [];
    this.t0 = start ? start.t : 0;
    this.t1 = null;
    this.lists = [];
    this.build();
  }

  build() {
    if (this.n === 0) {
      this.steps = el("ol", { class: "steps" });
      this.node = el("details", { class: "turn startup", "data-turn": "0" },
        el("summary", { text: "Start-up: servers and their tools" }), this.steps);
      $("turns").prepend(this.node);
      this.lists.push(this.steps);
      return;
    }
    const title = this.kind === "ask"
      ? el("div", { class: "q" }, el("span", { class: "who you", text: "you" }), this.start.question)
      : el("div", { class: "q" }, el("span", { class: "who you", text: "manual" }),
        `${this.start.tool} `, el("code", { text: this.start.arguments }));
    this.steps = el("ol", { class: "steps" });
    this.timeline = el("div", { class: "timeline", "aria-label": "timeline" });
    this.answer = el("div", { class: "answer", hidden: true });
    this.node = el("article", { class: "turn", "data-turn": String(this.n), "data-kind": this.kind },
      title, this.steps, this.timeline, this.answer);
    $("turns").append(this.node);
    this.lists.push(this.steps);
    if (this.kind === "manual") {
      $("manual-steps").replaceChildren();
      $("manual-result").hidden = true;
      this.lists.push($("manual-steps"));
    }
  }

  addStep(e) {
    for (const list of this.lists) {
      const data = isEmpty(e.data) ? null
        : el("details", {}, el("summary", { text: "data" }), el("pre", { text: pretty(e.data) }));
      list.append(el("li", { "data-who": e.who },
        el("span", { class: `who ${e.who}`, text: e.who }),
        el("span", { class: "text" }, e.text, " ", data)));
    }
  }

  /** A task of an earlier turn has ended: the person is told here, where the model reads its end. */
  addNotice(e) {
    const text = `Task ${e.task_id} (${e.tool} on ${e.server}), which went on in the background, `
      + `has ended: ${e.status}. The model reads its end with this question.`;
    this.node.insertBefore(el("div", { class: "notice", role: "status", "data-task": e.task_id, text }), this.steps);
  }

  end(e) {
    this.t1 = e.t;
    if (this.kind === "ask") {
      this.answer.textContent = e.answer;
      this.answer.hidden = false;
    } else if (this.kind === "manual") {
      this.answer.textContent = prettyText(e.for_model);
      this.answer.hidden = false;
      // No model proposed it, and none reads it in this turn.
      $("manual-result").textContent = "The result, as a model would read it:\n" + prettyText(e.for_model);
      $("manual-result").hidden = false;
    }
    drawTimeline(this);
  }
}

function turnOf(n) {
  let t = state.turns.get(n);
  if (!t) {
    t = new Turn(n, null);
    state.turns.set(n, t);
  }
  return t;
}

// ---------------------------------------------------------------------------------------
// The event stream
// ---------------------------------------------------------------------------------------
/** The lab's clock as last seen: server time `t` at page time `at`. */
const clock = { t: 0, at: 0 };

function handle(e) {
  if (e.seq <= state.lastSeq) return; // replayed after a reconnect
  state.lastSeq = e.seq;
  clock.t = e.t;
  clock.at = performance.now();
  if (e.type === "turn_start") {
    const t = new Turn(e.turn, e);
    state.turns.set(e.turn, t);
    t.events.push(e);
    setRunning(e.turn, e);
    reveal(t.node);
    return;
  }
  const turn = turnOf(e.turn);
  turn.events.push(e);
  switch (e.type) {
    case "step": turn.addStep(e); break;
    case "task_ended": turn.addNotice(e); break;
    case "tool":
      addCall(turn, e);
      if (state.running === e.turn) {
        $("running-what").textContent = `turn ${e.turn}: ${e.tool} ended (${e.outcome})`;
        $("progress").hidden = true;
        $("progress-text").textContent = "";
      }
      break;
    case "model_start":
      if (state.running === e.turn) $("running-what").textContent = `turn ${e.turn}: the model is deciding`;
      break;
    case "call_detail": addDetail(turn, e); break;
    case "prompt":
      showPrompt(e);
      if (state.running === e.turn) $("running-what").textContent = `turn ${e.turn}: waiting for your answer`;
      break;
    case "prompt_closed": closePrompt(e); break;
    case "progress": showProgress(e); break;
    case "wire":
      if (e.direction === "to_server" && e.method === "tools/call") {
        $("running-what").textContent = `turn ${e.turn}: ${e.server} is running ${e.tool || "a tool"}`;
      }
      break;
    case "turn_end":
      turn.end(e);
      setRunning(null);
      refreshRecordings();
      break;
    default: break;
  }
  if (turn.n !== 0 && turn.t1 === null) scheduleTimeline(turn);
}

function connect() {
  const source = new EventSource(`api/events?token=${encodeURIComponent(TOKEN)}`);
  source.onopen = () => setStatus();
  source.onmessage = (m) => {
    try { handle(JSON.parse(m.data)); } catch (err) { console.error(err); }
  };
  source.addEventListener("lagged", () => location.reload());
  source.onerror = () => { $("status").textContent = "reconnecting to the lab…"; };
}

function setStatus() {
  const who = state.manual ? "manual (no model)" : `model: ${state.model}`;
  $("status").textContent = `${who} · ${state.tools.length} tools · connected`;
}

// ---------------------------------------------------------------------------------------
// Running turn, progress, Stop
// ---------------------------------------------------------------------------------------
let runningTimer = null;
function setRunning(n, start) {
  state.running = n;
  const bar = $("running");
  clearInterval(runningTimer);
  $("stop-note").textContent = "";
  $("progress").hidden = true;
  $("progress-text").textContent = "";
  if (n === null) {
    bar.hidden = true;
    $("ask").disabled = state.manual;
    $("manual-run").disabled = false;
    return;
  }
  bar.hidden = false;
  $("ask").disabled = true;
  $("manual-run").disabled = true;
  $("running-what").textContent = start.kind === "ask"
    ? `turn ${n}: the model is working on “${start.question}”` : `turn ${n}: ${start.tool}`;
  const began = performance.now();
  runningTimer = setInterval(() => {
    $("running-time").textContent = `${((performance.now() - began) / 1000).toFixed(1)} s`;
    if (state.turns.has(n)) scheduleTimeline(state.turns.get(n));
  }, 250);
}

function showProgress(e) {
  const p = $("progress");
  p.hidden = false;
  if (e.total) { p.max = e.total; p.value = e.progress; } else { p.removeAttribute("value"); }
  const of = e.total ? ` of ${e.total}` : "";
  $("progress-text").textContent = `${e.progress}${of}${e.message ? " — " + e.message : ""}`;
}

$("stop").addEventListener("click", async () => {
  const r = await api("api/stop", {});
  $("stop-note").textContent = r.ok && r.body.stopped ? "stopping the call…" : "no call in flight to stop";
});

// ---------------------------------------------------------------------------------------
// The timeline: one bar per model call, server round and wait for the person
// ---------------------------------------------------------------------------------------
const pendingDraw = new Set();
function scheduleTimeline(turn) {
  if (pendingDraw.has(turn)) return;
  pendingDraw.add(turn);
  setTimeout(() => { pendingDraw.delete(turn); drawTimeline(turn); }, 120);
}

/** Bars from the events' timestamps: [{lane, from, to, label, open}]. */
function bars(turn, now) {
  const out = [];
  let model = null;
  const rounds = new Map();
  const waits = new Map();
  for (const e of turn.events) {
    if (e.type === "model_start") model = e.t;
    else if (e.type === "model_end" && model !== null) {
      const label = e.error ? "model failed" : e.answer ? "model: answer" : `model: ${(e.calls || []).join(", ")}`;
      out.push({ lane: "model", from: model, to: e.t, label });
      model = null;
    } else if (e.type === "wire" && e.method === "tools/call" && e.direction === "to_server") {
      rounds.set(`${e.server} ${JSON.stringify(e.id)}`, { from: e.t, label: `${e.server}: ${e.tool || "tools/call"}` });
    } else if (e.type === "wire" && e.direction === "from_server" && (e.kind === "result" || e.kind === "error")) {
      const key = `${e.server} ${JSON.stringify(e.id)}`;
      const r = rounds.get(key);
      if (r) { out.push({ lane: "server", from: r.from, to: e.t, label: r.label }); rounds.delete(key); }
    } else if (e.type === "tool") {
      // A round that never got its answer (stopped, timed out) ends with its call.
      for (const [key, r] of rounds) {
        out.push({ lane: "server", from: r.from, to: e.t, label: `${r.label} (${e.outcome})` });
        rounds.delete(key);
      }
    } else if (e.type === "prompt") {
      waits.set(e.id, { from: e.t, label: e.kind === "approval" ? `approve ${e.tool}?` : `${e.server} asks` });
    } else if (e.type === "prompt_closed") {
      const w = waits.get(e.id);
      if (w) { out.push({ lane: "person", from: w.from, to: e.t, label: w.label }); waits.delete(e.id); }
    }
  }
  if (model !== null) out.push({ lane: "model", from: model, to: now, label: "model…", open: true });
  for (const r of rounds.values()) out.push({ lane: "server", from: r.from, to: now, label: r.label, open: true });
  for (const w of waits.values()) out.push({ lane: "person", from: w.from, to: now, label: w.label, open: true });
  return out;
}

const LANES = ["model", "server", "person"];
const LANE_NAMES = { model: "model", server: "servers", person: "person" };

function drawTimeline(turn) {
  if (!turn.timeline) return;
  const last = turn.events.length ? turn.events[turn.events.length - 1].t : turn.t0;
  const now = turn.t1 !== null ? turn.t1 : Math.max(last, clock.t + (performance.now() - clock.at));
  const list = bars(turn, now);
  const span = Math.max(now - turn.t0, 1);
  const W = 640, left = 62, right = 10, laneH = 20, top = 6, axis = 20;
  const H = top + LANES.length * (laneH + 6) + axis;
  const x = (t) => left + ((t - turn.t0) / span) * (W - left - right);
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": `timeline of turn ${turn.n}`, "data-bars": String(list.length) });
  LANES.forEach((lane, i) => {
    const y = top + i * (laneH + 6);
    root.append(svg("rect", { x: left, y, width: W - left - right, height: laneH, fill: "#f3f5f8", rx: 3 }));
    root.append(svg("text", { x: 4, y: y + 14, class: "lane-label" }, LANE_NAMES[lane]));
  });
  for (const b of list) {
    const i = LANES.indexOf(b.lane);
    const y = top + i * (laneH + 6);
    const x0 = x(b.from), w = Math.max(x(b.to) - x0, 2);
    const ms = (b.to - b.from).toFixed(1);
    const rect = svg("rect", { x: x0, y: y + 2, width: w, height: laneH - 4, rx: 3, class: `${b.lane}${b.open ? " open" : ""}`, "data-lane": b.lane });
    rect.append(svg("title", {}, `${b.label} — ${ms} ms`));
    root.append(rect);
    if (w > 60) {
      const text = svg("text", { x: x0 + 4, y: y + 14, class: "bar-label" }, `${b.label} ${ms} ms`);
      const clip = `clip-${turn.n}-${Math.round(x0)}-${i}`;
      const cp = svg("clipPath", { id: clip });
      cp.append(svg("rect", { x: x0, y, width: w - 2, height: laneH }));
      root.append(cp);
      text.setAttribute("clip-path", `url(#${clip})`);
      root.append(text);
    }
  }
  const axisY = top + LANES.length * (laneH + 6) + 4;
  root.append(svg("line", { x1: left, x2: W - right, y1: axisY, y2: axisY, stroke: "#c7cdd6" }));
  for (let k = 0; k <= 4; k++) {
    const t = turn.t0 + (span * k) / 4;
    const label = span >= 2000 ? `${((t - turn.t0) / 1000).toFixed(1)} s` : `${Math.round(t - turn.t0)} ms`;
    root.append(svg("line", { x1: x(t), x2: x(t), y1: axisY, y2: axisY + 4, stroke: "#c7cdd6" }));
    root.append(svg("text", { x: Math.min(x(t), W - 40), y: axisY + 15, class: "tick" }, label));
  }
  turn.timeline.replaceChildren(root);
}

// ---------------------------------------------------------------------------------------
// The tool-call table
// ---------------------------------------------------------------------------------------
function addCall(turn, e) {
  const call = { ...e, index: turn.calls.length, forModel: turn.details[turn.calls.length] };
  turn.calls.push(call);
  state.calls.push(call);
  $("calls-empty").hidden = true;
  const row = el("tr", { "data-turn": String(turn.n), "data-tool": e.tool, "data-outcome": e.outcome, onclick: () => selectCall(call, row) },
    el("td", { text: turn.n }),
    el("td", { text: e.server }),
    el("td", { class: "mono" }, breakable(e.tool)),
    el("td", { class: "mono", text: (e.arg_keys || []).join(", ") || "—" }),
    el("td", { class: `outcome ${e.outcome}`, text: e.outcome }),
    el("td", { "data-col": "approved", text: approvedBy(e) }),
    el("td", { "data-col": "form", text: e.server_asked ? "yes" : "no" }),
    el("td", { text: e.ms }),
    el("td", { text: e.result_bytes }));
  call.row = row;
  $("calls").tBodies[0].append(row);
}

/** Who let a call run, in a word (the record's `approved_by`); "—" when it did not run. */
const APPROVED = {
  person: "you", option: "--yes", client: "client", rule: "rule", allow_list: "allow-list",
  remembered: "remembered", hook: "hook", host: "host",
};
const approvedBy = (e) => (e.approved_by ? APPROVED[e.approved_by] || e.approved_by : "—");

/** Was the call the person's own, from the manual panel (no model proposed it)? */
const byHand = (call) => (state.turns.get(call.turn) || {}).kind === "manual";

/** A namespaced name that may wrap after its `__`. */
function breakable(name) {
  const parts = String(name).split("__");
  return parts.flatMap((p, i) => (i < parts.length - 1 ? [p + "__", el("wbr")] : [p]));
}

function addDetail(turn, e) {
  turn.details[e.index] = e.for_model;
  const call = turn.calls[e.index];
  if (call) {
    call.forModel = e.for_model;
    if (state.selectedCall === call) showCall(call);
  }
}

function selectCall(call, row) {
  for (const r of $("calls").tBodies[0].rows) r.classList.remove("selected");
  row.classList.add("selected");
  state.selectedCall = call;
  showCall(call);
}

function showCall(call) {
  const box = $("call-detail");
  box.hidden = false;
  box.replaceChildren(
    el("h3", { text: `${call.tool} (turn ${call.turn}, step ${call.step})` }),
    el("p", { class: "muted", text: `${call.server} · ${call.outcome} · ${call.ms} ms · ${call.result_bytes} bytes back · approved by: ${approvedBy(call)} · the server asked you: ${call.server_asked ? "yes" : "no"} · trace ${call.trace_id}` }),
    el("h4", { text: "Arguments" }),
    el("pre", { class: "args", text: call.arguments === null || call.arguments === undefined ? "(none recorded)" : pretty(call.arguments) }),
    el("h4", { text: byHand(call) ? "The result, as a model would read it" : "What went back to the model" }),
    el("pre", { class: "for-model", text: call.forModel === undefined ? "(when the turn ends)" : prettyText(call.forModel) }));
}

// ---------------------------------------------------------------------------------------
// The person: approvals, forms, URL requests
// ---------------------------------------------------------------------------------------
function hintBadges(annotations) {
  const words = [];
  const a = annotations || {};
  if (a.read_only_hint === true) words.push(["read-only", "good"]);
  if (a.read_only_hint === false) words.push(["writes", "warn"]);
  if (a.destructive_hint === true) words.push(["destructive", "warn"]);
  if (a.destructive_hint === false) words.push(["not destructive", ""]);
  if (a.idempotent_hint === true) words.push(["idempotent", ""]);
  if (a.open_world_hint === true) words.push(["open world", "warn"]);
  if (!words.length) words.push(["no hints from the server", ""]);
  return el("div", { class: "badges", title: "The server's own hints: shown, never trusted" },
    words.map(([w, c]) => el("span", { class: `badge ${c}`, text: w })));
}

function showPrompt(e) {
  let card;
  if (e.kind === "approval") {
    card = el("div", { class: "prompt", "data-kind": "approval", "data-id": String(e.id) },
      el("h3", { text: "Run this call?" }),
      el("p", {}, e.by_person ? "You asked to run " : "The assistant wants to run ", el("code", { text: e.tool }),
        " on server ", el("span", { class: "asker", text: e.server }), " with exactly these arguments:"),
      el("pre", { text: pretty(e.arguments) }),
      e.proposed ? el("p", { class: "muted" }, `Rewritten by the beforeCall hook; ${e.by_person ? "you" : "the assistant"} proposed: `,
        el("code", { text: JSON.stringify(e.proposed) })) : null,
      e.why ? el("p", { class: "muted", text: e.why }) : null,
      (e.flows || []).length ? el("div", { class: "flows", title: "Where each argument came from, as the host traced it" },
        el("p", { class: "muted", text: "Where the arguments came from:" }),
        el("ul", {}, e.flows.map((f) => el("li", { class: /untrusted|made it/.test(f) ? "warn" : "", text: f })))) : null,
      hintBadges(e.annotations),
      el("div", { class: "buttons" },
        el("button", { class: "ok", type: "button", text: "Run", onclick: () => answer(e.id, { run: true }, card) }),
        e.may_remember ? el("button", { type: "button", text: "Allow this tool for this session", title: "a: until the host stops, while the tool's definition stays the same",
          onclick: () => answer(e.id, { run: true, remember: "session" }, card) }) : null,
        e.may_remember ? el("button", { type: "button", text: "Allow this tool in this project", title: "A: written to .gatehouse/approvals.json; a changed definition asks again",
          onclick: () => answer(e.id, { run: true, remember: "project" }, card) }) : null,
        el("button", { class: "danger", type: "button", text: "Refuse", onclick: () => answer(e.id, { run: false }, card) })),
      el("div", { class: "form-error" }));
  } else if (e.kind === "form") {
    card = formCard(e);
  } else {
    card = el("div", { class: "prompt", "data-kind": "url", "data-id": String(e.id) },
      el("h3", {}, el("span", { class: "asker", text: e.server }), " asks you to open a web page"),
      el("p", { text: e.message }),
      el("p", { class: "muted", text: "The full address (the lab never opens it; copy it yourself if you trust it):" }),
      el("code", { class: "url", text: e.url }),
      el("div", { class: "buttons" },
        el("button", { class: "ok", type: "button", text: "I opened it myself — continue", onclick: () => answer(e.id, { action: "accept" }, card) }),
        el("button", { type: "button", text: "Decline", onclick: () => answer(e.id, { action: "decline" }, card) }),
        el("button", { type: "button", text: "Cancel", onclick: () => answer(e.id, { action: "cancel" }, card) })),
      el("div", { class: "form-error" }));
  }
  state.prompts.set(e.id, card);
  $("prompts").append(card);
  reveal(card);
}

/** Scroll `node` into view below the sticky bar (tabs, and the running bar when a turn
 * runs), never under it: its `scroll-margin-top` is the bar's height as it is now. */
function reveal(node) {
  const bar = document.querySelector(".sticky");
  document.documentElement.style.setProperty("--sticky-height", `${bar.offsetHeight}px`);
  node.scrollIntoView({ block: "nearest" });
}

function formCard(e) {
  const inputs = new Map();
  const rows = e.fields.map((f) => {
    const id = `f-${e.id}-${f.name}`;
    let input;
    if (f.choices && f.choices.length) {
      input = el("select", { id, name: f.name },
        el("option", { value: "", text: f.required ? "choose…" : "(none)" }),
        f.choices.map((c) => el("option", { value: c, text: c, selected: f.default === c })));
    } else if (f.kind === "boolean") {
      input = el("input", { id, name: f.name, type: "checkbox", checked: f.default === true });
    } else if (f.kind === "number" || f.kind === "integer") {
      input = el("input", { id, name: f.name, type: "number", step: f.kind === "integer" ? "1" : "any",
        min: f.minimum, max: f.maximum, value: f.default });
    } else {
      input = el("input", { id, name: f.name, type: "text", minlength: f.minLength, maxlength: f.maxLength,
        value: f.default });
    }
    inputs.set(f.name, { f, input });
    return el("div", { class: "field", "data-field": f.name },
      el("label", { for: id, text: `${f.title || f.name}${f.required ? " *" : ""}` }), input,
      f.description ? el("span", { class: "help", text: f.description }) : null,
      el("span", { class: "err" }));
  });
  const card = el("div", { class: "prompt", "data-kind": "form", "data-id": String(e.id) },
    el("h3", {}, el("span", { class: "asker", text: e.server }), " asks"),
    el("p", { text: e.message }),
    rows,
    el("div", { class: "buttons" },
      el("button", { class: "ok", type: "button", text: "Accept", onclick: () => submitForm() }),
      el("button", { type: "button", text: "Decline", onclick: () => answer(e.id, { action: "decline" }, card) }),
      el("button", { type: "button", text: "Cancel", onclick: () => answer(e.id, { action: "cancel" }, card) })),
    el("div", { class: "form-error" }));

  function submitForm() {
    const content = {};
    let ok = true;
    for (const [name, { f, input }] of inputs) {
      const err = card.querySelector(`[data-field="${CSS.escape(name)}"] .err`);
      err.textContent = "";
      const raw = f.kind === "boolean" ? String(input.checked) : input.value.trim();
      let problem = null;
      if (raw === "" && f.required) problem = `${name} is required`;
      else if (raw !== "" && f.choices && f.choices.length && !f.choices.includes(raw)) problem = `${name} must be one of ${f.choices.join(", ")}`;
      else if (raw !== "" && f.kind === "integer" && !/^-?\d+$/.test(raw)) problem = `${name} must be a whole number`;
      else if (raw !== "" && f.kind === "number" && Number.isNaN(Number(raw))) problem = `${name} must be a number`;
      if (problem) { err.textContent = problem; ok = false; continue; }
      if (raw !== "") content[name] = raw;
    }
    if (ok) answer(e.id, { action: "accept", content }, card);
  }
  return card;
}

async function answer(id, body, card) {
  for (const b of card.querySelectorAll("button")) b.disabled = true;
  const r = await api(`api/prompts/${id}`, body);
  if (r.ok) return; // the prompt_closed event removes the card
  for (const b of card.querySelectorAll("button")) b.disabled = false;
  card.querySelector(".form-error").textContent = (r.body && r.body.error) || `refused (${r.status})`;
  for (const [name, msg] of Object.entries((r.body && r.body.fields) || {})) {
    const err = card.querySelector(`[data-field="${CSS.escape(name)}"] .err`);
    if (err) err.textContent = msg;
  }
}

function closePrompt(e) {
  const card = state.prompts.get(e.id);
  if (card) { card.remove(); state.prompts.delete(e.id); }
}

// ---------------------------------------------------------------------------------------
// Asking, and the manual panel
// ---------------------------------------------------------------------------------------
$("ask-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const question = $("question").value.trim();
  if (!question) return;
  const r = await api("api/ask", { question });
  $("ask-note").textContent = r.ok ? "" : (r.body.error || `refused (${r.status})`);
  if (r.ok) $("question").value = "";
});
$("question").addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); $("ask-form").requestSubmit(); }
});

/** A starting value for one schema property. */
function sample(prop) {
  if (!prop || typeof prop !== "object") return "";
  if ("default" in prop) return prop.default;
  if (Array.isArray(prop.enum) && prop.enum.length) return prop.enum[0];
  const type = Array.isArray(prop.type) ? prop.type[0] : prop.type;
  switch (type) {
    case "integer": case "number": return prop.minimum !== undefined ? prop.minimum : 0;
    case "boolean": return false;
    case "array": return [];
    case "object": return {};
    default: return "";
  }
}

/** Arguments prefilled from the schema: the required properties, and any with a default. */
function prefill(schema) {
  const out = {};
  const props = (schema && schema.properties) || {};
  const required = (schema && schema.required) || [];
  for (const [name, prop] of Object.entries(props)) {
    if (required.includes(name) || (prop && "default" in prop)) out[name] = sample(prop);
  }
  return pretty(out);
}

function currentTool() {
  return state.tools.find((t) => t.name === $("manual-tool").value);
}

function showTool() {
  const t = currentTool();
  if (!t) return;
  $("manual-about").replaceChildren(
    el("div", { text: t.description || "(no description)" }),
    hintBadges(t.annotations),
    // What the policy does with its calls, in the host's own words (policy::standing).
    el("div", { id: "manual-policy", "data-standing": t.policy.standing, text: `Policy: ${t.policy.words}` }));
  $("manual-args").value = prefill(t.input_schema);
  checkArgs();
}

function checkArgs() {
  const note = $("manual-json-note");
  try {
    const v = JSON.parse($("manual-args").value || "{}");
    const obj = v && typeof v === "object" && !Array.isArray(v);
    note.textContent = obj ? "" : "Not a JSON object: the host will refuse it.";
  } catch (err) {
    note.textContent = `Not valid JSON (${err.message}): the host will refuse it.`;
  }
  note.className = note.textContent ? "note err" : "note";
}

$("manual-tool").addEventListener("change", showTool);
$("manual-reset").addEventListener("click", showTool);
$("manual-args").addEventListener("input", checkArgs);
$("manual-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const r = await api("api/propose", { tool: $("manual-tool").value, arguments: $("manual-args").value });
  if (!r.ok) {
    $("manual-json-note").textContent = r.body.error || `refused (${r.status})`;
    $("manual-json-note").className = "note err";
  }
});

function fillTools() {
  const select = $("manual-tool");
  const byServer = new Map();
  for (const t of state.tools) {
    if (!byServer.has(t.server)) byServer.set(t.server, []);
    byServer.get(t.server).push(t);
  }
  select.replaceChildren(...[...byServer].map(([server, tools]) =>
    el("optgroup", { label: server }, tools.map((t) => el("option", { value: t.name, text: t.name })))));
  showTool();
}

// ---------------------------------------------------------------------------------------
// Tabs
// ---------------------------------------------------------------------------------------
function showTab(name) {
  for (const b of document.querySelectorAll(".tabs button")) b.setAttribute("aria-selected", String(b.dataset.tab === name));
  for (const tab of ["conversation", "manual", "explorer", "eval"]) $(`tab-${tab}`).hidden = tab !== name;
  $("main").classList.toggle("wide", name === "explorer" || name === "eval");
  if (name === "explorer") refreshRecordings();
}
for (const b of document.querySelectorAll(".tabs button")) b.addEventListener("click", () => showTab(b.dataset.tab));

// ---------------------------------------------------------------------------------------
// The explorer: step through a recording message by message
// ---------------------------------------------------------------------------------------
const ex = { lines: [], at: -1, source: null };

async function refreshRecordings() {
  const r = await api("api/recordings");
  if (!r.ok) return;
  const select = $("ex-source");
  const keep = select.value;
  const options = r.body.recordings.map((rec) =>
    el("option", { value: `turn:${rec.turn}`, text: `turn ${rec.turn}: ${rec.label} (${rec.lines} messages)` }));
  if (ex.source && ex.source.startsWith("file:")) options.push(el("option", { value: ex.source, text: ex.source.slice(5) }));
  select.replaceChildren(...options);
  if ([...select.options].some((o) => o.value === keep)) select.value = keep;
  else if (select.options.length) {
    select.value = select.options[select.options.length - 1].value;
  }
  if (select.value !== ex.source) loadSource(select.value);
}

async function loadSource(value) {
  if (!value || value.startsWith("file:")) return;
  const turn = value.slice(5);
  const r = await api(`api/recordings/${turn}`);
  if (!r.ok) { $("ex-note").textContent = `cannot load turn ${turn}`; return; }
  ex.source = value;
  openLines(parseLines(r.body));
}

/** JSON lines to objects; lines that are not JSON are counted and skipped. */
function parseLines(text) {
  const lines = [];
  let bad = 0;
  for (const line of String(text).split("\n")) {
    if (!line.trim()) continue;
    try { lines.push(JSON.parse(line)); } catch { bad++; }
  }
  $("ex-note").textContent = bad ? `${bad} line(s) were not JSON and were skipped` : "";
  return lines;
}

function openLines(lines) {
  ex.lines = lines;
  ex.at = lines.length ? 0 : -1;
  const body = $("ex-list").tBodies[0];
  body.replaceChildren(...lines.map((m, i) => el("tr", { "data-i": String(i), onclick: () => go(i) },
    el("td", { text: i + 1 }),
    el("td", { text: m.t_ms }),
    el("td", { text: m.server }),
    el("td", { class: `dir ${m.direction}`, text: m.direction === "to_server" ? "→" : m.direction === "from_server" ? "←" : "!" , title: m.direction }),
    el("td", { text: m.kind }),
    el("td", { class: "mono", text: m.id === null || m.id === undefined ? "" : JSON.stringify(m.id) }),
    el("td", { class: "mono summary", text: m.summary || m.method || "", title: m.summary || "" }),
    el("td", { text: m.bytes }))));
  totals(lines);
  go(ex.at);
}

function totals(lines) {
  const count = (f) => lines.filter(f).length;
  const bytes = (dir) => lines.filter((m) => m.direction === dir).reduce((a, m) => a + (m.bytes || 0), 0);
  const last = lines.reduce((a, m) => Math.max(a, m.t_ms || 0), 0);
  const items = [
    ["messages", lines.length],
    ["requests", count((m) => m.kind === "request")],
    ["answers", count((m) => m.kind === "result" || m.kind === "error")],
    ["notifications", count((m) => m.kind === "notification")],
    ["bytes to servers", bytes("to_server")],
    ["bytes from servers", bytes("from_server")],
    ["stderr lines", count((m) => m.direction === "stderr")],
    ["last event (ms)", last],
  ];
  $("ex-totals").replaceChildren(...items.map(([label, n]) =>
    el("div", { class: "total", "data-total": label }, el("b", { text: n }), el("span", { text: label }))));
}

function go(i) {
  if (!ex.lines.length) {
    ex.at = -1;
    $("ex-pos").textContent = "0 / 0";
    $("ex-detail").replaceChildren(el("p", { class: "muted", text: "This recording is empty." }));
    return;
  }
  ex.at = Math.max(0, Math.min(i, ex.lines.length - 1));
  const rows = $("ex-list").tBodies[0].rows;
  for (const r of rows) r.classList.remove("selected");
  rows[ex.at].classList.add("selected");
  rows[ex.at].scrollIntoView({ block: "nearest" });
  $("ex-pos").textContent = `${ex.at + 1} / ${ex.lines.length}`;
  const m = ex.lines[ex.at];
  const dl = el("dl", {});
  for (const k of ["t_ms", "server", "direction", "kind", "id", "method", "summary", "bytes"]) {
    dl.append(el("dt", { text: k }), el("dd", { class: "mono", text: m[k] === null || m[k] === undefined ? "—" : typeof m[k] === "object" ? JSON.stringify(m[k]) : m[k] }));
  }
  $("ex-detail").replaceChildren(el("h3", { text: `Message ${ex.at + 1}: ${m.summary || m.method || m.kind}` }), dl,
    el("pre", { class: "message", text: typeof m.message === "string" ? m.message : pretty(m.message) }));
  $("ex-prev").disabled = ex.at === 0;
  $("ex-next").disabled = ex.at === ex.lines.length - 1;
}

$("ex-prev").addEventListener("click", () => go(ex.at - 1));
$("ex-next").addEventListener("click", () => go(ex.at + 1));
$("ex-refresh").addEventListener("click", refreshRecordings);
$("ex-source").addEventListener("change", () => loadSource($("ex-source").value));
$("ex-file").addEventListener("change", async () => {
  const file = $("ex-file").files[0];
  if (!file) return;
  const text = await file.text();
  ex.source = `file:${file.name}`;
  const select = $("ex-source");
  for (const o of [...select.options]) if (o.value.startsWith("file:")) o.remove();
  select.append(el("option", { value: ex.source, text: `file: ${file.name}` }));
  select.value = ex.source;
  openLines(parseLines(text));
});
document.addEventListener("keydown", (ev) => {
  if ($("tab-explorer").hidden || ["INPUT", "TEXTAREA", "SELECT"].includes(document.activeElement.tagName)) return;
  if (ev.key === "ArrowLeft" || ev.key === "k") go(ex.at - 1);
  if (ev.key === "ArrowRight" || ev.key === "j") go(ex.at + 1);
});

// ---------------------------------------------------------------------------------------
// An eval's report (`gatehouse lab --eval DIR`): variants, tasks, failed checks
// ---------------------------------------------------------------------------------------
const pct = (x) => `${Math.round(x * 100)}%`;
const rateText = (r) => `${r.passed}/${r.runs} ${pct(r.rate)} [${pct(r.low)}–${pct(r.high)}]`;

function tableRows(table, head, rows) {
  table.tHead.replaceChildren(el("tr", {}, ...head.map((h) => el("th", { text: h }))));
  table.tBodies[0].replaceChildren(...rows.map((cells) => el("tr", {}, ...cells.map((c) => el("td", { text: c })))));
}

async function loadEval() {
  const r = await api("api/eval");
  if (!r.ok) return;
  const report = r.body;
  $("eval-tab").hidden = false;
  $("eval-title").textContent =
    `${report.suite}: ${report.tasks.length} task(s) × ${report.variants.length} variant(s) × ${report.repeat} run(s)`;
  tableRows($("eval-totals"), ["variant", "pass rate [95%]", "model calls", "tokens", "definition bytes/call", "ms", "against the first"],
    report.totals.map((t) => [t.variant, rateText(t.figures.pass), t.figures.model_calls.toFixed(1), Math.round(t.figures.tokens),
      Math.round(t.figures.definition_bytes_per_call), Math.round(t.figures.ms),
      t.against_first ? `${Math.round(t.against_first.difference * 100)} points: ${t.against_first.telling ? "told from chance" : "chance could explain it"}` : ""]));
  tableRows($("eval-tasks"), ["task", ...report.variants],
    report.tasks.map((t) => [t.task, ...t.variants.map((f) => rateText(f.pass))]));
  const items = [];
  for (const a of report.failed) {
    for (const [check, why] of a.failures) {
      items.push(el("li", {},
        el("button", { type: "button", class: "link", "data-recording": a.recording, onclick: () => openAttempt(a.recording),
          text: `${a.task} (${a.variant}, run ${a.number}), check ${check}` }),
        el("span", { text: `: ${why}` })));
    }
  }
  $("eval-failed").replaceChildren(...(items.length ? items : [el("li", { class: "muted", text: "Every check held." })]));
}

/** One attempt's recording in the explorer. */
async function openAttempt(stem) {
  const r = await api(`api/eval/recordings/${encodeURIComponent(stem)}`);
  if (!r.ok) { $("ex-note").textContent = `cannot load the run ${stem}`; return; }
  ex.source = `file:eval run ${stem}`;
  showTab("explorer");
  openLines(parseLines(r.body));
}

// ---------------------------------------------------------------------------------------
// Start
// ---------------------------------------------------------------------------------------
async function start() {
  const r = await api("api/state");
  if (!r.ok) { $("status").textContent = `the lab refused: ${r.status}`; return; }
  state.model = r.body.model;
  state.manual = r.body.manual;
  state.tools = r.body.tools;
  fillTools();
  setStatus();
  if (state.manual) {
    $("ask").disabled = true;
    $("question").disabled = true;
    $("ask-note").textContent = "No model in this lab (--manual): run tools from the Manual tab.";
    showTab("manual");
  }
  connect();
  if (r.body.eval) loadEval();
}
start();
