// The presenter for clips too large to hold decoded (static/js/present.js openClip): the
// <video> element, as before the canvas presenters, with the stage interface theirs have.
// Frame 0 is revealed and timed by static/js/onset.js playClip; the media pipeline, not the
// display, paces the rest, so the frame counts are null.
import { concealVideo, playClip } from "./onset.js";

function waitLoaded(video) {
  if (video.readyState >= 2) return Promise.resolve();
  return new Promise((resolve, reject) => {
    video.addEventListener("loadeddata", resolve, { once: true });
    video.addEventListener("error", () => reject(new Error("the clip could not be decoded")),
      { once: true });
  });
}

export class VideoStage {
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
      refreshes_per_frame: null, clip_speed: null, presenter: "video",
      dropped_frames: quality ? quality.droppedVideoFrames : null,  // null: browser cannot tell
      total_frames: quality ? quality.totalVideoFrames : null };
  }

  close() {
    this.element.pause();
    this.element.removeAttribute("src");
    this.element.load();
  }
}
