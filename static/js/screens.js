// Screens between trials: text, buttons and key prompts in one stage element.
// `document.body.dataset.screen` names what is showing, so tests and the simulation mode
// can tell where the participant is without scraping text.

const stage = () => document.getElementById("stage");

// The participant's texts (GET /api/session: sanitised HTML by key, in their language).  The
// few values only the browser knows (a countdown, a measured window) fill `{placeholders}`
// here, into the parsed text as text nodes: no value is ever parsed as HTML, so none can add
// markup or an attribute, whatever the text around it (see fill()).
let texts = {};
export function setTexts(rendered, language, direction) {
  texts = rendered || {};
  if (language) document.documentElement.lang = language;
  if (direction) document.documentElement.dir = direction;  // "rtl" for Arabic, Hebrew, ...
}

const PLACEHOLDER = /\{([a-z_]+)\}/g;
// Only an http(s) URL may fill a placeholder inside an attribute, as on the server
// (experiments/texts render()): any other text could make an href a script URL.
const WEB_URL = /^https?:\/\/[^\s\x00-\x1f]+$/i;

// A text's plural form: `key_one` (`_two`, `_few`, `_many`: whichever the language has) when
// the first number among its values asks for that form by the language's plural rules, else
// `key` itself ("other").  "in 1 second", "in 1 Sekunde"; "in 5 seconds".
function pluralKey(key, values) {
  const count = Object.values(values).find((value) => typeof value === "number");
  if (count === undefined) return key;
  const form = new Intl.PluralRules(document.documentElement.lang || undefined).select(count);
  return form !== "other" && `${key}_${form}` in texts ? `${key}_${form}` : key;
}

// A text as nodes (a fragment) to put into an element, its placeholders filled: `values` as
// text, `raw` with nodes made here (e.g. another text()).  A placeholder without a value
// stays as written.
export function text(key, values = {}, raw = {}) {
  const template = document.createElement("template");
  const markup = texts[pluralKey(key, values)];
  if (markup === undefined) template.content.append(key);
  else template.innerHTML = markup;  // the server's sanitised HTML, nothing of ours in it
  fill(template.content, values, raw);
  return template.content;
}

// Fill placeholders in the text nodes and attribute values under `root`.  The text nodes are
// collected first, so a value that itself reads "{code}" is never filled in its turn.
function fill(root, values, raw) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const found = [];
  while (walker.nextNode()) if (walker.currentNode.data.includes("{")) found.push(walker.currentNode);
  for (const node of found) {
    const parts = node.data.split(PLACEHOLDER);  // text, name, text, name, ..., text
    node.replaceWith(...parts.map((part, i) => {
      if (i % 2 === 0) return part;
      if (part in raw) return raw[part].cloneNode(true);
      return part in values ? String(values[part]) : `{${part}}`;
    }));
  }
  for (const element of root.querySelectorAll("*")) {
    for (const attribute of element.attributes) {
      if (!attribute.value.includes("{")) continue;
      attribute.value = attribute.value.replace(PLACEHOLDER, (whole, name) => {
        if (!(name in values) && !(name in raw)) return whole;
        return name in values && WEB_URL.test(String(values[name])) ? String(values[name]) : "";
      });
    }
  }
}

// A moment (ISO 8601) as the participant reads it: their time zone, their language, the
// zone's name added (e.g. "Thursday, 16 January 2030 at 01:30 GMT+13").
const LOCAL_TIME = { weekday: "long", year: "numeric", month: "long", day: "numeric",
  hour: "numeric", minute: "2-digit", timeZoneName: "short" };
export function localTime(iso, language = document.documentElement.lang) {
  return new Intl.DateTimeFormat(language || undefined, LOCAL_TIME).format(new Date(iso));
}

// A <time> element for a moment: machine-readable UTC, shown in local time.
export function localTimeNode(iso) {
  return el("time", { datetime: iso }, localTime(iso));
}

// Every <time data-local> on a server-rendered page (e.g. the wait page) in local time.
export function showLocalTimes(root = document) {
  for (const node of root.querySelectorAll("time[data-local]")) {
    node.textContent = localTime(node.dateTime);
  }
}

// A text as plain characters: button labels, attributes, the leave-page prompt.
export function plain(key, values) {
  return text(key, values).textContent.trim();
}

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

// Paragraphs of texts given by key ("key" or [key, values]); a text of several paragraphs
// (rendered with its own <p>s) goes in a <div>.
export function paragraphs(keys) {
  return keys.map((item) => {
    const [key, values, raw] = Array.isArray(item) ? item : [item, {}, {}];
    const nodes = text(key, values, raw);
    const first = [...nodes.childNodes].find((n) => n.nodeType !== Node.TEXT_NODE || n.data.trim());
    return el(/^(P|UL|OL|H\d|BLOCKQUOTE)$/.test(first?.nodeName ?? "") ? "div" : "p", {}, nodes);
  });
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

// A screen of texts by key: a title, paragraphs and one button.
export async function message(name, title, keys, label = "continue_button") {
  show(name, el("h1", {}, text(title)), ...paragraphs(keys), button("continue", text(label)));
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
  bar.setAttribute("aria-label", plain("progress_label", { done, total }));
}

export function nextFrame() {
  return new Promise((resolve) => requestAnimationFrame(resolve));
}

// While the browser is offline a banner says the answers are safe (they wait in the trial
// queue); the screen underneath stays as it is.
export function watchConnection() {
  const banner = document.getElementById("offline-banner");
  if (!banner) return;
  const update = () => {
    banner.hidden = navigator.onLine;
    if (!navigator.onLine) banner.replaceChildren(text("offline"));
    document.body.dataset.offline = navigator.onLine ? "" : "1";
  };
  addEventListener("offline", update);
  addEventListener("online", update);
  update();
}
