// Simulation mode: a robot participant that answers every screen and trial through the same
// event paths a person uses (synthetic clicks and keydown events), jsPsych-style, so whole
// sessions run without a person.  It runs only in sessions the server made for it (an entry
// link with `?simulate=1` in development and tests, or a researcher's preview), which are
// stored as simulated and excluded.  `?sim_accuracy=0.8` on the run page, or
// `window.CHRONOSCOPE_SIMULATE = {accuracy: 0.8}`, sets how often it is right when it knows
// the answer (practice); main-trial answers are random (it never sees them).
import { sleep } from "./api.js";

function pressKey(target, key) {
  const code = key === " " ? "Space" : key.length === 1 ? `Key${key.toUpperCase()}` : key;
  target.dispatchEvent(new KeyboardEvent("keydown", { key, code, bubbles: true, cancelable: true }));
}

function shuffled(items) {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

export class Simulation {
  constructor({ accuracy = 1, minRtMs = 300, maxRtMs = 700 } = {}) {
    this.accuracy = accuracy;
    this.minRtMs = minRtMs;
    this.maxRtMs = maxRtMs;
  }

  // Options from `window.CHRONOSCOPE_SIMULATE` (`true` or e.g. {accuracy: 0}) and the URL.
  static fromUrl(search) {
    const params = new URLSearchParams(search);
    const flag = window.CHRONOSCOPE_SIMULATE;
    const options = typeof flag === "object" ? { ...flag } : {};
    if (params.has("sim_accuracy")) options.accuracy = Number(params.get("sim_accuracy"));
    if (!Number.isFinite(options.accuracy)) delete options.accuracy;
    return new Simulation(options);
  }

  delay() { return this.minRtMs + Math.random() * (this.maxRtMs - this.minRtMs); }

  // Screens: click the first offered button, or press the first key asked for.
  button(ids) {
    setTimeout(() => document.getElementById(ids[0])?.click(), 30);
  }

  key(key) {
    setTimeout(() => pressKey(document, key), 30);
  }

  answerAot(trial, session, onset) {
    const keys = session.response_keys;
    const expected = trial.params?.correct_response;
    let key = keys[Math.floor(Math.random() * keys.length)];
    if (expected) {
      const right = keys.find((k) => session.key_mapping[k] === expected);
      const wrong = keys.find((k) => session.key_mapping[k] !== expected);
      key = Math.random() < this.accuracy ? right : wrong;
    }
    const wait = onset.onset_time_ms + this.delay() - performance.now();
    setTimeout(() => pressKey(document, key), Math.max(0, wait));
  }

  // Orders the frames with the keyboard controls (selection sort by swaps), towards the
  // known order in practice, otherwise towards a random one; then presses Done.
  async answerFrameOrder(trial, board) {
    const target = trial.params?.correct_response || shuffled(board.order());
    const movable = board.order()
      .map((p, slot) => (board.hints.has(p) ? null : slot)).filter((s) => s !== null);
    const goal = target.filter((p) => !board.hints.has(p));
    for (let i = 0; i < movable.length; i++) {
      const current = board.order();
      const from = movable.findIndex((slot) => current[slot] === goal[i]);
      for (let k = from; k > i; k--) await this.moveLeft(board, movable[k]);
    }
    await sleep(this.delay());
    document.getElementById("order-done").click();
  }

  async moveLeft(board, slot) {
    const item = board.items()[slot];
    item.focus();
    pressKey(item, " ");
    pressKey(item, "ArrowLeft");
    pressKey(item, " ");
    await sleep(20);
  }
}
