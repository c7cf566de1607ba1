// The answer panel of the annotation page: score or preference buttons with what each band means,
// the rationale box and the submit button. It reports the draft as the annotator types
// (debounced), keeps a copy of every keystroke in localStorage, submits on Ctrl+Enter, handles the
// keyboard shortcuts and accumulates active time.
//
// Keys (data.choices[].key, from the protocol) choose while focus is not in a text field; Escape
// leaves the rationale box; Ctrl+Enter (Cmd+Enter) submits from anywhere; "?" shows every
// shortcut. After a choice, focus returns to the rationale box. After a submit the panel shows
// only "Saving…" until the page replaces it with the next unit's panel (or reports a refusal).

const DRAFT_DELAY_MS = 500;
const IDLE_LIMIT_MS = 120000;
const TIME_FLUSH_MS = 30000;
const STORE_PREFIX = "critiquelab-draft:";
const STORE_MAX_AGE_MS = 14 * 24 * 3600 * 1000;
// Units submitted from this page and not yet replaced, with the refusal count at the time. Kept
// by the module, not the panel: while a submit's rerun runs, Streamlit may keep the old panel
// and mount it afresh, and a fresh mount must stay "Saving…" too.
// Keyed by the panel's own id (its Streamlit key, data.panel): Annotate numbers units by
// assignment and My work by answer, and the module outlives a switch of page.
const SUBMITTED = new Map();
// Every panel state this page has mounted and not yet torn down: when another panel arrives (the
// next unit's, once a submit is acknowledged), one that Streamlit still shows while its run ends
// is hidden, so no stale copy of the previous panel can be seen, typed into or clicked.
const LIVE = new Set();

// The rationale's length as the server counts it (data.queue.common.check_answer:
// len(rationale.strip())): code points, not UTF-16 units (an emoji or a rare CJK character is
// one), after stripping what Python's str.strip strips (JavaScript's trim also strips U+FEFF and
// keeps U+001C-U+001F and U+0085). Counted alike, the counter never allows a submit the server
// refuses, nor refuses one it would store.
const PYTHON_SPACE =
  "[\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]";
const EDGE_SPACE = new RegExp("^" + PYTHON_SPACE + "+|" + PYTHON_SPACE + "+$", "g");

export function rationaleLength(text) {
  return [...text.replace(EDGE_SPACE, "")].length;
}

function panelId(data) {
  return data.panel || "unit-" + data.unit;
}

function el(tag, attrs, text) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
  if (text !== undefined) node.textContent = text; // data is always text, never markup
  return node;
}

// --- the browser copy -------------------------------------------------------------------------
// One entry per user + campaign + unit + tab: {choice, rationale, seconds, edited_at}; edited_at
// is in the server's clock (browser clock + offset), like the server draft's saved_at. The key is
// the page's store key, "@" and this tab's id, which sessionStorage keeps across a reload of the
// tab: a tab clears only its own copies, so a second tab of the same annotator on the same unit
// keeps what it typed when the first tab answers the unit and moves on.

const TAB_KEY = "critiquelab-tab";

function tabId() {
  try {
    let id = window.sessionStorage.getItem(TAB_KEY);
    if (!id) {
      id = Date.now().toString(36) + Math.random().toString(36).slice(2, 10);
      window.sessionStorage.setItem(TAB_KEY, id);
    }
    return id;
  } catch (error) {
    return "page"; // storage disabled: no browser copy is written anyway
  }
}

function ownKey(data) {
  return data.store ? data.store + "@" + tabId() : null;
}

function readLocal(key) {
  if (!key) return null;
  try {
    const value = JSON.parse(window.localStorage.getItem(key));
    return value && typeof value === "object" && typeof value.edited_at === "number" ? value : null;
  } catch (error) {
    return null; // storage disabled or a foreign value: the server draft still holds the answer
  }
}

