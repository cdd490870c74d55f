// Per-trial accounting of what can spoil a trial: the window losing focus or being hidden,
// leaving fullscreen, and video stalls (waiting/stalled until playing again).

export class TrialMonitor {
  constructor() {
    // document.hasFocus() is false in headless browsers; a blur before the trial already
    // fired, so only what happens from now on (and a hidden page) counts.
    this.focusLost = document.visibilityState === "hidden";
    this.wasFullscreen = Boolean(document.fullscreenElement);
    this.fullscreenExited = false;
    this.stalls = 0;
    this.stallMs = 0;
    this.stallStart = null;
    this.listeners = [];
    this.listen(window, "blur", () => { this.focusLost = true; });
    this.listen(document, "visibilitychange", () => {
      if (document.visibilityState === "hidden") this.focusLost = true;
    });
    this.listen(document, "fullscreenchange", () => {
      if (this.wasFullscreen && !document.fullscreenElement) this.fullscreenExited = true;
    });
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

  finish() {
    if (this.stallStart !== null) {
      this.stallMs += performance.now() - this.stallStart;
      this.stallStart = null;
    }
    for (const [target, type, handler] of this.listeners) target.removeEventListener(type, handler);
    this.listeners = [];
    return {
      focus_lost: this.focusLost,
      fullscreen_exited: this.fullscreenExited,
      stalls: this.stalls,
      stall_ms: this.stallMs,
    };
  }
}
