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
//     than maxBytes (FRAME_BUDGET_BYTES) plays in a <video> element instead (onset.js).
//     webcodecs: false decodes by seeking even where WebCodecs is available (benchmarks).
//   stage.element: put it on screen (it shows nothing until start); await stage.ready().
//   await stage.start({onFirstFrame}) -> {onset_time_ms, onset_method, onset_callbacks}
//     Shows frame 0 in the next animation frame, calling onFirstFrame there (so the caller's
//     DOM changes land in the same compositor frame), and resolves once its onset is known;
//     the clip goes on playing. onset_method is one of onset.js's ONSET_METHODS.
//   stage.durationMs: the clip's length. stage.finish() -> the trial's presentation fields;
//     it stops the clip. stage.close(): frees the frames (always call it).
//
// Fields of finish(): frames_total (the clip's frames), frames_shown (drawn before the clip
// ended or the trial stopped it), frames_late (first drawn on a later refresh than due),
// frames_dropped (due, never drawn), frame0_hold_refreshes (refreshes frame 0 stayed beyond
// its due), refresh_ms (the measured refresh interval), frame_cadence, refreshes_per_frame and
// clip_speed (frameCadence), dropped_frames and total_frames (the same counts in the columns
// the exclusion rules read). A <video> stage leaves the frames_* fields and the cadence null:
// the element does not say which refresh showed which frame.
import { ClipTooLarge, decodeClip } from "./decode.js";
import { concealVideo, onsetMarker, playClip } from "./onset.js";
import { blobOf, blobUrl } from "./preload.js";

export const FRAME_BUDGET_BYTES = 512 * 1024 * 1024;
const REFRESH_SAMPLES = 12;
const WARM_FRAMES = 6;
// A clip within 10% of refresh/n frames a second is shown n refreshes a frame (at most that
// much faster or slower than its rate): a steady cadence beats a pulldown whose pattern would
// follow the noise of the measured refresh (Firefox on a loaded machine: 17-18 ms at 60 Hz).
const CADENCE_TOLERANCE = 0.1;

const nextAnimationFrame = () => new Promise((resolve) => requestAnimationFrame(resolve));

// The refresh interval: the median step between animation frames, refined over the whole span.
export async function measureRefresh(samples = REFRESH_SAMPLES) {
  const times = [await nextAnimationFrame()];
  while (times.length <= samples) times.push(await nextAnimationFrame());
  const steps = times.slice(1).map((t, i) => t - times[i]).sort((a, b) => a - b);
  const median = steps[Math.floor(steps.length / 2)];
  const span = times[times.length - 1] - times[0];
  return span / Math.max(1, Math.round(span / median));
}

// How a clip's frames are laid on the display's refreshes, stored with each trial:
// "whole", n refreshes a frame where that is within CADENCE_TOLERANCE of the clip's rate (the
// clip then plays at clip_speed of it: 30 fps at 144 Hz is 4.8 refreshes a frame, shown 5,
// at 0.96); else "pulldown", each frame held the whole refreshes either side of its share so
// the clip keeps its rate (24 fps at 60 Hz: 3, 2, 3, 2; 30 fps at 75 Hz: 3, 2).
export function frameCadence(fps, refreshMs) {
  const perFrame = 1000 / fps / refreshMs;
  const whole = Math.max(1, Math.round(perFrame));
  if (Math.abs(perFrame / whole - 1) < CADENCE_TOLERANCE) {
    return { frame_cadence: "whole", refreshes_per_frame: whole, clip_speed: perFrame / whole };
  }
  return { frame_cadence: "pulldown", refreshes_per_frame: perFrame, clip_speed: 1 };
}

// due[k]: the refresh, counted from frame 0's, on which frame k is due; due[n] ends the clip.
// A clip faster than the display has frames that are never due alone.
export function frameSchedule(nFrames, fps, refreshMs) {
  const step = frameCadence(fps, refreshMs).refreshes_per_frame;
  return Array.from({ length: nFrames + 1 }, (_, k) => Math.round(k * step));
}

// What was drawn on which refresh, against the schedule.
export class Pacing {
  constructor(due, cadence = null) {
    this.due = due;
    this.cadence = cadence;
    this.last = due.length - 2;  // the clip's last frame
    this.shown = 0;
    this.drawn = 1;
    this.late = 0;
    this.dropped = 0;
    this.frame0Hold = 0;
  }

  get done() { return this.shown === this.last; }

  // The frame to draw on refresh r, or null when the one on screen is still due.
  advance(r) {
    let k = this.shown;
    while (k < this.last && this.due[k + 1] <= r) k++;
    if (k === this.shown) return null;
    if (this.shown === 0) this.frame0Hold = r - this.due[1];
    this.dropped += k - this.shown - 1;
    if (r > this.due[k]) this.late++;
    this.shown = k;
    this.drawn++;
    return k;
  }

  fields(refreshMs) {
    return { frames_total: this.last + 1, frames_shown: this.drawn, frames_late: this.late,
      frames_dropped: this.dropped, frame0_hold_refreshes: this.frame0Hold,
      refresh_ms: refreshMs, dropped_frames: this.dropped, total_frames: this.last + 1,
      frame_cadence: this.cadence?.frame_cadence ?? null,
      refreshes_per_frame: this.cadence?.refreshes_per_frame ?? null,
      clip_speed: this.cadence?.clip_speed ?? null };
  }
}

