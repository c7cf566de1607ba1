// The answer panel of the annotation page: score or preference buttons, the rationale box and
// the submit button. It reports the draft as the annotator types (debounced), submits on
// Ctrl+Enter, handles the keyboard shortcuts and accumulates active time.
//
// Keys: digits choose a score (0 = 10 on a 1–10 scale), a / b / t choose a preference, while
// focus is not in a text field; Escape leaves the rationale box; Ctrl+Enter (Cmd+Enter) submits
// from anywhere. After a choice, focus returns to the rationale box.

const DRAFT_DELAY_MS = 500;
const IDLE_LIMIT_MS = 120000;
const TIME_FLUSH_MS = 30000;

function el(tag, attrs, text) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
  if (text !== undefined) node.textContent = text; // data is always text, never markup
  return node;
}

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
      state.choice = input.value === "" ? null : Number(input.value);
      render(state);
      state.sendDraft();
    });
    choices.append(input);
  }
  const chosen = el("div", { class: "cl-chosen", "aria-live": "polite" });
  const area = el("textarea", {
    class: "cl-rationale", rows: "6", "data-testid": "cl-rationale",
    "aria-label": "Rationale", placeholder: data.placeholder,
  });
  area.value = state.rationale;
  const counter = el("div", { class: "cl-counter" });
  const message = el("div", { class: "cl-message", role: "alert", "data-testid": "cl-message" });
  const submit = el("button", { type: "button", class: "cl-submit", "data-testid": "cl-submit" },
    data.submit_label + " (Ctrl+Enter)");
  const help = el("div", { class: "cl-help" }, data.help);
  box.append(choices, chosen, area, counter, message, submit, help);
  root.append(box);
  return { box, choices, chosen, area, counter, message, submit };
}

function render(state) {
  const { nodes, data } = state;
  for (const button of nodes.choices.querySelectorAll(".cl-choice")) {
    const on = button.getAttribute("data-value") === String(state.choice);
    button.classList.toggle("cl-on", on);
    button.setAttribute("aria-checked", on ? "true" : "false");
  }
  const picked = data.choices.find((c) => String(c.value) === String(state.choice));
  const typed = data.numeric && state.choice !== null ? "Score " + state.choice : data.choose_prompt;
  nodes.chosen.textContent = picked ? picked.describe : typed;
  const length = state.rationale.trim().length;
  nodes.counter.textContent = length + " / " + data.rationale_min + " characters";
  nodes.counter.classList.toggle("cl-short", length < data.rationale_min);
  nodes.submit.disabled = state.sending;
}

function problems(state) {
  const { data } = state;
  if (state.choice === null || state.choice === undefined) return data.choose_prompt;
  const length = state.rationale.trim().length;
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

function focusedNode(root) {
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

export default function (component) {
  const { data, parentElement, setStateValue, setTriggerValue } = component;
  let state = parentElement.__clAnswer;
  if (!state || state.unit !== data.unit) {
    const draft = data.draft || {};
    state = {
      unit: data.unit,
      choice: data.kind === "pairwise" ? draft.preference ?? null : draft.score ?? null,
      rationale: draft.rationale || "",
      seconds: Number(draft.seconds || 0),
      lastActivity: Date.now(),
      lastTick: Date.now(),
      lastSentSeconds: Number(draft.seconds || 0),
      sending: false,
      attempt: data.attempt,
      timer: null,
    };
    parentElement.__clAnswer = state;
    state.nodes = build(parentElement, data, state);
    state.nodes.area.addEventListener("input", () => {
      state.rationale = state.nodes.area.value;
      state.nodes.message.textContent = "";
      render(state);
      clearTimeout(state.timer);
      state.timer = setTimeout(() => state.sendDraft(), DRAFT_DELAY_MS);
    });
    state.nodes.area.addEventListener("keydown", (event) => {
      if (event.key === "Escape") state.nodes.area.blur();
    });
    state.nodes.submit.addEventListener("click", () => state.submit());
  }
  state.data = data;
  if (data.attempt !== state.attempt) {  // the server refused the last submit: say why
    state.attempt = data.attempt;
    state.sending = false;
    state.nodes.message.textContent = data.error || "";
  }
  const payload = () => (accumulate(state), {
    unit: data.unit,
    score: data.kind === "pairwise" ? null : state.choice,
    preference: data.kind === "pairwise" ? state.choice : null,
    rationale: state.rationale,
    seconds: Math.round(state.seconds * 10) / 10,
  });
  state.sendDraft = () => {
    clearTimeout(state.timer);
    state.timer = null;
    state.lastSentSeconds = state.seconds;
    setStateValue("draft", payload());
  };
  state.choose = (value) => {
    state.choice = value;
    state.nodes.message.textContent = "";
    render(state);
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
    render(state);
    clearTimeout(state.timer);
    setTriggerValue("submit", { ...payload(), nonce: Date.now() });
  };
  render(state);

  const onKey = (event) => {
    onActivity();
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      event.stopPropagation();
      state.submit();
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey || isTypingTarget(focusedNode())) return;
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
  const onLeave = () => {  // refresh or tab close: send what the server does not have yet
    accumulate(state);
    if (state.timer || state.seconds - state.lastSentSeconds >= 1) state.sendDraft();
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
  for (const name of activityEvents) document.addEventListener(name, onActivity, true);
  return () => {
    clearInterval(tick);
    window.removeEventListener("pagehide", onLeave);
    document.removeEventListener("keydown", onKey, true);
    for (const name of activityEvents) document.removeEventListener(name, onActivity, true);
  };
}
