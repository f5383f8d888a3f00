// The crew's web view.  No framework, no build step: the page fetches the
// whole picture once, then follows the session's news on /api/events and
// redraws what changed.  Every text from the session is set as text, never
// as HTML: task text and agent screens are not ours.
"use strict";

const S = { roles: {}, order: [], tasks: {}, gates: [], questions: {}, screenRole: null,
  drafts: {}, open: new Set(), shown: new Set(), held: null };
const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value !== undefined && value !== null && value !== false) node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

async function api(path, body) {
  const init = body === undefined ? {} : {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
  };
  const response = await fetch(path, { credentials: "same-origin", ...init });
  let ack;
  try { ack = await response.json(); } catch (e) { ack = { ok: false, error: response.statusText }; }
  if (!ack.ok) throw new Error(ack.error || ("HTTP " + response.status));
  return ack;
}

// A text box the page redraws (a gate's reason, an answer) keeps what was typed
// into it, and the focus, across redraws: news arrives while someone types.
function draftInput(key, placeholder, label) {
  const input = el("input", { type: "text", placeholder, "aria-label": label, "data-draft": key });
  input.value = S.drafts[key] || "";
  input.addEventListener("input", () => { S.drafts[key] = input.value; });
  return input;
}

function keepFocus(redraw) {
  const before = document.activeElement;
  const key = before && before.dataset ? before.dataset.draft : undefined;
  const caret = key ? [before.selectionStart, before.selectionEnd] : null;
  redraw();
  if (!key) return;
  const again = document.querySelector('[data-draft="' + CSS.escape(key) + '"]');
  if (again && again !== before) { again.focus(); again.setSelectionRange(...caret); }
}

function toast(text) {
  const box = $("toast");
  box.textContent = text;
  box.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { box.hidden = true; }, 4000);
}

function act(button, call) {
  return async () => {
    button.disabled = true;
    try { await call(); } catch (e) { toast(e.message); button.disabled = false; }
  };
}

// -- the whole picture ----------------------------------------------------------------

async function loadAll() {
  const [status, board] = await Promise.all([api("/api/status"), api("/api/board")]);
  S.order = status.roles.map((r) => r.name);
  S.roles = Object.fromEntries(status.roles.map((r) => [r.name, r]));
  S.tasks = Object.fromEntries(board.tasks.map((t) => [t.id, t]));
  $("session").textContent = status.gateway ? "gateway " + status.gateway : "";
  // What the start said (checkpoints off, an endpoint that could not listen...).
  const notices = status.notices || [];
  $("notices").hidden = !notices.length;
  $("notices").replaceChildren(...notices.map((text) => el("div", {}, text)));
  await loadGates();
  renderCrew(); renderBoard();
  for (const name of S.order) if (S.roles[name].state === "waiting") loadQuestion(name);
  loadTimeline();
}

async function loadGates() {
  S.gates = (await api("/api/gates")).gates;
  renderAttention();
}

// -- crew -----------------------------------------------------------------------------

function money(value) { return value === null || value === undefined ? "" : "$" + Number(value).toFixed(2); }

function renderCrew() {
  const box = $("crew");
  box.replaceChildren(...S.order.filter((n) => S.roles[n]).map((name) => {
    const r = S.roles[name];
    const task = r.task ? S.tasks[r.task] : null;
    const tokens = r.tokens ? Object.values(r.tokens).reduce((a, b) => a + (b || 0), 0) : 0;
    const cost = r.cost !== undefined && r.cost !== null ? money(r.cost) : "";
    const budget = !r.budget ? "" : r.budget.usd ? " of " + money(r.budget.usd)
      : r.budget.tokens ? " of " + r.budget.tokens.toLocaleString() : "";
    return el("div", { class: "card", id: "role-" + name },
      el("h3", {}, el("span", {}, name), el("span", { class: "state " + r.state }, r.state)),
      el("div", { class: "row muted" },
        // The host: a remote seat's (when status names one), else this machine.
        [(r.command || "").split("/").pop(), r.model, r.profile, "on " + (r.host || "this machine")]
          .filter(Boolean).join(" · ")),
      el("div", { class: "row" }, task ? task.id + " " + task.label : "no task"),
      (tokens || cost) ? el("div", { class: "row muted" },
        (tokens ? tokens.toLocaleString() + " tokens " : "") + cost + budget) : null,
      r.detail ? el("div", { class: "row muted" }, r.detail) : null,
      (r.marks && r.marks.length) ? el("div", { class: "row" }, r.marks.join(", ")) : null,
      el("div", { class: "actions" },
        el("button", { type: "button", class: "small", onclick: () => openScreen(name) }, "screen"),
        roleButton(name, r.state === "paused" ? "resume" : "pause"),
        roleButton(name, "restart")));
  }));
}

