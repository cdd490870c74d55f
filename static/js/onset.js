// Exact stimulus onset: the page-clock time at which the compositor frame that first contains
// the stimulus was presented.
//
// API:
//
//   onsetMarker() -> {place(), settle(fallbackTime, fallbackMethod) -> Promise<{time, method}>,
//                     dispose()}
//     For a change made inside one animation frame (static/js/present.js shows frame 0 of a
//     clip on a canvas): created at least a frame ahead, place() in that animation frame
//     paints an Element Timing marker in the same update; settle() resolves with the
//     presentation time of the frame that carried it, or with the fallback where the engine
//     has no Element Timing or reports none in time.
//
//   concealVideo(video), await playClip(video, options) -> {onset_time_ms, onset_method,
//                                                          onset_callbacks, onset_detail}
//     The <video> element presenter, used where a clip's frames do not fit in memory (see
//     static/js/present.js) and measured as the baseline in bench/rt_accuracy.py and
//     bench/frame_pacing.py. concealVideo hides a video without stopping Chromium from
//     decoding and compositing it (nearly zero opacity); call it before the element is put on
//     screen, so that frame 0 does not show during the fixation. The video must stay in the
//     layout: no display:none or visibility:hidden, which stop its frames from reaching the
//     compositor. playClip conceals it, pre-rolls frame 0, then in one animation frame reveals
//     it and calls options.onFirstFrame() (so the caller's DOM changes, e.g. removing the
//     fixation cross, land in the same compositor frame); playback starts as soon as frame 0
//     is known to be on screen. It resolves once the onset is known (one to three frames after
//     the reveal), while the clip keeps playing. Rejects with an Error whose message says what
//     went wrong (not decodable, not loaded in time, not playing).
//     options: onFirstFrame (function, optional); timeoutMs (default 5000) for loading.
//     onset_time_ms: performance.now() clock, unrounded, comparable to KeyboardEvent.timeStamp.
//     onset_method: how onset_time_ms was obtained, one of ONSET_METHODS.
//     onset_callbacks: requestVideoFrameCallback metadata {presentedFrames, mediaTime,
//       presentationTime, expectedDisplayTime} from the reveal on; a live array that fills
//       up to 4 entries as the clip plays (store it when the trial ends).
//     onset_detail: {reveal_frame_time_ms, next_frame_time_ms (rAF timestamps),
//       play_start_ms (when play() was called)} for audits.
//
// Why not requestVideoFrameCallback: in headless Chromium its first callback's times are
// those of the frame's hand-over to the compositor, not of its display (16-45 ms early
// against a trace), and sometimes it already reports frame 1. Instead the change is made
// in one animation frame (frame 0 drawn on a canvas, or a pre-rolled video revealed), and
// the presentation time of the compositor frame carrying that change comes from Element
// Timing on a marker text painted in the same update. bench/rt_accuracy.py and
// bench/frame_pacing.py check this against a Chromium trace.
// Precision: in a cross-origin isolated page (COOP same-origin + COEP require-corp) Chromium
// reports renderTime unrounded ("element-timing"); otherwise rounded up to 4 ms, and the
// onset is the middle of that step ("element-timing-coarse", within +-2 ms). Without Element
// Timing (Firefox, Safari) the onset is the begin-frame time of the animation frame after the
// change ("raf-next"): the vsync at which it can first be displayed, a few ms before it
// really is. The canvas presenter's methods carry a "canvas-" prefix.

const METHODS = ["element-timing", "element-timing-coarse", "raf-next"];
export const ONSET_METHODS = [...METHODS, ...METHODS.map((method) => `canvas-${method}`)];
const MAX_CALLBACKS = 4;
const MARKER_WAIT_MS = 1000;
const PLAY_WAIT_FRAMES = 3;  // start playback by then even if Element Timing is slow
const COARSE_STEP_MS = 4;  // Chromium rounds renderTime up to this outside isolation
let markerCount = 0;