function newestLocal(data) {
  // This unit's newest copy in any tab: after a crash or a closed tab, a new tab has a new id.
  if (!data.store) return null;
  let newest = null;
  try {
    const storage = window.localStorage;
    for (let index = 0; index < storage.length; index++) {
      const key = storage.key(index);
      if (key !== data.store && !(key && key.startsWith(data.store + "@"))) continue;
      const entry = readLocal(key);
      if (entry && (!newest || entry.edited_at > newest.edited_at)) newest = entry;
    }
  } catch (error) {
    return null;
  }
  return newest;
}

function writeLocal(state) {
  const key = ownKey(state.data);
  if (!key) return;
  const entry = {
    choice: state.choice, rationale: state.rationale, seconds: state.seconds,
    edited_at: state.editedAt,
  };
  try {
    window.localStorage.setItem(key, JSON.stringify(entry));
  } catch (error) {
    // quota or privacy mode: the debounced server draft is the only copy, as before
  }
}

function pruneLocal(data, now) {
  // This tab's copies of other units of the same annotator and campaign are answered, skipped or
  // lost: a tab shows one unit at a time. Another tab's copies stay (it may still show its unit,
  // answered elsewhere, whose text only that tab and its copy hold), until they are very old.
  if (!data.store) return;
  const mine = "@" + tabId();
  const own = ownKey(data);
  try {
    const storage = window.localStorage;
    for (let index = storage.length - 1; index >= 0; index--) {
      const key = storage.key(index);
      if (!key || !key.startsWith(STORE_PREFIX) || key === own) continue;
      const entry = readLocal(key);
      const unitKey = key.includes("@") ? key.slice(0, key.indexOf("@")) : key;
      const ours = key.endsWith(mine) || !key.includes("@");
      const otherUnit = key.startsWith(data.store_scope) && unitKey !== data.store;
      if ((ours && otherUnit) || !entry || now - entry.edited_at > STORE_MAX_AGE_MS) {
        storage.removeItem(key);
      }
    }
  } catch (error) {
    // storage disabled: nothing to prune
  }
}

function reconcile(data, offset) {
  // Newest wins: the browser copy when it was typed after the server draft was (server clock).
  const server = data.draft;
  const local = newestLocal(data);
  const serverChoice = server ? (data.kind === "pairwise" ? server.preference : server.score) : null;
  const fromServer = {
    choice: serverChoice ?? null,
    rationale: server ? server.rationale || "" : "",
    seconds: Number(server ? server.seconds || 0 : 0),
    editedAt: server && typeof server.saved_at === "number" ? server.saved_at : Date.now() + offset,
    ahead: false,
  };
  if (!local) return fromServer;
  const newer = !server || typeof server.saved_at !== "number" || local.edited_at > server.saved_at;
  if (!newer) return { ...fromServer, seconds: Math.max(fromServer.seconds, Number(local.seconds) || 0) };
  const same = server && local.rationale === fromServer.rationale &&
    String(local.choice) === String(fromServer.choice);
  return {
    choice: local.choice ?? null,
    rationale: typeof local.rationale === "string" ? local.rationale : "",
    seconds: Math.max(fromServer.seconds, Number(local.seconds) || 0),
    editedAt: local.edited_at,
    ahead: !same, // the server has not got it yet: send it
  };
}

// --- building and showing -----------------------------------------------------------------------

