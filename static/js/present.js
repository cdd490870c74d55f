// Clip presentation: every frame of a clip on screen for its intended number of display
// refreshes, from the first one, and a per-trial count of the frames that were not.
//
// The clip is decoded into bitmaps before its onset (static/js/decode.js), and frame k is drawn
// on a canvas in the animation frame of the refresh it is due on: frame 0 on the first,
// frame k on refresh due[k] (frameSchedule: 30 fps at 60 Hz holds every frame 2 refreshes).
// Refreshes are counted from requestAnimationFrame timestamps (vsync times in Chromium and
// Firefox; WebKitGTK gives the callback's own time, a noisier clock), so a main thread that
// missed one shows up as a skipped refresh: the frame then due is drawn there (counted late if
// its own first refresh has passed) and frames whose whole time passed are never drawn
// (counted dropped). Timing stays locked to frame 0's refresh, so one late frame does not
// shift the rest. What the page cannot see is a frame drawn on time that the compositor shows
// a refresh late; bench/frame_pacing.py measures that against the screen, and the <video>
// element against it (there frame 0 stays up until playback starts, and the media pipeline,
// not the display, paces the rest).
//
//   await openClip(url, {maxSize, maxBytes, webcodecs}) -> stage
//     url: a preloaded stimulus URL (static/js/preload.js); maxSize {width, height}: the
//     largest size the clip is shown at, in device pixels. A clip whose frames would take more
//     than maxBytes (FRAME_BUDGET_BYTES) plays in a <video> element instead (video_stage.js).
//     webcodecs: false decodes by seeking even where WebCodecs is available (benchmarks).
//     revealOnTime: false reveals frame 0 in the first animation frame, late or not (the
//     presenters before 2026-11-29, which bench/frame_pacing.py compares).
//   stage.element: put it on screen (it shows nothing until start); await stage.ready().
//   await stage.start({onFirstFrame}) -> {onset_time_ms, onset_method, onset_callbacks,
//                                         onset_detail}
//     Shows frame 0 in the next animation frame that starts on time (reveal()), calling
//     onFirstFrame there (so the caller's DOM changes land in the same compositor frame), and
//     resolves once its onset is known; the clip goes on playing. onset_method is one of
//     onset.js's ONSET_METHODS; onset_detail holds the reveal's and the next animation
//     frame's times and reveal_deferred_frames, the late frames passed over.
//   stage.durationMs: the clip's length on this display. stage.finish() -> the trial's
//     presentation fields; it stops the clip. stage.close(): frees the frames (always call it).
//
// Fields of finish(): frames_total (the clip's frames), frames_shown (drawn before the clip
// ended or the trial stopped it), frames_late (first drawn on a later refresh than due),
// frames_dropped (due, never drawn), frame0_hold_refreshes (refreshes frame 0 stayed beyond
// its due), refresh_ms (the measured refresh interval), frame_cadence, refreshes_per_frame and
// clip_speed (frameCadence), dropped_frames and total_frames (the same counts in the columns
// the exclusion rules read). A <video> stage leaves the frames_* fields and the cadence null:
// the element does not say which refresh showed which frame.
import { ClipTooLarge, decodeClip } from "./decode.js";
import { onsetMarker } from "./onset.js";
import { Pacing, RefreshClock, clipDurationMs, measureRefresh, nextAnimationFrame }
  from "./pacing.js";
import { blobOf, blobUrl } from "./preload.js";
import { VideoStage } from "./video_stage.js";

export { Pacing, frameCadence, frameSchedule, measureRefresh } from "./pacing.js";

export const FRAME_BUDGET_BYTES = 512 * 1024 * 1024;
const WARM_FRAMES = 6;
// Which presenter draws a decoded clip where the engine has both: "worker" or "canvas"
// (bench/frame_pacing.py, docs/measurements.md "Presentation off the main thread").
export const PRESENTER = "worker";
// A worker that has not answered by then is not used (once it holds the frames, the clip is
// decoded again for the main-thread canvas), nor started again in this page (each trial
// waited for it). Generous: it starts beside the decoding, and at load 20 on 2 cores its start
// (two modules, then 12 animation frames to measure the refresh) took over 2 s once in 8.
const WORKER_WAIT_MS = 10_000;
let workerSilent = false;

function stageCanvas(clip) {
  const canvas = document.createElement("canvas");
  canvas.className = "stimulus";
  canvas.width = clip.width;
  canvas.height = clip.height;
  // CSSOM, not a style attribute: the page's CSP refuses inline styles. The grey letterbox
  // is the <video> element's (static/css).
  Object.assign(canvas.style, { width: "100%", height: "100%", objectFit: "contain",
    display: "block" });
  return canvas;
}

