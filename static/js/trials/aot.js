// Arrow-of-time (and catch) trial: fixation, then the clip from its preloaded blob, decoded
// during the fixation and shown frame by frame on the display's refreshes (present.js); two
// response keys; RT = the key event's own timeStamp minus the onset of the clip's first frame
// on screen.  Response keys pressed from the fixation on but before that onset never answer;
// they are kept as ignored_inputs.  The module is the whole browser side of the type: see
// trials/index.js.
import { noteIgnored } from "../monitor.js";
import { openClip } from "../present.js";
import { sleep } from "../api.js";
import { el, show, setScreen, text } from "../screens.js";

const NAME = "aot";
const FIXATION_MS = 500;
const FEEDBACK_MS = 900;
const MAX_CALLBACKS = 4;
// The longest an answering key is waited for to be released before the trial is stored.
export const KEY_HOLD_MAX_MS = 5000;

// The physical letter key ("KeyF" -> "f"), so the response keys stay where the instructions
// put them on any keyboard layout (a Cyrillic layout's F key types "а"); event.key otherwise.
export function keyName(event) {
  const match = /^Key([A-Z])$/.exec(event.code || "");
  return match ? match[1].toLowerCase() : (event.key || "").toLowerCase();
}

// The same legend on every trial: catch videos name their key themselves, and the browser is
// never told which trials they are.  In a session of another task every clip is an attention
// check, whose own instruction replaces a forwards/backwards legend that means nothing there.
function keyLegend(session) {
  if (session.task !== NAME) return el("p", { class: "key-legend" }, text("instructions_attention"));
  const words = { F: "key_label_forward", B: "key_label_backward" };
  return el("div", { class: "key-legend" }, ...session.response_keys.map((key) =>
    el("span", {}, el("kbd", {}, key.toUpperCase()), " = ", text(words[session.key_mapping[key]]))));
}

// Collects response key presses from the moment the fixation appears, so that a key pressed
// while the clip loads or during the fixation is recorded rather than lost. Each press's
// `release` (keyRelease) listens from its keydown: the answer is taken only once the onset is
// known (up to 1 s after it), and a key released by then must keep its release.
export function keyCollector(keys) {
  const presses = [];
  let notify = null;
  const handler = (event) => {
    const key = keyName(event);
    if (event.repeat || !keys.includes(key)) return;  // auto-repeat is not a response
    event.preventDefault();
    const press = { key, code: event.code, time: event.timeStamp };
    presses.push({ ...press, release: keyRelease(press) });
    if (notify) notify();
  };
  addEventListener("keydown", handler);
  return {
    presses,
    onPress(callback) { notify = callback; },
    stop() { removeEventListener("keydown", handler); },
  };
}

// How long the answering key was held (jsPsych 8.3's rt_key_duration): from its keydown to
// the keyup of the same physical key (event.code, so a shift change while it is held still
// matches). keyCollector starts it in the press's own keydown handler, before any later
// event can be dispatched. Null
// when the window lost focus or the page was hidden first (the keyup then never comes) or
// the key was still down after KEY_HOLD_MAX_MS.
export function keyRelease(press, maxMs = KEY_HOLD_MAX_MS) {
  return new Promise((resolve) => {
    const listeners = [];
    const done = (value) => {
      clearTimeout(timer);
      for (const [target, type, handler] of listeners) target.removeEventListener(type, handler);
      resolve(value);
    };
    const listen = (target, type, handler) => {
      target.addEventListener(type, handler);
      listeners.push([target, type, handler]);
    };
    listen(window, "keyup", (event) => {
      if (event.code !== press.code) return;
      // A release the timer was late to cut off is past the bound all the same (the server
      // refuses a hold over KEY_HOLD_MAX_MS).
      const held = Math.max(0, event.timeStamp - press.time);
      done(held <= maxMs ? held : null);
    });
    listen(window, "blur", () => done(null));
    listen(document, "visibilitychange", () => {
      if (document.visibilityState === "hidden") done(null);
    });
    const timer = setTimeout(() => done(null), maxMs);
  });
}

function awaitResponse(collector, onset, windowMs) {
  return new Promise((resolve) => {
    // Presses before the first frame was on screen are anticipations, not answers.
    const valid = () => collector.presses.find((p) => p.time >= onset.onset_time_ms);
    const check = () => {
      const press = valid();
      if (press) {
        clearTimeout(timer);
        resolve(press);
      }
    };
    const timer = setTimeout(() => resolve(null),
      Math.max(0, onset.onset_time_ms + windowMs - performance.now()));
    collector.onPress(check);
    check();
  });
}

// The clip's length on this display (longer than its nominal one where its frames are held
// a whole number of refreshes slower than its rate) plus the study's window after it.
function responseWindowMs(session, stage) {
  return stage.durationMs + session.response_window_ms_after_clip;
}

