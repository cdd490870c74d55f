// The pure parts of clip presentation, shared by the main-thread canvas presenter
// (static/js/present.js) and the worker presenter (static/js/present_worker.js): how a clip's
// frames are laid on the display's refreshes, and the count of what was drawn on which refresh.
// Both run on requestAnimationFrame, which exists in a window and in a dedicated worker.

const REFRESH_SAMPLES = 12;
// A clip within 10% of refresh/n frames a second is shown n refreshes a frame (at most that
// much faster or slower than its rate): a steady cadence beats a pulldown whose pattern would
// follow the noise of the measured refresh (Firefox on a loaded machine: 17-18 ms at 60 Hz).
const CADENCE_TOLERANCE = 0.1;
// The choice is made as though the refresh were this much longer, so that a clip halfway
// between two counts (30 fps at 165 Hz: 5.5 refreshes a frame) or at the tolerance's edge
// (25 fps at 90 Hz: 0.90) takes the slower count whichever side of it the measured refresh
// falls (+-0.05 ms is 1.2 % at 240 Hz), not 5 on one trial and 6 on the next. A whole count
// thus plays at 0.88 to 1.08 of the clip's rate. This moves the tie to 2 % below a count and
// a half: a rate whose refresh lies there (24 fps at 200 Hz, 25 fps at 160 Hz) still flips
// with the noise (docs/walkthrough.md); clip_speed says which.
const CADENCE_MARGIN = 0.02;

export const nextAnimationFrame = () => new Promise((resolve) => requestAnimationFrame(resolve));

// The refresh interval, from the steps between animation frames: each step counts the whole
// refreshes it spans, the steps' sum over that count. The unit a step is counted in is their
// median, or their lower quartile where the median is a whole multiple of it: a main thread
// that misses frames (janked 30 ms every 100 ms) made the median 2 or 3 refreshes at 60 Hz,
// and a step of 2 or 3 then counted as 1. A jittery thread's steps (late by 0-8 ms each) are
// no multiple of their quartile and are counted in the median: in the quartile, a 20.7-ms
// step beside a 12.7-ms one counted 2, and 60 Hz measured 11 ms. Two frames close together
// (Firefox's software vsync) round to one refresh.
export async function measureRefresh(samples = REFRESH_SAMPLES) {
  const times = [await nextAnimationFrame()];
  while (times.length <= samples) times.push(await nextAnimationFrame());
  return refreshOf(times.slice(1).map((t, i) => t - times[i]));
}

const WHOLE_MULTIPLE = 0.15;  // how near a whole number the median / quartile must be

function refreshOf(steps) {
  const sorted = [...steps].sort((a, b) => a - b);
  const quartile = sorted[Math.floor(steps.length / 4)];
  const median = sorted[Math.floor(steps.length / 2)];
  const multiple = Math.round(median / quartile);
  const unit = multiple >= 2 && Math.abs(median / quartile - multiple) < WHOLE_MULTIPLE
    ? quartile : median;
  const counted = steps.reduce((sum, step) => sum + Math.round(step / unit), 0);
  return steps.reduce((sum, step) => sum + step, 0) / Math.max(1, counted);
}

// How a clip's frames are laid on the display's refreshes, stored with each trial:
// "whole", n refreshes a frame where that is within CADENCE_TOLERANCE of the clip's rate (the
// clip then plays at clip_speed of it: 30 fps at 144 Hz is 4.8 refreshes a frame, shown 5,
// at 0.96); else "pulldown", each frame held the whole refreshes either side of its share so
// the clip keeps its rate (24 fps at 60 Hz: 3, 2, 3, 2; 30 fps at 75 Hz: 3, 2).
export function frameCadence(fps, refreshMs) {
  const perFrame = 1000 / fps / refreshMs;
  const decided = perFrame * (1 + CADENCE_MARGIN);
  const whole = Math.max(1, Math.round(decided));
  if (Math.abs(decided / whole - 1) < CADENCE_TOLERANCE) {
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

// The clip's length on this display, to the end of its last frame's refreshes: a whole
// cadence slower than the clip's rate runs longer than its nominal length.
export function clipDurationMs(nFrames, fps, refreshMs) {
  return frameSchedule(nFrames, fps, refreshMs)[nFrames] * refreshMs;
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
// time): the time since then in refreshes, so a thread that missed one shows up as a skipped
// refresh, two animation frames within one refresh (Firefox's software vsync runs some close
// together) count as that one refresh, and a refresh measured twice too long or short still
// plays the clip in its time (counting each step on its own, 16.7-ms steps of a refresh
// measured at 33.4 ms all rounded to 0 and froze the clip on frame 0). lastTime: the latest
// animation frame's (bench/rt_page/pacing.js times the main-thread canvas's draws by it).
export class RefreshClock {
  constructor(refreshMs, firstTime) {
    this.refreshMs = refreshMs;
    this.firstTime = firstTime;
    this.lastTime = firstTime;
    this.refresh = 0;
  }

  tick(time) {
    const elapsed = Math.round((time - this.firstTime) / this.refreshMs);
    this.refresh = Math.max(this.refresh, elapsed);
    this.lastTime = time;
    return this.refresh;
  }
}
