// The login form. The name and password go to the server's login endpoint, which sets the
// session cookie itself (HttpOnly: no script in the page can read it); then the page reloads at
// the same URL, so that the app opens logged in on the page the link pointed to, query included.
// A stale cookie (an expired or revoked session) is cleared through the logout endpoint.

function el(tag, attrs, text) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
  if (text !== undefined) node.textContent = text; // messages are text, never markup
  return node;
}

function build(root) {
  const form = el("form", { class: "cl-login", novalidate: "", "data-testid": "cl-login-form" });
  const name = el("input", { id: "cl-login-name", name: "username", type: "text",
    autocomplete: "username", autocapitalize: "none", spellcheck: "false", required: "" });
  const password = el("input", { id: "cl-login-password", name: "password", type: "password",
    autocomplete: "current-password", required: "" });
  const button = el("button", { type: "submit", class: "cl-login-submit" }, "Log in");
  const message = el("div", { class: "cl-login-message", role: "alert", hidden: "" });
  form.append(
    el("label", { for: "cl-login-name" }, "User name"), name,
    el("label", { for: "cl-login-password" }, "Password"), password,
    button, message,
  );
  root.append(form);
  return { form, name, password, button, message };
}

function show(parts, text) {
  parts.message.textContent = text;
  parts.message.hidden = false;
}

async function submit(parts, data) {
  const name = parts.name.value.trim();
  const password = parts.password.value;
  if (!name || !password) {
    show(parts, "Enter your user name and password.");
    return;
  }
  parts.button.disabled = true;
  try {
    const response = await fetch(data.login_url, {
      method: "POST", credentials: "same-origin", cache: "no-store",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ name, password }),
    });
    const answer = await response.json().catch(() => ({
      ok: false, message: "The server could not log you in (HTTP " + response.status + "): try again.",
    }));
    if (answer.ok) {
      window.location.reload();
      return;
    }
    parts.password.value = "";
    show(parts, answer.message);
  } catch (error) {
    show(parts, "The server could not be reached: check the connection and try again.");
  } finally {
    parts.button.disabled = false;
  }
}

export default function ({ parentElement, data }) {
  if (!parentElement.querySelector("form.cl-login")) {
    const parts = build(parentElement);
    parts.form.addEventListener("submit", (event) => {
      event.preventDefault();
      submit(parts, data);
    });
    parts.name.focus();
  }
  if (data.clear_stale_cookie && !window.__critiquelabCookieCleared) {
    window.__critiquelabCookieCleared = true;
    fetch(data.logout_url, { method: "POST", credentials: "same-origin", cache: "no-store" });
  }
}