// The onset's animation frame must be no slower than the next ones, or frame 0 misses its
// refresh and shows one refresh short (on a loaded 2-core machine: 1 trial in 6 with the
// onset marker made in that frame, 1 in 15 with it laid out ahead). So frame 0 is drawn
// ahead, nearly transparent (as onset.js conceals a video), the marker is laid out ahead,
// and a few frames are drawn so the compositor is not idle at the onset: the onset's frame
// only changes the canvas's opacity and the marker's visibility. Both presenters reveal
// frame 0 so, on the main thread, and call begin(time) in that animation frame.
function conceal(canvas) {
  Object.assign(canvas.style, { opacity: "0.001", background: "#808080" });
  return onsetMarker();
}

// An animation frame whose callback starts late (the main thread busy, or slowed) is likely to
// commit after its deadline: frame 0 then reaches the screen a refresh later than the frame's
// time, from which the presenter counts, and is shown a refresh short, or not at all where
// frame 1 is due on the next refresh (bench/frame_pacing.py at load 9: in each of the 15 trials
// that showed frame 0 so, the reveal's callback had started over 0.3 refresh late). So the
// reveal waits for a frame that starts within REVEAL_LATE_SHARE of a refresh, at most
// REVEAL_WAIT_FRAMES of them (at 60 Hz 100 ms beyond the fixation), then takes the next one
// anyway. WebKitGTK's frame times are the callback's own, so there it never waits.
const REVEAL_LATE_SHARE = 0.3;
const REVEAL_WAIT_FRAMES = 6;

function reveal(stage, onFirstFrame, begin) {
  const { onset } = stage;
  const lateMs = REVEAL_LATE_SHARE * stage.refreshMs;
  let deferred = 0;
  return new Promise((resolve) => {
    const frame = (time) => {
      if (stage.revealOnTime && performance.now() - time > lateMs
          && deferred < REVEAL_WAIT_FRAMES) {
        deferred++;
        stage.request = requestAnimationFrame(frame);
        return;
      }
      stage.element.style.opacity = "";
      onset.place();
      if (onFirstFrame) onFirstFrame();
      begin(time);
      // Without Element Timing: the next animation frame's own time, not this one's plus a
      // refresh. In Firefox (and Chromium) the two agree, the vsync after the one frame 0 was
      // drawn for; WebKitGTK's animation frames keep no vsync cadence, and its next one
      // begins once the compositor has taken frame 0, so it follows the screen (onset error
      // against the X framebuffer, bench/rt_engines.py: SD 2.8 ms instead of 6-8.5 ms).
      // It is also never in the future, so no answer is taken for an anticipation.
      nextAnimationFrame().then(async (next) => {
        const shown = await onset.settle(next, "raf-next");
        resolve({ onset_time_ms: shown.time, onset_method: `canvas-${shown.method}`,
          onset_callbacks: [],
          onset_detail: { first_frame_raf_ms: time, next_frame_raf_ms: next,
            reveal_deferred_frames: deferred } });
      });
    };
    stage.request = requestAnimationFrame(frame);
  });
}

// Frames drawn on the main thread, in its animation frames.
class CanvasStage {
  constructor(clip, refreshMs) {
    this.clip = clip;
    this.source = clip.source;
    this.refreshMs = refreshMs;
    this.pacing = Pacing.of(clip.frames.length, clip.fps, refreshMs);
    this.durationMs = clipDurationMs(clip.frames.length, clip.fps, refreshMs);
    this.request = null;
    this.element = stageCanvas(clip);
    this.context = this.element.getContext("2d");
  }

  async ready() {
    this.onset = conceal(this.element);
    for (let i = 0; i < WARM_FRAMES; i++) {
      this.draw(0);
      await nextAnimationFrame();
    }
  }

  draw(k) {
    this.context.drawImage(this.clip.frames[k], 0, 0);
  }

  start({ onFirstFrame = null } = {}) {
    return reveal(this, onFirstFrame, (time) => {
      this.clock = new RefreshClock(this.refreshMs, time);
      this.next();
    });
  }

  next() {
    this.request = this.pacing.done ? null : requestAnimationFrame((time) => this.tick(time));
  }

  tick(time) {
    const k = this.pacing.advance(this.clock.tick(time));
    if (k !== null) this.draw(k);
    this.next();
  }

  finish() {
    if (this.request !== null) cancelAnimationFrame(this.request);
    this.request = null;
    return { ...this.pacing.fields(this.refreshMs), presenter: "canvas" };
  }

  close() {
    this.finish();
    if (this.onset) this.onset.dispose();
    this.clip.close();
  }
}