function build(root, data, state) {
  // Replace only our own node: the root also holds the <style> Streamlit put there.
  for (const old of root.querySelectorAll(".cl-answer")) old.remove();
  const box = el("div", { class: "cl-answer", "data-unit": String(data.unit) });
  const choices = el("div", { class: "cl-choices", role: "radiogroup", "aria-label": data.choice_label });
  for (const choice of data.choices) {
    const button = el("button", {
      type: "button", class: "cl-choice", "data-value": String(choice.value),
      "data-testid": "cl-choice-" + choice.value, title: choice.hint || "", role: "radio",
    });
    button.append(el("span", { class: "cl-choice-label" }, choice.label));
    if (choice.key && choice.key !== String(choice.value)) button.append(el("kbd", {}, choice.key));
    button.addEventListener("click", () => state.choose(choice.value));
    choices.append(button);
  }
  if (data.numeric) {  // a continuous or long scale: type the number
    const input = el("input", {
      type: "number", class: "cl-number", "data-testid": "cl-number", min: String(data.numeric.min),
      max: String(data.numeric.max), step: data.numeric.step === null ? "any" : String(data.numeric.step),
      "aria-label": data.choice_label,
    });
    if (state.choice !== null) input.value = String(state.choice);
    input.addEventListener("change", () => {
      state.change(input.value === "" ? null : Number(input.value), state.rationale);
      state.sendDraft();
    });
    choices.append(input);
  }
  const guide = el("div", { class: "cl-guide", "data-testid": "cl-guide" });
  for (const row of data.guide || []) {
    const line = el("div", { class: "cl-band" });
    line.dataset.values = JSON.stringify((row.values || []).map(String));
    line.append(el("b", {}, row.label), el("span", {}, row.text));
    guide.append(line);
  }
  const chosen = el("div", { class: "cl-chosen", "aria-live": "polite" });
  const area = el("textarea", {
    class: "cl-rationale", rows: "5", "data-testid": "cl-rationale",
    "aria-label": "Rationale", placeholder: data.placeholder,
  });
  area.value = state.rationale;
  const counter = el("div", { class: "cl-counter" });
  const message = el("div", { class: "cl-message", role: "alert", "data-testid": "cl-message" });
  const submit = el("button", { type: "button", class: "cl-submit", "data-testid": "cl-submit" },
    data.submit_label + " (Ctrl+Enter)");
  const keysButton = el("button", {
    type: "button", class: "cl-keys", "data-testid": "cl-keys", "aria-haspopup": "dialog",
  }, "Shortcuts (?)");
  keysButton.addEventListener("click", () => state.toggleSheet());
  const actions = el("div", { class: "cl-actions" });
  actions.append(submit, counter, keysButton);
  const help = el("div", { class: "cl-help" }, data.help);
  const sheet = el("div", {
    class: "cl-sheet", role: "dialog", "aria-label": "Keyboard shortcuts", "data-testid": "cl-sheet",
  });
  sheet.hidden = true;
  sheet.append(el("div", { class: "cl-sheet-title" }, "Keyboard shortcuts"));
  const table = el("table");
  for (const [keys, what] of data.shortcuts || []) {
    const row = el("tr");
    const cell = el("td");
    cell.append(el("kbd", {}, keys));
    row.append(cell, el("td", {}, what));
    table.append(row);
  }
  sheet.append(table, el("div", { class: "cl-help" }, "Esc or ? closes this list."));
  // While a submit runs, the answer sent is not shown any more (it cannot be changed): only this.
  const saving = el("div", { class: "cl-saving", role: "status", "data-testid": "cl-saving" },
    "Saving your answer… the next unit follows.");
  box.append(saving, choices, guide, chosen, area, message, actions, help, sheet);
  root.append(box);
  return { box, choices, guide, chosen, area, counter, message, submit, sheet };
}

function render(state) {
  const { nodes, data } = state;
  for (const button of nodes.choices.querySelectorAll(".cl-choice")) {
    const on = button.getAttribute("data-value") === String(state.choice);
    button.classList.toggle("cl-on", on);
    button.setAttribute("aria-checked", on ? "true" : "false");
    button.disabled = state.sending;
  }
  for (const line of nodes.guide.querySelectorAll(".cl-band")) {
    line.classList.toggle("cl-on", JSON.parse(line.dataset.values).includes(String(state.choice)));
  }
  const picked = data.choices.find((c) => String(c.value) === String(state.choice));
  const typed = data.numeric && state.choice !== null ? "Score " + state.choice : data.choose_prompt;
  nodes.chosen.textContent = picked ? picked.describe : typed;
  const length = rationaleLength(state.rationale);
  nodes.counter.textContent = length + " / " + data.rationale_min + " characters";
  nodes.counter.classList.toggle("cl-short", length < data.rationale_min);
  nodes.submit.disabled = state.sending;
  nodes.submit.textContent = state.sending ? "Saving…" : data.submit_label + " (Ctrl+Enter)";
  nodes.area.readOnly = state.sending; // readOnly, not disabled: focus stays where it was
  nodes.box.classList.toggle("cl-busy", state.sending);
  nodes.box.setAttribute("aria-busy", state.sending ? "true" : "false");
  for (const input of nodes.choices.querySelectorAll("input")) input.disabled = state.sending;
}

