// Exact stimulus onset for a video clip: the page-clock time at which the compositor frame
// that first contains the clip was presented.
//
// API (used by trials/aot.js):
//
//   concealVideo(video)
//     Hide a video without stopping Chromium from decoding and compositing it (nearly zero
//     opacity). Call it before the element is put on screen, so that frame 0 does not show
//     during the fixation. The video must stay in the layout: no display:none or
//     visibility:hidden, which stop its frames from reaching the compositor.
//
//   await playClip(video, options) -> {onset_time_ms, onset_method, onset_callbacks,
//                                      onset_detail}
//     `video` has its (blob) src. playClip conceals it, pre-rolls frame 0, then in one
//     animation frame reveals it and calls options.onFirstFrame() (so the caller's DOM
//     changes, e.g. removing the fixation cross, land in the same compositor frame); playback
//     starts as soon as frame 0 is known to be on screen. It resolves once the onset is
//     known (one to three frames after the reveal), while the clip keeps playing. Rejects with an Error whose
//     message says what went wrong (not decodable, not loaded in time, not playing).
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
// against a trace), and sometimes it already reports frame 1. Instead frame 0 is decoded
// and composited while invisible, so revealing it is an ordinary DOM change, and the
// presentation time of the compositor frame carrying that change comes from Element Timing
// on a marker text painted in the same update. bench/rt_accuracy.py checks this against the
// first frame with the video in a Chromium trace.
// Precision: in a cross-origin isolated page (COOP same-origin + COEP require-corp) Chromium
// reports renderTime unrounded ("element-timing"); otherwise rounded up to 4 ms, and the
// onset is the middle of that step ("element-timing-coarse", within +-2 ms). Without Element Timing (Firefox, Safari) the
// onset is the begin-frame time of the animation frame after the reveal ("raf-next"): the
// vsync at which the reveal can first be displayed, a few ms before it really is.

export const ONSET_METHODS = ["element-timing", "element-timing-coarse", "raf-next"];
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

// A one-character text painted with the reveal; Element Timing reports the presentation time
// of the first frame that contains it. It is practically invisible but must really be painted.
function addMarker(parent, id) {
  const marker = document.createElement("span");
  marker.setAttribute("elementtiming", id);
  marker.setAttribute("aria-hidden", "true");
  marker.textContent = ".";
  marker.style.cssText = "position:fixed;left:0;top:0;font:1px/1 sans-serif;color:rgba(128,128,128,0.02);pointer-events:none;";
  parent.appendChild(marker);
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

// Reveals the pre-rolled frame 0 in one animation frame, with the Element Timing marker.
function revealInNextFrame(video, onFirstFrame, markerId) {
  return new Promise((resolve) => {
    requestAnimationFrame((frameTime) => {
      const marker = markerId ? addMarker(document.body, markerId) : null;
      video.style.opacity = "";
      if (onFirstFrame) onFirstFrame();
      resolve({ frameTime, marker });
    });
  });
}

// The rounded-up renderTime of a page that is not cross-origin isolated: the middle of its
// 4-ms step is the unbiased estimate. (A browser that does not round lands on a multiple of
// 4 ms by chance only; then the estimate is 2 ms early.)
function presentationTime(renderTime) {
  const coarse = !self.crossOriginIsolated && renderTime % COARSE_STEP_MS === 0;
  return coarse ? { time: renderTime - COARSE_STEP_MS / 2, method: "element-timing-coarse" }
    : { time: renderTime, method: "element-timing" };
}

async function framesLater(n) {
  let time = 0;
  for (let i = 0; i < n; i += 1) time = await nextAnimationFrame();
  return time;
}

export async function playClip(video, options = {}) {
  const { onFirstFrame = null, timeoutMs = 5000 } = options;
  concealVideo(video);
  await prerollFirstFrame(video, timeoutMs);
  const markerId = elementTimingSupported() ? `chronoscope-onset-${++markerCount}` : null;
  const rendered = markerId ? markerRenderTime(markerId) : null;
  const callbacks = collectCallbacks(video);
  const reveal = await revealInNextFrame(video, onFirstFrame, markerId);
  const nextFrameTime = await nextAnimationFrame();
  // Playback starts once frame 0 is known to be on screen: started with the reveal, the
  // frame picker (which aims at the expected display time) would skip frame 0 whenever the
  // reveal misses a frame deadline. Frame 0 thus stays up 1-2 frames longer than 1/fps.
  if (rendered) await Promise.race([rendered.promise, framesLater(PLAY_WAIT_FRAMES - 1)]);
  const playStart = performance.now();
  // Settled at once so that a refusal is not an unhandled rejection while we wait below.
  const playing = video.play().then(() => null, (error) => error);
  let onset = { time: nextFrameTime, method: "raf-next" };
  if (rendered) {
    try {
      onset = presentationTime(
        await withTimeout(rendered.promise, MARKER_WAIT_MS, "no element timing entry"));
    } catch (error) {
      // Falls back to raf-next; the trial stays usable and says which method it used.
    } finally {
      rendered.stop();
      reveal.marker.remove();
    }
  }
  const refused = await withTimeout(playing, timeoutMs, "the clip did not start playing");
  if (refused) throw new Error(`the clip did not start playing (${refused.message})`);
  return {
    onset_time_ms: onset.time,
    onset_method: onset.method,
    onset_callbacks: callbacks,
    onset_detail: { reveal_frame_time_ms: reveal.frameTime, next_frame_time_ms: nextFrameTime,
                    play_start_ms: playStart },
  };
}