function roleButton(name, action) {
  const button = el("button", { type: "button", class: "small" }, action);
  button.addEventListener("click", act(button, async () => {
    if (action === "restart" && !confirm("Restart " + name + "?")) throw new Error("not restarted");
    await api("/api/roles/" + encodeURIComponent(name) + "/" + action, {});
    button.disabled = false;
  }));
  return button;
}

// -- gates and questions ----------------------------------------------------------------

function renderAttention() { keepFocus(drawAttention); }

function drawAttention() {
  $("gates").replaceChildren(...S.gates.map((gate) => {
    const reason = draftInput("reason-" + gate.id, "reason (optional)", "reason");
    const approve = el("button", { type: "button", class: "approve", "data-gate": gate.id }, "Approve");
    const reject = el("button", { type: "button", class: "reject" }, "Reject");
    approve.addEventListener("click", act(approve, () => decide(gate.id, "approve", {})));
    reject.addEventListener("click", act(reject, () => decide(gate.id, "reject", { reason: reason.value })));
    return el("div", { class: "gate", id: "gate-" + gate.id },
      el("h3", {}, gate.id + " → " + gate.role + (gate.kind ? " (" + gate.kind + ")" : "")),
      el("div", { class: "row" }, gate.label),
      gate.document ? el("pre", {}, gate.document) : null,
      el("div", { class: "actions" }, approve, reject, reason));
  }));
  $("questions").replaceChildren(...Object.entries(S.questions).map(([name, q]) => renderQuestion(name, q)));
  $("nothing").hidden = S.gates.length > 0 || Object.keys(S.questions).length > 0;
  highlight();
}

async function decide(id, action, body) {
  await api("/api/gates/" + encodeURIComponent(id) + "/" + action, body);
  S.gates = S.gates.filter((g) => g.id !== id);
  delete S.drafts["reason-" + id];
  renderAttention();
}

async function loadQuestion(name) {
  try {
    const screen = await api("/api/roles/" + encodeURIComponent(name) + "/screen");
    if (!S.roles[name] || S.roles[name].state !== "waiting") return;
    // The question is at the bottom of the pane; the whole pane is kept, so
    // what it asks about (a command, a diff) can be read before answering.
    const lines = screen.lines.slice();
    while (lines.length && !lines[lines.length - 1].trim()) lines.pop();
    while (lines.length && !lines[0].trim()) lines.shift();
    S.questions[name] = { lines, answers: screen.answers };
    renderAttention();
  } catch (e) { toast(e.message); }
}

const QUESTION_LINES = 12;

function renderQuestion(name, q) {
  const send = (body) => api("/api/roles/" + encodeURIComponent(name) + "/input", body);
  const text = draftInput("answer-" + name, "type an answer", "answer");
  const answerButtons = q.answers.map((a) => {
    const button = el("button", { type: "button", class: "approve" }, a.label);
    button.addEventListener("click", act(button, () => send({ text: a.text })));
    return button;
  });
  const typed = el("button", { type: "button" }, "Send + Enter");
  typed.addEventListener("click", act(typed, async () => { await send({ text: text.value, keys: ["enter"] }); typed.disabled = false; text.value = ""; delete S.drafts["answer-" + name]; }));
  const keys = ["enter", "esc", "up", "down"].map((key) => {
    const button = el("button", { type: "button", class: "small" }, key);
    button.addEventListener("click", act(button, async () => { await send({ keys: [key] }); button.disabled = false; }));
    return button;
  });
  // The last lines show; the earlier ones are a tap away, and say how many they are.
  const hidden = S.shown.has(name) ? 0 : Math.max(q.lines.length - QUESTION_LINES, 0);
  const more = hidden ? el("button", { type: "button", class: "small more",
    onclick: () => { S.shown.add(name); renderAttention(); } },
    "show " + hidden + " earlier line" + (hidden === 1 ? "" : "s")) : null;
  const screen = el("pre", {}, q.lines.slice(hidden).join("\n"));
  return el("div", { class: "question", id: "question-" + name },
    el("h3", {}, name + " asks"),
    more, screen,
    el("div", { class: "actions" }, ...answerButtons),
    el("div", { class: "actions" }, text, typed, ...keys));
}

// -- board --------------------------------------------------------------------------------

function taskNumber(id) { return parseInt(id.slice(1), 10) || 0; }

