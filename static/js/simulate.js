// Simulation mode: a robot participant that answers every screen and trial through the same
// event paths a person uses (synthetic clicks and keydown events), jsPsych-style, so whole
// sessions run without a person.  It runs only in sessions the server made for it (an entry
// link with `?simulate=1` in development and tests, or a researcher's preview), which are
// stored as simulated and excluded.  `?sim_accuracy=0.8` on the run page, or
// `window.CHRONOSCOPE_SIMULATE = {accuracy: 0.8}`, sets how often it is right when it knows
// the answer (the server names practice answers to simulated sessions only, and a preview's
// catch trials); main-trial answers are random (it never sees them).  How a trial is
// answered is its type's own `simulate` (static/js/trials/); this file holds the generic parts.
import { TRIAL_TYPES } from "./trials/index.js";

// A key as a keyboard types it: down, and up again a short hold later (a trial waits for
// the answering key's release to store how long it was held).
const KEY_HOLD_MS = 80;

function pressKey(target, key) {
  const code = key === " " ? "Space" : key.length === 1 ? `Key${key.toUpperCase()}` : key;
  const init = { key, code, bubbles: true, cancelable: true };
  target.dispatchEvent(new KeyboardEvent("keydown", init));
  setTimeout(() => target.dispatchEvent(new KeyboardEvent("keyup", init)), KEY_HOLD_MS);
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

  // Presses `key` on `target` as a keydown event, as a keyboard does.
  press(target, key) {
    pressKey(target, key);
  }

  // A trial's answer, by the trial's own type (trials/index.js): run() calls it once the
  // trial is on screen, with what the type's answer needs (`state`).  In a researcher's
  // preview the server names a catch trial's instructed key (`preview_answer`; never in any
  // other session): the type then knows the answer as in practice, so the preview passes
  // its attention checks and goes on to the debrief.
  answer(trial, state) {
    const known = trial.preview_answer ? { ...trial,
      params: { ...trial.params, correct_response: trial.preview_answer.correct_response } }
      : trial;
    return TRIAL_TYPES[trial.trial_type].simulate(this, known, state);
  }
}