// Frames drawn by a dedicated worker (static/js/present_worker.js) on the canvas's
// OffscreenCanvas, in the worker's own animation frames, so a busy main thread delays no frame
// after the onset. The main thread still reveals frame 0 with the onset marker (the onset is
// measured as the canvas presenter's is) and tells the worker that animation frame's time,
// from which the worker counts refreshes. Times cross between the two clocks by their origins.
class WorkerStage {
  // fallback(): a CanvasStage of the clip decoded again, for a worker that does not warm up.
  constructor(worker, hello, clip, fallback) {
    this.worker = worker;
    this.fallback = fallback;
    this.offsetMs = hello.timeOrigin - performance.timeOrigin;  // page = worker time + offset
    this.refreshMs = hello.refreshMs;  // the worker's: the page's misses frames when janked
    this.clip = clip;
    this.source = clip.source;
    this.durationMs = clipDurationMs(clip.frames.length, clip.fps, this.refreshMs);
    this.request = null;
    this.element = stageCanvas(clip);
    this.draws = [];
    const canvas = this.element.transferControlToOffscreen();
    worker.postMessage({ type: "load", canvas, frames: clip.frames, fps: clip.fps },
      [canvas, ...clip.frames]);
  }

  // {worker, hello} of a worker that runs and has animation frames, or null where the engine
  // lacks either (WebKit before 16.4 has no OffscreenCanvas; a worker may lack animation
  // frames).
  static async launch() {
    if (workerSilent || !("transferControlToOffscreen" in HTMLCanvasElement.prototype)) {
      return null;
    }
    let worker;
    try {
      worker = new Worker(new URL("./present_worker.js", import.meta.url), { type: "module" });
    } catch (error) {
      return null;  // no module workers, or refused by the page's policy
    }
    const hello = await reply(worker, "hello", WORKER_WAIT_MS).catch(() => null);
    if (!hello?.raf) {
      worker.terminate();
      return null;
    }
    return { worker, hello };
  }

  async ready() {
    this.onset = conceal(this.element);
    const warmed = reply(this.worker, "warm", WORKER_WAIT_MS);
    this.worker.postMessage({ type: "warm", frames: WARM_FRAMES });
    try {
      await warmed;
    } catch (error) {  // the worker holds the frames: the main thread's are decoded again
      this.close();
      this.canvas = await this.fallback();
      this.element.replaceWith(this.canvas.element);
      Object.assign(this, { element: this.canvas.element, durationMs: this.canvas.durationMs });
      await this.canvas.ready();
    }
  }

  start({ onFirstFrame = null } = {}) {
    if (this.canvas) return this.canvas.start({ onFirstFrame });
    return reveal(this, onFirstFrame, (time) => {
      this.worker.postMessage({ type: "start", time: time - this.offsetMs });
    });
  }

  async finish() {
    if (this.canvas) return this.canvas.finish();
    if (!this.fields) {
      const finished = reply(this.worker, "finished", WORKER_WAIT_MS);
      this.worker.postMessage({ type: "finish" });
      const { fields, draws } = await finished;
      this.fields = { ...fields, presenter: "worker" };
      this.draws = draws.map(([time, k]) => [time + this.offsetMs, k]);
    }
    return this.fields;
  }

  close() {
    if (this.canvas) this.canvas.close();
    if (this.request !== null) cancelAnimationFrame(this.request);
    this.worker.terminate();
    if (this.onset) this.onset.dispose();
    this.clip.close();
  }
}

// The worker's next message of `type`; rejects if it fails or sends none within `ms`.
function reply(worker, type, ms) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      workerSilent = true;
      done(null, new Error("the clip presenter did not answer"));
    }, ms);
    const onMessage = (event) => { if (event.data?.type === type) done(event.data); };
    const onError = () => done(null, new Error("the clip presenter failed"));
    function done(data, error) {
      clearTimeout(timer);
      worker.removeEventListener("message", onMessage);
      worker.removeEventListener("error", onError);
      if (error) reject(error); else resolve(data);
    }
    worker.addEventListener("message", onMessage);
    worker.addEventListener("error", onError);
  });
}

export async function openClip(url, { maxSize, maxBytes = FRAME_BUDGET_BYTES, webcodecs = true,
  presenter = PRESENTER, revealOnTime = true } = {}) {
  const [blob, objectUrl] = await Promise.all([blobOf(url), blobUrl(url)]);
  try {
    const options = { maxSize, maxBytes, webcodecs };
    const launched = presenter === "worker" ? WorkerStage.launch() : Promise.resolve(null);
    const decoded = decodeClip(blob, objectUrl, options).catch(async (error) => {
      (await launched)?.worker.terminate();
      throw error;
    });
    const [clip, refreshMs, worker] = await Promise.all([decoded, measureRefresh(), launched]);
    const fallback = async () => Object.assign(
      new CanvasStage(await decodeClip(blob, objectUrl, options), refreshMs), { revealOnTime });
    const stage = worker ? new WorkerStage(worker.worker, worker.hello, clip, fallback)
      : new CanvasStage(clip, refreshMs);
    stage.revealOnTime = revealOnTime;
    return stage;
  } catch (error) {
    if (error instanceof ClipTooLarge) return new VideoStage(objectUrl);
    throw error;
  }
}