function problems(state) {
  const { data } = state;
  if (state.choice === null || state.choice === undefined) return data.choose_prompt;
  const length = rationaleLength(state.rationale);
  if (length < data.rationale_min) {
    return "Write at least " + data.rationale_min + " characters of rationale (now " + length + ").";
  }
  return "";
}

function isTypingTarget(node) {
  if (!node) return false;
  const tag = node.tagName;
  return tag === "TEXTAREA" || tag === "INPUT" || tag === "SELECT" || node.isContentEditable;
}

function focusedNode() {
  let node = document.activeElement;
  while (node && node.shadowRoot && node.shadowRoot.activeElement) node = node.shadowRoot.activeElement;
  return node;
}

function accumulate(state) {
  // Active time: the page visible and focused, and not idle for more than IDLE_LIMIT_MS.
  // Timestamps, not tick counts, so a re-render (which restarts the timer) loses nothing.
  const now = Date.now();
  const since = state.lastTick;
  state.lastTick = now;
  if (document.visibilityState !== "visible" || !document.hasFocus()) return;
  const activeUntil = Math.min(now, state.lastActivity + IDLE_LIMIT_MS);
  if (activeUntil > since) state.seconds += (activeUntil - since) / 1000;
}

function mount(parentElement, data) {
  const offset = typeof data.server_now === "number" ? data.server_now - Date.now() : 0;
  const start = reconcile(data, offset);
  const state = {
    unit: data.unit,
    panel: panelId(data),
    data,
    offset,
    choice: start.choice,
    rationale: start.rationale,
    seconds: start.seconds,
    editedAt: start.editedAt,
    lastActivity: Date.now(),
    lastTick: Date.now(),
    lastSentSeconds: start.seconds,
    sending: SUBMITTED.get(panelId(data)) === data.attempt,  // remounted while its submit runs
    attempt: data.attempt,
    timer: null,
  };
  parentElement.__clAnswer = state;
  state.nodes = build(parentElement, data, state);
  for (const other of LIVE) {  // the previous panel, if Streamlit still shows it: a page has one
    if (other.panel !== panelId(data)) other.nodes.box.hidden = true;
  }
  LIVE.add(state);
  state.change = (choice, rationale) => {  // every change: the browser copy first, at once
    state.choice = choice;
    state.rationale = rationale;
    state.editedAt = Date.now() + state.offset;
    state.nodes.message.textContent = "";
    writeLocal(state);
    render(state);
  };
  state.nodes.area.addEventListener("input", () => {
    if (state.sending) return;
    state.change(state.choice, state.nodes.area.value);
    clearTimeout(state.timer);
    state.timer = setTimeout(() => state.sendDraft(), DRAFT_DELAY_MS);
  });
  state.nodes.area.addEventListener("keydown", (event) => {
    if (event.key === "Escape") state.nodes.area.blur();
  });
  state.nodes.submit.addEventListener("click", () => state.submit());
  state.toggleSheet = (show) => {
    state.nodes.sheet.hidden = show === undefined ? !state.nodes.sheet.hidden : !show;
  };
  pruneLocal(data, Date.now() + offset);
  if (start.ahead) state.pendingSync = true;  // sent once the callbacks below exist
  return state;
}

