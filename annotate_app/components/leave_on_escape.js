// Esc leaves a note box: the text field loses focus, Streamlit sends its text (a text area sends
// its value on blur), and the page's one-key shortcuts work again. One listener per page at
// most: a rerun that mounts the component again replaces the one before.

export default function ({ data }) {
  const selector = data.selector;
  const onKey = (event) => {
    if (event.key !== "Escape" || event.isComposing) return;
    const field = event.target;
    if (!(field instanceof HTMLElement) || !field.matches(selector)) return;
    event.preventDefault();
    event.stopPropagation();
    field.blur();
  };
  const previous = window.__critiquelabLeaveOnEscape;
  if (previous) document.removeEventListener("keydown", previous, true);
  window.__critiquelabLeaveOnEscape = onKey;
  document.addEventListener("keydown", onKey, true);
  return () => {
    document.removeEventListener("keydown", onKey, true);
    if (window.__critiquelabLeaveOnEscape === onKey) delete window.__critiquelabLeaveOnEscape;
  };
}
