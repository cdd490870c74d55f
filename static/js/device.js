// Browser and device check: desktop with a keyboard, window size, refresh-rate estimate and
// a video playback check.  The numbers go to the server with POST /device.

export const MIN_WINDOW = { w: 800, h: 600 };

// Median frame interval over `frames` animation frames; the median ignores the odd long
// frame (GC, tab switch) that would bias a mean.
export function estimateRefreshHz(frames = 60) {
  return new Promise((resolve) => {
    const stamps = [];
    const step = (t) => {
      stamps.push(t);
      if (stamps.length <= frames) requestAnimationFrame(step);
      else {
        const gaps = stamps.slice(1).map((s, i) => s - stamps[i]).sort((a, b) => a - b);
        const median = gaps[Math.floor(gaps.length / 2)];
        const hz = median > 0 ? 1000 / median : null;
        resolve(hz !== null && hz <= 1000 ? hz : null);  // no display runs faster
      }
    };
    requestAnimationFrame(step);
  });
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

// Phones and tablets are refused; a touchscreen laptop is a desktop (the keyboard check
// that follows makes sure a keyboard is there).  iPadOS passes itself off as a Mac, but a
// Mac has no touch points.
export function isDesktop() {
  const fine = matchMedia("(any-pointer: fine)").matches;
  const mobileUa = /Android|iPhone|iPad|iPod|Mobile/i.test(navigator.userAgent);
  const iPad = /Macintosh/.test(navigator.userAgent) && navigator.maxTouchPoints > 1;
  return !mobileUa && !(iPad && !fine);
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

export function problems(info, { needsVideo = true } = {}) {
  const found = [];
  if (!isDesktop()) found.push("This study needs a desktop or laptop computer with a keyboard.");
  if (info.window_w < MIN_WINDOW.w || info.window_h < MIN_WINDOW.h) {
    found.push(`Please make your browser window at least ${MIN_WINDOW.w} × ${MIN_WINDOW.h} pixels ` +
               `(it is ${info.window_w} × ${info.window_h}).`);
  }
  if (needsVideo && !info.video_check_ok) found.push("Your browser could not play the test video.");
  return found;
}
