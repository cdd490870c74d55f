// Screens between trials: text, buttons and key prompts in one stage element.
// `document.body.dataset.screen` names what is showing, so tests and the simulation mode
// can tell where the participant is without scraping text.

const stage = () => document.getElementById("stage");

// The simulation mode answers screens through this hook (see simulate.js).
let autoAnswer = null;
export function setAutoAnswer(hook) { autoAnswer = hook; }

// Once a final screen shows (the session ended or moved to another tab), nothing that is
// still running on this page may replace it.
let frozen = false;

export function setScreen(name) {
  if (!frozen) document.body.dataset.screen = name;
}

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function show(name, ...nodes) {
  if (frozen) return;
  setScreen(name);
  stage().replaceChildren(...nodes);
}

export function showFinal(name, ...nodes) {
  show(name, ...nodes);
  frozen = true;
}

export function paragraphs(texts) {
  return texts.map((text) => el("p", {}, text));
}

// Resolves with the id of the button clicked (event.isTrusted is not required so that the
// simulation mode can click too).
export function waitForButton(ids) {
  return new Promise((resolve) => {
    const handlers = ids.map((id) => {
      const button = document.getElementById(id);
      const handler = () => { cleanup(); resolve(id); };
      button.addEventListener("click", handler);
      return [button, handler];
    });
    const cleanup = () => handlers.forEach(([b, h]) => b.removeEventListener("click", h));
    if (autoAnswer) autoAnswer.button(ids);
  });
}

export function waitForKey(keys) {
  return new Promise((resolve) => {
    const handler = (event) => {
      if (event.repeat || !keys.includes(event.key.toLowerCase())) return;
      event.preventDefault();
      removeEventListener("keydown", handler);
      resolve(event);
    };
    addEventListener("keydown", handler);
    if (autoAnswer) autoAnswer.key(keys[0]);
  });
}

export function button(id, label, extra = {}) {
  return el("button", { id, type: "button", class: "btn", ...extra }, label);
}

export async function message(name, title, texts, label = "Continue") {
  show(name, el("h1", {}, title), ...paragraphs(texts), button("continue", label));
  document.getElementById("continue").focus();
  await waitForButton(["continue"]);
}

export function setProgress(done, total) {
  const bar = document.getElementById("progress");
  if (!bar) return;
  bar.hidden = total <= 0;
  bar.max = Math.max(total, 1);
  bar.value = done;
  bar.textContent = `${done} / ${total}`;
  bar.setAttribute("aria-label", `Progress: ${done} of ${total} trials`);
}

export function nextFrame() {
  return new Promise((resolve) => requestAnimationFrame(resolve));
}