class CanvasStage {
  constructor(clip, refreshMs) {
    this.clip = clip;
    this.source = clip.source;
    this.refreshMs = refreshMs;
    this.pacing = new Pacing(frameSchedule(clip.frames.length, clip.fps, refreshMs),
      frameCadence(clip.fps, refreshMs));
    this.durationMs = (clip.frames.length * 1000) / clip.fps;
    this.request = null;
    const canvas = document.createElement("canvas");
    canvas.className = "stimulus";
    canvas.width = clip.width;
    canvas.height = clip.height;
    // CSSOM, not a style attribute: the page's CSP refuses inline styles. The grey letterbox
    // is the <video> element's (static/css).
    Object.assign(canvas.style, { width: "100%", height: "100%", objectFit: "contain",
      display: "block" });
    this.element = canvas;
    this.context = canvas.getContext("2d");
  }

  // The onset's animation frame must be no slower than the next ones, or frame 0 misses its
  // refresh and shows one refresh short (on a loaded 2-core machine: 1 trial in 6 with the
  // onset marker made in that frame, 1 in 15 with it laid out ahead). So frame 0 is drawn
  // ahead, nearly transparent (as onset.js conceals a video), the marker is laid out ahead,
  // and a few frames are drawn so the compositor is not idle at the onset: the onset's frame
  // only changes the canvas's opacity and the marker's visibility.
  async ready() {
    this.onset = onsetMarker();
    Object.assign(this.element.style, { opacity: "0.001", background: "#808080" });
    for (let i = 0; i < WARM_FRAMES; i++) {
      this.draw(0);
      await nextAnimationFrame();
    }
  }

  draw(k) {
    this.context.drawImage(this.clip.frames[k], 0, 0);
  }

  start({ onFirstFrame = null } = {}) {
    const { onset } = this;
    return new Promise((resolve) => {
      this.request = requestAnimationFrame((time) => {
        this.element.style.opacity = "";
        onset.place();
        if (onFirstFrame) onFirstFrame();
        this.lastTime = time;
        this.refresh = 0;
        this.next();
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
            onset_detail: { first_frame_raf_ms: time, next_frame_raf_ms: next } });
        });
      });
    });
  }

  next() {
    this.request = this.pacing.done ? null : requestAnimationFrame((time) => this.tick(time));
  }

  // Two animation frames within one refresh (Firefox's software vsync runs some close
  // together) count as that one refresh.
  tick(time) {
    this.refresh += Math.round((time - this.lastTime) / this.refreshMs);
    this.lastTime = time;
    const k = this.pacing.advance(this.refresh);
    if (k !== null) this.draw(k);
    this.next();
  }

  finish() {
    if (this.request !== null) cancelAnimationFrame(this.request);
    this.request = null;
    return this.pacing.fields(this.refreshMs);
  }

  close() {
    this.finish();
    if (this.onset) this.onset.dispose();
    this.clip.close();
  }
}

function waitLoaded(video) {
  if (video.readyState >= 2) return Promise.resolve();
  return new Promise((resolve, reject) => {
    video.addEventListener("loadeddata", resolve, { once: true });
    video.addEventListener("error", () => reject(new Error("the clip could not be decoded")),
      { once: true });
  });
}

// The fallback for clips too large to hold decoded: the <video> element, as before.
class VideoStage {
  constructor(objectUrl) {
    const video = document.createElement("video");
    video.className = "stimulus";
    video.muted = true;
    video.playsInline = true;
    video.disablePictureInPicture = true;
    video.preload = "auto";
    video.src = objectUrl;
    concealVideo(video);  // frame 0 must not show before playClip reveals it
    this.element = video;
  }

  get durationMs() { return this.element.duration * 1000; }

  ready() { return waitLoaded(this.element); }

  async start(options) {
    this.onset = await playClip(this.element, options);
    return this.onset;
  }

  finish() {
    const video = this.element;
    const quality = video.getVideoPlaybackQuality ? video.getVideoPlaybackQuality() : null;
    video.pause();
    return { frames_total: null, frames_shown: null, frames_late: null, frames_dropped: null,
      frame0_hold_refreshes: null, refresh_ms: null, frame_cadence: null,
      refreshes_per_frame: null, clip_speed: null,
      dropped_frames: quality ? quality.droppedVideoFrames : null,  // null: browser cannot tell
      total_frames: quality ? quality.totalVideoFrames : null };
  }

  close() {
    this.element.pause();
    this.element.removeAttribute("src");
    this.element.load();
  }
}

export async function openClip(url, { maxSize, maxBytes = FRAME_BUDGET_BYTES, webcodecs = true }) {
  const [blob, objectUrl] = await Promise.all([blobOf(url), blobUrl(url)]);
  try {
    const options = { maxSize, maxBytes, webcodecs };
    const [clip, refreshMs] = await Promise.all([decodeClip(blob, objectUrl, options),
      measureRefresh()]);
    return new CanvasStage(clip, refreshMs);
  } catch (error) {
    if (error instanceof ClipTooLarge) return new VideoStage(objectUrl);
    throw error;
  }
}
