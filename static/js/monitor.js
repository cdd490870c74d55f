// Per-trial accounting of what can spoil a trial: the window losing focus or being hidden,
// leaving fullscreen, and video stalls (waiting/stalled until playing again).
//
// The runner starts one monitor per presentation, before the trial type shows anything, so
// that whatever happens during the fixation or while a trial loads counts as much as what
// happens while it waits for the answer; the trial type finishes it once the answer is in.
// `expectFullscreen`: the session runs in fullscreen, so a trial that starts outside it (the
// page left it between trials and the participant could not get back) has already left it.

// A presentation during which the page left fullscreen is a technical event, answered or not
// (experiments/trial_types/base.py): leaving can swallow the answer key (WebKitGTK keeps f and
// F), so a timeout is not the participant's, and an answer after the exit (the second F, a key
// just after Escape) has an RT that includes the exit.  The runner offers such a trial again;
// the kind of event the server expects for a monitor's result, or null.
export function technicalEvent(data) {
  if (!data.fullscreen_exited) return null;
  return data.timed_out ? "fullscreen_exited_timeout" : "fullscreen_exited_answer";
}

// Input a trial took no answer from (a response key before the clip's onset, a click on Done
// in its first moments), stored with the trial as {t_ms, kind}, t_ms from the trial's own zero;
// capped as the server caps it (MAX_IGNORED_INPUTS in experiments/trial_types/base.py).
export const MAX_IGNORED_INPUTS = 100;

export function noteIgnored(list, tMs, kind) {
  if (list.length < MAX_IGNORED_INPUTS) list.push({ t_ms: tMs, kind });
}

export class TrialMonitor {
  constructor({ expectFullscreen = false } = {}) {
    // document.hasFocus() is false in headless browsers; a blur before the trial already
    // fired, so only what happens from now on (and a hidden page) counts.
    this.focusLost = document.visibilityState === "hidden";
    this.wasFullscreen = expectFullscreen || Boolean(document.fullscreenElement);
    this.fullscreenExited = false;
    this.checkFullscreen();
    this.stalls = 0;
    this.stallMs = 0;
    this.stallStart = null;
    this.listeners = [];
    this.result = null;
    this.listen(window, "blur", () => { this.focusLost = true; });
    this.listen(document, "visibilitychange", () => {
      if (document.visibilityState === "hidden") this.focusLost = true;
    });
    this.listen(document, "fullscreenchange", () => this.checkFullscreen());
  }

  checkFullscreen() {
    if (this.wasFullscreen && !document.fullscreenElement) this.fullscreenExited = true;
  }

  listen(target, type, handler) {
    target.addEventListener(type, handler);
    this.listeners.push([target, type, handler]);
  }

  watchVideo(video) {
    const begin = () => {
      if (this.stallStart === null && !video.ended) {
        this.stalls++;
        this.stallStart = performance.now();
      }
    };
    const end = () => {
      if (this.stallStart !== null) {
        this.stallMs += performance.now() - this.stallStart;
        this.stallStart = null;
      }
    };
    // Only stalls after playback started count: the initial load is the preloader's business.
    this.listen(video, "playing", () => {
      end();
      if (!this.armed) {
        this.armed = true;
        this.listen(video, "waiting", begin);
        this.listen(video, "stalled", begin);
      }
    });
    this.listen(video, "timeupdate", end);
  }

  // The trial's record; the first call ends the monitoring, later calls return the same.
  finish() {
    if (this.result) return this.result;
    if (this.stallStart !== null) {
      this.stallMs += performance.now() - this.stallStart;
      this.stallStart = null;
    }
    // An exit whose event has not been dispatched yet (it is queued to the next animation
    // frame) still counts: the page is out of fullscreen now.
    this.checkFullscreen();
    for (const [target, type, handler] of this.listeners) target.removeEventListener(type, handler);
    this.listeners = [];
    this.result = {
      focus_lost: this.focusLost,
      fullscreen_exited: this.fullscreenExited,
      stalls: this.stalls,
      stall_ms: this.stallMs,
    };
    return this.result;
  }
}