function renderBoard() {
  const tasks = Object.values(S.tasks).sort((a, b) => taskNumber(b.id) - taskNumber(a.id));
  // A row shows the task's label, cut to one line with an ellipsis; a tap (or
  // Enter) opens it to the whole text, which a phone has no hover to show.
  $("board").replaceChildren(...tasks.map((t) => {
    const open = S.open.has(t.id);
    const toggle = () => { if (open) S.open.delete(t.id); else S.open.add(t.id); renderBoard(); };
    return el("div", { class: "task" + (open ? " open" : ""), id: "task-" + t.id, "data-state": t.state,
      role: "button", tabindex: "0", "aria-expanded": String(open), onclick: toggle,
      onkeydown: (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); toggle(); } } },
    el("b", {}, t.id),
    el("span", { class: "label", title: t.text || t.label }, t.role + ": " + (open ? t.text || t.label : t.label)),
    el("span", { class: "state " + t.state.replace(" ", "_") }, t.state),
    open && t.state === "queued" ? cancelButton(t) : null);
  }));
  if (!tasks.length) $("board").replaceChildren(el("p", { class: "muted" }, "No tasks yet."));
}

// A queued task (not yet typed into its role) can be taken back; the
// orchestrator is told.  One already with its role cannot.
function cancelButton(t) {
  const button = el("button", { type: "button", class: "reject small", "data-cancel": t.id }, "Cancel");
  const cancel = act(button, async () => {
    if (!confirm("Cancel " + t.id + " for " + t.role + "? The orchestrator is told.")) {
      button.disabled = false;
      return;
    }
    await api("/api/tasks/" + encodeURIComponent(t.id) + "/cancel",
      { reason: "the operator cancelled it in the web view." });
  });
  // Not also a click on the row, which would fold it and redraw the button away.
  button.addEventListener("click", (e) => { e.stopPropagation(); cancel(); });
  return button;
}

// -- screens ---------------------------------------------------------------------------------

const NAMED = { black: 0, red: 1, green: 2, brown: 3, yellow: 3, blue: 4, magenta: 5, cyan: 6, white: 7 };
const PALETTE = ["#3b4048", "#e06c75", "#98c379", "#e5c07b", "#61afef", "#c678dd", "#56b6c2", "#d1d7e0",
  "#5c6370", "#ff7b86", "#b5e890", "#ffd580", "#7cc4ff", "#e09bff", "#7fe0ea", "#ffffff"];

function colour(name) {
  if (!name || name === "default") return null;
  if (/^[0-9a-f]{6}$/i.test(name)) return "#" + name;
  const bright = name.startsWith("bright");
  const base = NAMED[bright ? name.slice(6) : name];
  return base === undefined ? null : PALETTE[base + (bright ? 8 : 0)];
}

async function openScreen(name) {
  S.screenRole = name;
  $("screen-section").hidden = false;
  $("screen-role").textContent = name;
  await refreshScreen();
  followScreen();
  $("screen-section").scrollIntoView({ block: "nearest" });
}

async function refreshScreen() {
  const name = S.screenRole;
  if (!name) return;
  try {
    const screen = await api("/api/roles/" + encodeURIComponent(name) + "/screen");
    if (S.screenRole !== name) return;
    $("screen").replaceChildren(...screen.runs.map((runs) => el("div", {},
      runs.length ? runs.map(([text, fg, bg, flags]) => {
        const span = el("span", {}, text);
        let f = colour(fg), b = colour(bg);
        if (flags.includes("r")) [f, b] = [b || "var(--screen)", f || "var(--screen-fg)"];
        if (f) span.style.color = f;
        if (b) span.style.background = b;
        if (flags.includes("b")) span.style.fontWeight = "bold";
        if (flags.includes("i")) span.style.fontStyle = "italic";
        if (flags.includes("u")) span.style.textDecoration = "underline";
        return span;
      }) : "\u00a0")));
    // Cut by the phone's width, the pane says so: a scrollbar alone may not show.
    const pre = $("screen");
    $("screen-wide").hidden = pre.scrollWidth <= pre.clientWidth + 1;
  } catch (e) { toast(e.message); }
}

let screenTimer = null;
function followScreen() {
  // The pane changes far more often than the role's state: while a screen is open
  // and the page is visible, it is read again twice a second.
  clearInterval(screenTimer);
  screenTimer = setInterval(() => {
    if (S.screenRole && document.visibilityState === "visible") refreshScreen();
  }, 500);
}

$("screen-close").addEventListener("click", () => {
  S.screenRole = null; $("screen-section").hidden = true; clearInterval(screenTimer);
});

// -- timeline ------------------------------------------------------------------------------