export default function (component) {
  const { data, parentElement, setStateValue, setTriggerValue } = component;
  // Streamlit calls this function again on every rerun (each draft saved is one) with new data,
  // and runs only the cleanup returned by the last call, when the panel goes: the listeners the
  // previous call added are removed here, so that one keydown listener is ever live per panel
  // (with one per call, "?" toggled the sheet as many times as the page had rerun).
  if (parentElement.__clDetach) parentElement.__clDetach();
  let state = parentElement.__clAnswer;
  if (!state || state.panel !== panelId(data)) {
    if (state) LIVE.delete(state);
    state = mount(parentElement, data);
  }
  state.data = data;
  if (data.attempt !== state.attempt || (SUBMITTED.has(state.panel) && !state.sending)) {
    // the server refused the last submit: say why, and take input again
    state.attempt = data.attempt;
    state.sending = false;
    SUBMITTED.delete(state.panel);
    state.nodes.box.hidden = false;
    state.nodes.message.textContent = data.error || "";
  }
  const payload = () => (accumulate(state), {
    unit: data.unit,
    score: data.kind === "pairwise" ? null : state.choice,
    preference: data.kind === "pairwise" ? state.choice : null,
    rationale: state.rationale,
    seconds: Math.round(state.seconds * 10) / 10,
    edited_at: Math.round(state.editedAt),
  });
  state.sendDraft = () => {
    clearTimeout(state.timer);
    state.timer = null;
    state.lastSentSeconds = state.seconds;
    writeLocal(state);
    setStateValue("draft", payload());
  };
  state.choose = (value) => {
    if (state.sending) return;
    state.change(value, state.rationale);
    state.sendDraft();
    const area = state.nodes.area;
    area.focus();
    area.setSelectionRange(area.value.length, area.value.length);
  };
  state.submit = () => {
    if (state.sending) return;
    const problem = problems(state);
    if (problem) {
      state.nodes.message.textContent = problem;
      if (state.choice !== null) state.nodes.area.focus();
      return;
    }
    state.sending = true;
    SUBMITTED.set(state.panel, data.attempt);
    state.nodes.message.textContent = "";
    render(state);
    clearTimeout(state.timer);
    state.timer = null;
    setTriggerValue("submit", { ...payload(), nonce: Date.now() });
  };
  render(state);
  if (state.pendingSync) {
    state.pendingSync = false;
    state.sendDraft();
  }

  const onKey = (event) => {
    onActivity();
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      event.stopPropagation();
      state.submit();
      return;
    }
    if (event.key === "Escape" && !state.nodes.sheet.hidden) {
      state.toggleSheet(false);
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey || isTypingTarget(focusedNode())) return;
    if (event.key === "?") {
      event.preventDefault();
      state.toggleSheet();
      return;
    }
    if (state.sending) return;  // the next unit is on its way: nothing to choose on this one
    const key = event.key.toLowerCase();
    const choice = data.choices.find((c) => c.key === key);
    if (choice) {
      event.preventDefault();
      event.stopPropagation();
      state.choose(choice.value);
    }
  };
  const onActivity = () => {
    accumulate(state);
    state.lastActivity = Date.now();
  };
  const onLeave = () => {  // refresh, tab close or tab hidden: keep and send what is not sent
    accumulate(state);
    writeLocal(state);
    if (!state.sending && (state.timer || state.seconds - state.lastSentSeconds >= 1)) {
      state.sendDraft();
    }
  };
  const onVisibility = () => {
    if (document.visibilityState === "hidden") onLeave();
  };
  const tick = setInterval(() => {
    accumulate(state);
    if (state.seconds - state.lastSentSeconds >= TIME_FLUSH_MS / 1000 && !state.sending) {
      state.sendDraft();
    }
  }, 1000);
  const activityEvents = ["mousemove", "mousedown", "wheel", "scroll", "touchstart", "input"];
  document.addEventListener("keydown", onKey, true);
  window.addEventListener("pagehide", onLeave);
  document.addEventListener("visibilitychange", onVisibility);
  for (const name of activityEvents) document.addEventListener(name, onActivity, true);
  const detach = () => {
    clearInterval(tick);
    window.removeEventListener("pagehide", onLeave);
    document.removeEventListener("visibilitychange", onVisibility);
    document.removeEventListener("keydown", onKey, true);
    for (const name of activityEvents) document.removeEventListener(name, onActivity, true);
    if (parentElement.__clDetach === detach) parentElement.__clDetach = null;
  };
  parentElement.__clDetach = detach;
  return () => {  // the panel goes: its listeners, and its place among the live panels
    detach();
    LIVE.delete(state);
  };
}
