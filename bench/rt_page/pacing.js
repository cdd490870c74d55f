// Trial page for bench/frame_pacing.py and tests/browser/test_presentation.py: the same clip
// shown by the <video> element (the runner's presenter before the canvas one: static/js/onset.js),
// by the canvas presenter or by the worker presenter (static/js/present.js), each after a fixation as in a trial, with
// user-timing marks that tie the page clock to a Chromium trace, and the page's own record of
// what it showed when (bench/pacing_reference.py Shown.from_page): the animation-frame time of
// each canvas draw, or every requestVideoFrameCallback of the video.
import { decodeClip } from "/static/js/decode.js";
import { concealVideo, playClip } from "/static/js/onset.js";
import { blobOf, blobUrl, release } from "/static/js/preload.js";
import { measureRefresh, openClip } from "/static/js/present.js";
import "./clock.js";  // window.clockMarks

const FIXATION_MS = 500;
const AFTER_CLIP_MS = 250;  // the last frame stays this long before the stage is cleared
const GRID = 4;  // the test clips' index pattern: 4 x 4 cells
const stageBox = document.getElementById("stage");
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

const STALL_MS = 5000;  // a video whose playback has not moved for this long has stalled

// What a video waited on was doing when the wait ran out.
const mediaState = (v) => `currentTime ${v.currentTime}, duration ${v.duration}, paused `
  + `${v.paused}, ended ${v.ended}, readyState ${v.readyState}, networkState ${v.networkState}`;

