// Still-frame trial (a toy type, tests/toy_trial_type): the first frame of a clip, answered
// with one of the session's response keys.  The whole browser side of the type, as
// static/js/trials/index.js describes it.
import { blobUrl } from "../preload.js";
import { el, show } from "../screens.js";
import { keyName } from "./aot.js";

function firstKey(keys) {
  return new Promise((resolve) => {
    const handler = (event) => {
      const key = keyName(event);
      if (event.repeat || !keys.includes(key)) return;
      removeEventListener("keydown", handler);
      resolve({ key, time: event.timeStamp });
    };
    addEventListener("keydown", handler);
  });
}

async function run(trial, ctx) {
  const { session, monitor } = ctx;
  const still = el("video", { class: "still", muted: "" });
  still.src = await blobUrl(trial.stimulus.url);
  await new Promise((resolve) => { still.onloadeddata = resolve; });
  const answered = firstKey(session.response_keys);
  show("still", still);
  const onset = performance.now();
  document.body.dataset.onset = String(onset);
  if (ctx.simulate) ctx.simulate.answer(trial, { session });
  const press = await answered;
  delete document.body.dataset.onset;
  return {
    trial_type: trial.trial_type, rt_ms: Math.max(0, press.time - onset), timed_out: false,
    response: session.key_mapping[press.key], key: press.key, key_time_ms: press.time,
    onset_method: null, onset_time_ms: onset, ...monitor.finish(),
  };
}

async function feedback() {}  // its studies have no practice

function simulate(sim, trial, { session }) {
  sim.press(document, session.response_keys[0]);
}

function instructions() {
  return ["instructions_still"];
}

export default { name: "still", run, feedback, simulate, instructions };
