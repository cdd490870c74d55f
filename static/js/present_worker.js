// The worker presenter's drawing side (static/js/present.js WorkerStage): a decoded clip drawn
// on an OffscreenCanvas in this worker's own animation frames, on the refreshes its schedule
// says (static/js/pacing.js, the same count as the main-thread canvas presenter).
//
// Messages in: load {canvas, frames, fps} (canvas and frames transferred);
// warm {frames}: frame 0 drawn in that many animation frames, then "warm" is sent;
// start {time}: frame 0 was revealed in the page's animation frame of `time` (this worker's
// clock), counting starts there; finish: drawing stops, "finished" {fields, draws} is sent
// (draws: [animation-frame time, frame index] of every draw from frame 0's reveal on).
// Out first: hello {raf, timeOrigin, refreshMs}: whether this worker has animation frames,
// and the refresh interval measured on them (the page's own animation frames miss refreshes
// while its main thread is busy: janked 30 ms every 100 ms, it measured 33.3 ms at 60 Hz).
import { Pacing, RefreshClock, measureRefresh, nextAnimationFrame } from "./pacing.js";

const raf = typeof self.requestAnimationFrame === "function";
const refreshMs = raf ? await measureRefresh() : null;
let stage = null;

function draw(k) {
  stage.context.drawImage(stage.frames[k], 0, 0);
}

function next() {
  stage.request = stage.pacing.done ? null : requestAnimationFrame(tick);
}

function tick(time) {
  const k = stage.pacing.advance(stage.clock.tick(time));
  if (k !== null) {
    draw(k);
    stage.draws.push([time, k]);
  }
  next();
}

const handlers = {
  load({ canvas, frames, fps }) {
    stage = { context: canvas.getContext("2d"), frames, refreshMs, request: null, draws: [],
      pacing: Pacing.of(frames.length, fps, refreshMs) };
  },
  async warm({ frames }) {
    for (let i = 0; i < frames; i++) {
      draw(0);
      await nextAnimationFrame();
    }
    self.postMessage({ type: "warm" });
  },
  start({ time }) {
    stage.clock = new RefreshClock(stage.refreshMs, time);
    stage.draws.push([time, 0]);
    next();
  },
  finish() {
    if (stage.request !== null) cancelAnimationFrame(stage.request);
    stage.request = null;
    self.postMessage({ type: "finished", fields: stage.pacing.fields(stage.refreshMs),
      draws: stage.draws });
  },
};

self.addEventListener("message", (event) => handlers[event.data.type](event.data));
self.postMessage({ type: "hello", raf, timeOrigin: performance.timeOrigin, refreshMs });