// Not opacity 0: Chromium stops handing a fully transparent video's frames to the compositor
// and the reveal would then wait for one. At 0.001 nothing shows (it rounds to 0 in 8-bit
// colour) but frame 0 is composited ahead of the reveal.
export function concealVideo(video) {
  video.style.opacity = "0.001";
}

const nextAnimationFrame = () => new Promise((resolve) => requestAnimationFrame(resolve));

function withTimeout(promise, ms, message) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const DECODE_ERROR = "the clip could not be decoded";

function waitEvent(video, name) {
  // The error may have fired before anyone listened; video.error keeps it.
  if (video.error) return Promise.reject(new Error(DECODE_ERROR));
  return new Promise((resolve, reject) => {
    video.addEventListener(name, resolve, { once: true });
    video.addEventListener("error", () => reject(new Error(DECODE_ERROR)), { once: true });
  });
}

// Resolves once frame 0 is decoded and handed to the compositor (still invisible), so that
// the reveal does not wait for decoding.
export async function prerollFirstFrame(video, timeoutMs = 5000) {
  video.muted = true;
  video.playsInline = true;
  if (!video.paused) video.pause();
  const loaded = video.readyState >= 2 ? Promise.resolve() : waitEvent(video, "loadeddata");
  await withTimeout(loaded, timeoutMs, "the clip did not load in time");
  if (video.currentTime !== 0) {
    const seeked = waitEvent(video, "seeked");
    video.currentTime = 0;
    await withTimeout(seeked, timeoutMs, "the clip did not rewind in time");
  }
  if ("requestVideoFrameCallback" in video) {
    // A paused video gets one callback when its current frame reaches the compositor; it
    // may already have had it, so two animation frames are the fallback.
    const composited = new Promise((resolve) => video.requestVideoFrameCallback(resolve));
    await Promise.race([composited, nextAnimationFrame().then(nextAnimationFrame)]);
  } else {
    await nextAnimationFrame();
    await nextAnimationFrame();
  }
}

function collectCallbacks(video) {
  const callbacks = [];
  if (!("requestVideoFrameCallback" in video)) return callbacks;
  const record = (now, meta) => {
    callbacks.push({
      presentedFrames: meta.presentedFrames,
      mediaTime: meta.mediaTime,
      presentationTime: meta.presentationTime,
      expectedDisplayTime: meta.expectedDisplayTime,
    });
    if (callbacks.length < MAX_CALLBACKS) video.requestVideoFrameCallback(record);
  };
  video.requestVideoFrameCallback(record);
  return callbacks;
}

export function elementTimingSupported() {
  return typeof PerformanceObserver !== "undefined"
    && (PerformanceObserver.supportedEntryTypes || []).includes("element");
}

// A one-character text that becomes visible with the change; Element Timing reports the
// presentation time of the first frame that paints it. It is practically invisible but must
// really be painted. It is laid out hidden ahead of time, so that the animation frame of the
// change does not also pay for a new element's style and layout.
function addMarker(id) {
  const marker = document.createElement("span");
  marker.setAttribute("elementtiming", id);
  marker.setAttribute("aria-hidden", "true");
  marker.textContent = ".";
  marker.style.cssText = "position:fixed;left:0;top:0;font:1px/1 sans-serif;color:rgba(128,128,128,0.02);pointer-events:none;visibility:hidden;";
  document.body.appendChild(marker);
  return marker;
}

// Observing before the marker exists: the buffered list of "element" entries is capped (150
// in Chromium), so a long session must not rely on it.
function markerRenderTime(id) {
  let observer;
  const promise = new Promise((resolve) => {
    observer = new PerformanceObserver((list) => {
      const entry = list.getEntries().find((e) => e.identifier === id);
      if (entry && entry.renderTime > 0) resolve(entry.renderTime);
    });
    observer.observe({ type: "element", buffered: true });
  });
  return { promise, stop: () => observer.disconnect() };
}

