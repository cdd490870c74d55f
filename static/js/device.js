// Browser and device check: the study's devices and browsers, fullscreen, window size,
// refresh rate (within the study's range, if it sets one) and a video playback check.  The numbers go to the server with POST /device.

import { measureRefresh } from "./pacing.js";

export const MIN_WINDOW = { w: 800, h: 600 };

// The display's rate, measured as the presenter measures the refresh (pacing.js): a busy main
// thread that misses animation frames must not read a 60-Hz display as 30 Hz, which a study's
// refresh range would then refuse.
export async function estimateRefreshHz(frames = 60) {
  const hz = 1000 / await measureRefresh(frames);
  return hz > 0 && hz <= 1000 ? hz : null;  // no display runs faster
}

// Plays `src` muted and invisible until a frame is presented (or time advances).
// Never visible: the clip may be a stimulus the participant has not seen yet.
export function videoPlaybackCheck(src, timeoutMs = 4000) {
  return new Promise((resolve) => {
    const video = document.createElement("video");
    Object.assign(video, { muted: true, playsInline: true, preload: "auto", src });
    video.className = "offscreen";
    document.body.append(video);
    let finished = false;
    const finish = (ok) => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      video.pause();
      video.removeAttribute("src");
      video.load();
      video.remove();
      resolve(ok);
    };
    const timer = setTimeout(() => finish(video.currentTime > 0), timeoutMs);
    if (video.requestVideoFrameCallback) video.requestVideoFrameCallback(() => finish(true));
    video.addEventListener("timeupdate", () => { if (video.currentTime > 0) finish(true); });
    video.addEventListener("error", () => finish(false));
    video.play().catch(() => finish(false));
  });
}

// A touchscreen laptop is a desktop (the keyboard check that follows makes sure a keyboard is
// there).  iPadOS passes itself off as a Mac, but a Mac has no touch points.
export function deviceKind(ua = navigator.userAgent) {
  const fine = matchMedia("(any-pointer: fine)").matches;
  if (/iPhone|iPod|Android.*Mobile|Mobile.*Firefox|Windows Phone/i.test(ua)) return "phone";
  const iPad = /Macintosh/.test(ua) && navigator.maxTouchPoints > 1 && !fine;
  if (/iPad|Android|Tablet/i.test(ua) || iPad) return "tablet";
  if (/Mobile/i.test(ua)) return "phone";
  // No keyboard-and-mouse pointer at all: a touch-only device whatever it calls itself.
  if (!fine && navigator.maxTouchPoints > 0) return "tablet";
  return "desktop";
}

export function isDesktop() {
  return deviceKind() === "desktop";
}

// The engine, as a study file names browsers: chromium (Chrome, Edge, Opera, ...), firefox,
// webkit (Safari and every iOS browser).
export function browserEngine(ua = navigator.userAgent) {
  if (/Firefox\//.test(ua) && !/Seamonkey/i.test(ua)) return "firefox";
  if (/Chrome\/|Chromium\/|CriOS\/|Edg\//.test(ua) && !/iPhone|iPad/.test(ua)) return "chromium";
  if (/AppleWebKit\//.test(ua)) return "webkit";
  return "other";
}

export function fullscreenAvailable() {
  return Boolean(document.fullscreenEnabled && document.documentElement.requestFullscreen);
}

export async function deviceInfo(videoSrc) {
  return {
    user_agent: navigator.userAgent.slice(0, 500),
    screen_w: screen.width,
    screen_h: screen.height,
    window_w: innerWidth,
    window_h: innerHeight,
    refresh_hz: await estimateRefreshHz(),
    device_pixel_ratio: devicePixelRatio,
    touch: navigator.maxTouchPoints > 0,
    video_check_ok: videoSrc ? await videoPlaybackCheck(videoSrc) : false,
  };
}

// The size the study will run in: the screen where it will go fullscreen (the window before
// fullscreen is smaller by the browser's bars: 657 px of an 800 px laptop screen), else
// the window.  Once in fullscreen the viewport is the screen.
export function expectedSize(info, willBeFullscreen) {
  const full = willBeFullscreen || Boolean(document.fullscreenElement);
  return full ? { w: Math.max(info.window_w, info.screen_w), h: Math.max(info.window_h, info.screen_h) }
    : { w: info.window_w, h: info.window_h };
}

// What the participant has now, after the fullscreen step (granted or refused).
export function windowProblem(min) {
  const size = expectedSize({ window_w: innerWidth, window_h: innerHeight, screen_w: screen.width,
    screen_h: screen.height }, false);
  if (size.w >= min.w && size.h >= min.h) return null;
  return { reason: "window", key: "device_problem_window_fullscreen", fixable: true,
    values: { width: size.w, height: size.h } };
}

const DEFAULT_REQUIREMENTS = { browsers: ["chromium", "firefox", "webkit"], devices: ["desktop"],
  min_window: MIN_WINDOW, fullscreen: true, refresh_hz: { min: null, max: null } };

// What another browser or computer fixes (sessions.py SWITCH_REASONS).
export const SWITCHABLE = ["device", "browser", "fullscreen", "window"];

// What stops this browser from running the study, as {reason, key, values}: `reason` goes to
// the server with a screen-out, `key` names the text that explains it.  Only a small window
// (or a video hiccup) can be fixed on the spot (`fixable`); the others by a switch.
export function problems(info, { needsVideo = true, requirements = DEFAULT_REQUIREMENTS } = {}) {
  const found = [];
  const wanted = { ...DEFAULT_REQUIREMENTS, ...requirements };
  const min = wanted.min_window;
  if (!wanted.devices.includes(deviceKind())) {
    found.push({ reason: "device", key: "device_problem_desktop" });
  }
  if (!wanted.browsers.includes(browserEngine())) {
    found.push({ reason: "browser", key: "device_problem_browser" });
  }
  if (wanted.fullscreen && !fullscreenAvailable()) {
    found.push({ reason: "fullscreen", key: "device_problem_fullscreen" });
  }
  const full = wanted.fullscreen && fullscreenAvailable();
  const size = expectedSize(info, full);
  if (size.w < min.w || size.h < min.h) {
    // Even fullscreen is too small: a larger screen is needed, which no retry here gives.
    found.push({ reason: "window", key: full ? "device_problem_screen" : "device_problem_window",
      fixable: !full, values: { width: size.w, height: size.h } });
  }
  const refresh = wanted.refresh_hz || {};
  const tooSlow = refresh.min != null && !(info.refresh_hz >= refresh.min);
  const tooFast = refresh.max != null && !(info.refresh_hz <= refresh.max);
  if (tooSlow || tooFast) {
    // Fixable here: the display's rate is a setting, and a retry measures it again. A rate
    // the check could not measure (null) is outside any range.
    found.push({ reason: "refresh", key: "device_problem_refresh", fixable: true,
      values: { hz: info.refresh_hz === null ? "?" : Math.round(info.refresh_hz) } });
  }
  if (needsVideo && !info.video_check_ok) {
    found.push({ reason: "video", key: "device_problem_video", fixable: true });
  }
  return found;
}