function once(video, name, timeoutMs) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${name} event: ${mediaState(video)}`)),
      timeoutMs);
    video.addEventListener(name, () => { clearTimeout(timer); resolve(); }, { once: true });
    video.addEventListener("error", () => reject(new Error("the clip could not be decoded")),
      { once: true });
  });
}

// Resolves once the video has ended; rejects once its playback has not moved for STALL_MS.
// Not a fixed wait of the clip's length plus 5 s, which once gave up on a WebKitGTK trial at
// load 17 without saying why (not seen again): playback that moves, however slowly, is
// waited for, and one that stops is reported with the element's state.
function playedOut(video) {
  return new Promise((resolve, reject) => {
    let timer;
    const finish = () => {
      clearTimeout(timer);
      video.removeEventListener("timeupdate", moved);
      video.removeEventListener("ended", ended);
    };
    const ended = () => { finish(); resolve(); };
    const stalled = () => { finish(); reject(new Error(`the video stalled: ${mediaState(video)}`)); };
    function moved() {
      clearTimeout(timer);
      timer = setTimeout(stalled, STALL_MS);
    }
    video.addEventListener("timeupdate", moved);
    video.addEventListener("ended", ended);
    if (video.ended) ended(); else moved();
  });
}

// [expectedDisplayTime, mediaTime] of every frame the video hands to the compositor.
function recordVideoFrames(video) {
  const frames = [];
  const record = (now, meta) => {
    frames.push([meta.expectedDisplayTime, meta.mediaTime]);
    video.requestVideoFrameCallback(record);
  };
  if ("requestVideoFrameCallback" in video) video.requestVideoFrameCallback(record);
  return frames;
}

// [animation-frame time, frame index] of every draw on the stage's canvas (main thread). The time is the
// presenter's own requestAnimationFrame timestamp: Firefox's document.timeline lags it by up
// to a refresh.
function recordDraws(stage) {
  const draws = [];
  if (!stage.context) return draws;  // the worker presenter keeps its own (stage.draws)
  const { context } = stage;
  const draw = context.drawImage.bind(context);
  context.drawImage = (bitmap, ...rest) => {
    draw(bitmap, ...rest);
    draws.push([stage.clock?.lastTime, stage.clip.frames.indexOf(bitmap)]);
  };
  return draws;
}

window.presentVideo = async (url, label) => {
  const pageRefreshMs = await measureRefresh();
  const video = document.createElement("video");
  video.muted = true;
  video.playsInline = true;
  video.preload = "auto";
  concealVideo(video);
  video.src = await blobUrl(url);
  stageBox.replaceChildren(video);
  await Promise.all([video.readyState >= 2 || once(video, "loadeddata", 5000), sleep(FIXATION_MS)]);
  performance.mark(`trial-start-${label}`);
  const videoFrames = recordVideoFrames(video);
  const onset = await playClip(video, { onFirstFrame: () => performance.mark(`reveal-${label}`) });
  await playedOut(video);
  await sleep(AFTER_CLIP_MS);
  const quality = video.getVideoPlaybackQuality();
  video.pause();
  stageBox.replaceChildren();
  performance.mark(`trial-end-${label}`);
  release([url]);
  // Frame 0 was pre-rolled while concealed: it is shown from the reveal, expected on screen
  // one refresh after the reveal's animation frame (as expectedDisplayTime counts).
  const shownFrom = onset.onset_detail.reveal_frame_time_ms + pageRefreshMs;
  return { ...onset, dropped_frames: quality.droppedVideoFrames,
           total_frames: quality.totalVideoFrames, page_refresh_ms: pageRefreshMs,
           video_frames: [[shownFrom, 0],
                          ...videoFrames.filter(([time]) => time > shownFrom + 1)] };
};

window.presentCanvas = async (url, label, webcodecs = true, presenter = "canvas",
  revealOnTime = true) => {
  const started = performance.now();
  const stage = await openClip(url, { maxSize: { width: 320, height: 240 }, webcodecs,
    presenter, revealOnTime });
  const prepareMs = performance.now() - started;
  const draws = recordDraws(stage);
  stageBox.replaceChildren(stage.element);
  await Promise.all([stage.ready(), sleep(FIXATION_MS - prepareMs)]);
  performance.mark(`trial-start-${label}`);
  const onset = await stage.start({ onFirstFrame: () => performance.mark(`reveal-${label}`) });
  await sleep(onset.onset_time_ms + stage.durationMs + AFTER_CLIP_MS - performance.now());
  const fields = await stage.finish();
  if (stage.draws) draws.push(...stage.draws);
  stage.close();
  stageBox.replaceChildren();
  performance.mark(`trial-end-${label}`);
  release([url]);
  // Frame 0 is drawn ahead, concealed: it is shown from the onset's animation frame.
  const first = onset.onset_detail.first_frame_raf_ms;
  return { ...onset, ...fields, prepare_ms: prepareMs, source: stage.source,
           draws: [[first, 0], ...draws.filter(([time]) => time > first)],
           page_refresh_ms: fields.refresh_ms };
};

// The mean level of each pattern cell's middle, per decoded frame, for the driver to read.
function cellLevels(context, width, height) {
  const levels = [];
  for (let row = 0; row < GRID; row += 1) {
    for (let col = 0; col < GRID; col += 1) {
      const x = Math.floor(((col + 0.5) * width) / GRID) - 2;
      const y = Math.floor(((row + 0.5) * height) / GRID) - 2;
      const { data } = context.getImageData(x, y, 4, 4);
      let sum = 0;
      for (let i = 0; i < data.length; i += 4) sum += (data[i] + data[i + 1] + data[i + 2]) / 3;
      levels.push(sum / 16);
    }
  }
  return levels;
}

window.frameLevels = async (url, webcodecs = true) => {
  const [blob, objectUrl] = await Promise.all([blobOf(url), blobUrl(url)]);
  const unlimited = { width: Infinity, height: Infinity };
  const clip = await decodeClip(blob, objectUrl, { maxSize: unlimited, webcodecs });
  const canvas = new OffscreenCanvas(clip.width, clip.height);
  const context = canvas.getContext("2d", { willReadFrequently: true });
  const levels = clip.frames.map((bitmap) => {
    context.drawImage(bitmap, 0, 0);
    return cellLevels(context, clip.width, clip.height);
  });
  clip.close();
  release([url]);
  return { source: clip.source, fps: clip.fps, width: clip.width, height: clip.height, levels };
};

window.pageReady = true;
