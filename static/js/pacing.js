// The pure parts of clip presentation, shared by the main-thread canvas presenter
// (static/js/present.js) and the worker presenter (static/js/present_worker.js): how a clip's
// frames are laid on the display's refreshes, and the count of what was drawn on which refresh.
// Both run on requestAnimationFrame, which exists in a window and in a dedicated worker.

const REFRESH_SAMPLES = 12;
// A clip within 10% of refresh/n frames a second is shown n refreshes a frame (at most that
// much faster or slower than its rate): a steady cadence beats a pulldown whose pattern would
// follow the noise of the measured refresh (Firefox on a loaded machine: 17-18 ms at 60 Hz).
const CADENCE_TOLERANCE = 0.1;

export const nextAnimationFrame = () => new Promise((resolve) => requestAnimationFrame(resolve));

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

  // A clip of `nFrames` at `fps` on a display refreshing every `refreshMs`.
  static of(nFrames, fps, refreshMs) {
    return new Pacing(frameSchedule(nFrames, fps, refreshMs), frameCadence(fps, refreshMs));
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

// Refreshes counted from animation-frame timestamps, from frame 0's (its animation frame's
// time): a thread that missed one shows up as a skipped refresh. Two animation frames within
// one refresh (Firefox's software vsync runs some close together) count as that one refresh.
export class RefreshClock {
  constructor(refreshMs, firstTime) {
    this.refreshMs = refreshMs;
    this.lastTime = firstTime;
    this.refresh = 0;
  }

  tick(time) {
    this.refresh += Math.round((time - this.lastTime) / this.refreshMs);
    this.lastTime = time;
    return this.refresh;
  }
}