// The rounded-up renderTime of a page that is not cross-origin isolated: the middle of its
// 4-ms step is the unbiased estimate. (A browser that does not round lands on a multiple of
// 4 ms by chance only; then the estimate is 2 ms early.)
function presentationTime(renderTime) {
  const coarse = !self.crossOriginIsolated && renderTime % COARSE_STEP_MS === 0;
  return coarse ? { time: renderTime - COARSE_STEP_MS / 2, method: "element-timing-coarse" }
    : { time: renderTime, method: "element-timing" };
}

// One change made in one animation frame, and when it reached the screen: create it a frame or
// more ahead (it lays out its hidden marker), place() inside that animation frame, settle()
// once after it (or dispose() if the change never happens). `presented` resolves (never
// rejects) with the raw renderTime once known; null without Element Timing.
export function onsetMarker() {
  const id = elementTimingSupported() ? `chronoscope-onset-${++markerCount}` : null;
  const rendered = id ? markerRenderTime(id) : null;
  const marker = id ? addMarker(id) : null;
  return {
    presented: rendered ? rendered.promise : null,
    place() {
      if (marker) marker.style.visibility = "visible";
    },
    async settle(fallbackTime, fallbackMethod) {
      if (!rendered) return { time: fallbackTime, method: fallbackMethod };
      try {
        return presentationTime(
          await withTimeout(rendered.promise, MARKER_WAIT_MS, "no element timing entry"));
      } catch (error) {
        // The fallback keeps the trial usable, and the method says which estimate it holds.
        return { time: fallbackTime, method: fallbackMethod };
      } finally {
        this.dispose();
      }
    },
    dispose() {
      if (rendered) rendered.stop();
      if (marker) marker.remove();
    },
  };
}

// Reveals the pre-rolled frame 0 in one animation frame, with the onset marker.
function revealInNextFrame(video, onFirstFrame, onset) {
  return new Promise((resolve) => {
    requestAnimationFrame((frameTime) => {
      onset.place();
      video.style.opacity = "";
      if (onFirstFrame) onFirstFrame();
      resolve(frameTime);
    });
  });
}

async function framesLater(n) {
  let time = 0;
  for (let i = 0; i < n; i += 1) time = await nextAnimationFrame();
  return time;
}

export async function playClip(video, options = {}) {
  const { onFirstFrame = null, timeoutMs = 5000 } = options;
  concealVideo(video);
  const onset = onsetMarker();
  try {
    await prerollFirstFrame(video, timeoutMs);
  } catch (error) {
    onset.dispose();
    throw error;
  }
  const callbacks = collectCallbacks(video);
  const revealFrameTime = await revealInNextFrame(video, onFirstFrame, onset);
  const nextFrameTime = await nextAnimationFrame();
  // Playback starts once frame 0 is known to be on screen: started with the reveal, the
  // frame picker (which aims at the expected display time) would skip frame 0 whenever the
  // reveal misses a frame deadline. Frame 0 thus stays up 1-2 frames longer than 1/fps.
  if (onset.presented) await Promise.race([onset.presented, framesLater(PLAY_WAIT_FRAMES - 1)]);
  const playStart = performance.now();
  // Settled at once so that a refusal is not an unhandled rejection while we wait below.
  const playing = video.play().then(() => null, (error) => error);
  const shown = await onset.settle(nextFrameTime, "raf-next");
  const refused = await withTimeout(playing, timeoutMs, "the clip did not start playing");
  if (refused) throw new Error(`the clip did not start playing (${refused.message})`);
  return {
    onset_time_ms: shown.time,
    onset_method: shown.method,
    onset_callbacks: callbacks,
    onset_detail: { reveal_frame_time_ms: revealFrameTime, next_frame_time_ms: nextFrameTime,
                    play_start_ms: playStart },
  };
}