// The most the clip is shown at, in device pixels: larger clips are decoded down to it.
function displaySize(box) {
  const { width, height } = box.getBoundingClientRect();
  const scale = window.devicePixelRatio || 1;
  if (!(width > 0 && height > 0)) return { width: Infinity, height: Infinity };
  return { width: Math.ceil(width * scale), height: Math.ceil(height * scale) };
}

const FEEDBACK_TEXTS = { slow: "feedback_too_slow", correct: "feedback_correct",
  incorrect: "feedback_incorrect" };

// Practice feedback (runner.js): `verdict` is the server's word on the stored answer, null if
// none came; a timeout is too slow whatever the answer.
async function feedback(data, verdict) {
  const kind = data.response === null ? "slow"
    : verdict ? (verdict.correct ? "correct" : "incorrect") : null;
  if (!kind) return;
  show("feedback", el("p", { class: `feedback ${kind}` }, text(FEEDBACK_TEXTS[kind])));
  await sleep(FEEDBACK_MS);
}

async function run(trial, ctx) {
  const fixation = el("div", { class: "fixation", "aria-hidden": "true" }, "+");
  const box = el("div", { class: "video-box" }, fixation);
  show("fixation", box, keyLegend(ctx.session));
  const collector = keyCollector(ctx.session.response_keys);
  const fixationDone = sleep(trial.params?.fixation_ms ?? FIXATION_MS);
  let stage = null;
  let data;
  try {
    stage = await openClip(trial.stimulus.url, { maxSize: displaySize(box) });
    box.prepend(stage.element);  // shows nothing until the clip starts
    await Promise.all([stage.ready(), fixationDone]);
    data = await presentAndRespond(trial, ctx, stage, fixation, collector);
  } finally {
    collector.stop();
    if (stage) stage.close();  // the decoded frames are freed with the trial
  }
  return data;
}

// The presses before the clip's first frame was on screen: never an answer, kept with the
// trial, t_ms from the onset (so negative).
function ignoredInputs(presses, onsetMs) {
  const ignored = [];
  for (const press of presses) {
    if (press.time < onsetMs) noteIgnored(ignored, press.time - onsetMs, "key");
  }
  return ignored;
}

async function presentAndRespond(trial, ctx, stage, fixation, collector) {
  const { session, monitor } = ctx;
  if (stage.element instanceof HTMLVideoElement) monitor.watchVideo(stage.element);
  const onFirstFrame = () => { fixation.remove(); setScreen("clip"); };
  const onset = await stage.start({ onFirstFrame });
  onFirstFrame();
  document.body.dataset.onset = String(onset.onset_time_ms);
  if (ctx.simulate) ctx.simulate.answer(trial, { session, onset });

  const press = await awaitResponse(collector, onset, responseWindowMs(session, stage));
  collector.stop();
  // The trial's monitoring ends with the answer: stopping the worker presenter is a message
  // round trip, and an exit in it (an Escape just after the answer) is the next trial's.
  const health = monitor.finish();
  const presentation = await stage.finish();
  delete document.body.dataset.onset;
  const response = press ? session.key_mapping[press.key] : null;
  // The clip is stopped; the trial is stored once the key is up (typically 100 ms later).
  const keyDuration = press ? await press.release : null;
  return {
    trial_type: trial.trial_type,
    rt_ms: press ? press.time - onset.onset_time_ms : null,
    timed_out: !press,
    response,
    key: press ? press.key : null,
    key_time_ms: press ? press.time : null,
    key_duration_ms: keyDuration,
    onset_method: onset.onset_method,
    onset_callbacks: (onset.onset_callbacks || []).slice(0, MAX_CALLBACKS),
    onset_time_ms: onset.onset_time_ms,
    ignored_inputs: ignoredInputs(collector.presses, onset.onset_time_ms),
    ...presentation,
    ...health,
  };
}

// The simulated participant (simulate.js): one response key, a simulated RT after the onset;
// right with the simulation's accuracy when the answer is known (practice in a simulated
// session, simulate.js), otherwise random.
function simulate(sim, trial, { session, onset }) {
  const keys = session.response_keys;
  const expected = trial.params?.correct_response;
  let key = keys[Math.floor(Math.random() * keys.length)];
  if (expected) {
    const right = keys.find((k) => session.key_mapping[k] === expected);
    const wrong = keys.find((k) => session.key_mapping[k] !== expected);
    key = Math.random() < sim.accuracy ? right : wrong;
  }
  const wait = onset.onset_time_ms + sim.delay() - performance.now();
  setTimeout(() => sim.press(document, key), Math.max(0, wait));
}

// The direction words go in as nodes, so a translation's emphasis (`**順再生**`) is kept.
function keyText(session) {
  const words = { F: "direction_forward_upper", B: "direction_backward_upper" };
  return session.response_keys.map((k) => ["instructions_aot_key",
    { key: k.toUpperCase() }, { direction: text(words[session.key_mapping[k]]) }]);
}

// This type's paragraphs of the instructions screen (flow.js).
function instructions(session) {
  return ["instructions_aot", ...keyText(session)];
}

export default { name: NAME, run, feedback, simulate, instructions };