async function loadTimeline() {
  try {
    const line = await api("/api/timeline");
    const span = Math.max(line.t1 - line.t0, 1);
    const now = line.t1;
    $("timeline").replaceChildren(...line.roles.map((role) => el("div", { class: "lane" },
      el("span", { title: role }, role),
      el("div", { class: "track" }, ...line.bars.filter((b) => b.role === role).map((b) => {
        const start = b.start ?? (b.gate ? b.gate[0] : line.t0);
        const end = b.end ?? now;
        const bar = el("div", { class: "bar " + b.outcome, title: b.task + " " + b.label + " (" + b.outcome + ")" });
        bar.style.left = (100 * (start - line.t0) / span) + "%";
        bar.style.width = (100 * Math.max(end - start, 0) / span) + "%";
        return bar;
      })))));
  } catch (e) { /* the timeline is a nicety: the rest of the page goes on */ }
}

let timelineTimer = null;
function timelineSoon() {
  if (!timelineTimer) timelineTimer = setTimeout(() => { timelineTimer = null; loadTimeline(); }, 3000);
}

// -- news -------------------------------------------------------------------------------------

function onRole(view) {
  const before = S.roles[view.name];
  S.roles[view.name] = { ...(before || {}), ...view };
  if (!S.order.includes(view.name)) S.order.push(view.name);
  if (view.state === "waiting") loadQuestion(view.name);
  else if (S.questions[view.name]) {
    // The next question starts folded again, with an empty answer box.
    delete S.questions[view.name]; S.shown.delete(view.name); delete S.drafts["answer-" + view.name];
    renderAttention();
  }
  renderCrew();
}

function onTask(task) {
  S.tasks[task.id] = task;
  const role = S.roles[task.role];
  if (role && task.state !== "done" && task.state !== "rejected" && task.state !== "failed") role.task = task.id;
  if (task.state !== "gated" && S.gates.some((g) => g.id === task.id && !g.kind)) {
    S.gates = S.gates.filter((g) => g.id !== task.id);
    renderAttention();
  }
  renderBoard(); renderCrew();
}

const HANDLERS = {
  hello: () => {
    // News that comes while the whole picture loads is held and applied after
    // it: a snapshot read before a change must not overwrite the change.
    S.held = [];
    loadAll().catch((e) => toast(e.message)).finally(() => {
      const held = S.held || [];
      S.held = null;
      for (const [kind, data] of held) HANDLERS[kind](data);
    });
  },
  role: onRole,
  task: onTask,
  "gate-opened": () => loadGates(),
  "gate-closed": (data) => {
    S.gates = S.gates.filter((g) => g.id !== data.id); delete S.drafts["reason-" + data.id]; renderAttention();
  },
  tokens: (usages) => {
    for (const [name, usage] of Object.entries(usages)) if (S.roles[name]) Object.assign(S.roles[name], usage);
    renderCrew();
  },
  marks: (marks) => {
    for (const name of S.order) if (S.roles[name]) S.roles[name].marks = marks[name] || [];
    renderCrew();
  },
  gateway: (data) => { $("session").textContent = "gateway " + data.state; },
  event: (record) => { if (record.event === "reload") loadAll(); timelineSoon(); },
  bell: () => {},
};

function connect() {
  const source = new EventSource("/api/events");
  for (const [kind, handler] of Object.entries(HANDLERS)) {
    source.addEventListener(kind, (message) => {
      const data = JSON.parse(message.data);
      if (S.held && kind !== "hello") S.held.push([kind, data]); else handler(data);
    });
  }
  source.onopen = () => {
    $("conn").textContent = "live"; $("conn").className = "conn live"; $("signed-out").hidden = true;
  };
  source.onerror = () => {
    $("conn").textContent = "reconnecting…"; $("conn").className = "conn lost";
    // An answer that is not a stream (401 after a rotation, a proxy's 502 while
    // the session restarts) makes the browser give up for good: find out why,
    // say so, and try again.
    if (source.readyState === EventSource.CLOSED) lost();
  };
}

async function lost() {
  let status = 0;
  try { status = (await fetch("/api/status", { credentials: "same-origin" })).status; } catch (e) { /* down */ }
  if (status === 401) {
    $("conn").textContent = "signed out"; $("signed-out").hidden = false;
  }
  setTimeout(connect, status === 401 ? 30000 : 5000);
}

function highlight() {
  const target = location.hash ? document.getElementById(location.hash.slice(1)) : null;
  if (target && !target.classList.contains("target")) {
    target.classList.add("target");
    target.scrollIntoView({ block: "center" });
  }
}

connect();
