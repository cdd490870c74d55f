// Per-trial accounting of what can spoil a trial: the window losing focus or being hidden,
// leaving fullscreen, and video stalls (waiting/stalled until playing again).
//
// The runner starts one monitor per presentation, before the trial type shows anything, so
// that whatever happens during the fixation or while a trial loads counts as much as what
// happens while it waits for the answer; the trial type finishes it once the answer is in.
// `expectFullscreen`: the session runs in fullscreen, so a trial that starts outside it (the
// page left it between trials and the participant could not get back) has already left it.

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
