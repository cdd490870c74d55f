// A clip decoded into one ImageBitmap per frame, in presentation order, before it is shown, so
// that showing frame k is one drawImage on a canvas (static/js/present.js).
//
//   await decodeClip(blob, url, {maxSize, maxBytes, webcodecs})
//     -> {frames, fps, width, height, source, close()}
//     blob: the MP4 file; url: an object URL of it (for the seek route).
//     frames: ImageBitmap[], frame k of the file at index k (a backward trial's file is
//       already reversed, so its frames are shown in file order).
//     source: "webcodecs" (VideoDecoder fed from the MP4 sample table) or "seek" (a hidden
//       <video> seeked to the middle of each frame, for engines without WebCodecs or without
//       this codec in it). Frames larger than maxSize {width, height} are scaled down to it.
//     close(): frees the bitmaps; call it when the trial ends.
//     webcodecs: false forces the seek route (benchmarks and tests of it).
//     Throws ClipTooLarge when the frames would take more than maxBytes, and an Error whose
//     message says what went wrong when the clip cannot be decoded.
import { parseMp4 } from "./mp4.js";

export const DECODE_ERROR = "the clip could not be decoded";
const SEEK_TIMEOUT_MS = 5000;
const PRESENT_WAIT_MS = 500;

export class ClipTooLarge extends Error {}

// The bitmap size: the clip's own, or smaller to fit maxSize (never upscaled: the canvas does).
function bitmapSize(width, height, maxSize) {
  const scale = Math.min(1, maxSize.width / width, maxSize.height / height);
  return { width: Math.max(1, Math.round(width * scale)),
    height: Math.max(1, Math.round(height * scale)) };
}

function toBitmap(source, size, native) {
  if (size.width === native.width && size.height === native.height) {
    return createImageBitmap(source);
  }
  return createImageBitmap(source, { resizeWidth: size.width, resizeHeight: size.height,
    resizeQuality: "high" });
}

function closeAll(frames) {
  for (const frame of frames) frame?.close();
}

async function decoderConfig(track) {
  if (typeof VideoDecoder === "undefined") return null;
  const config = { codec: track.codec, description: track.description,
    codedWidth: track.width, codedHeight: track.height };
  try {
    return (await VideoDecoder.isConfigSupported(config)).supported ? config : null;
  } catch (error) {
    return null;  // a codec string this engine cannot parse: decode by seeking instead
  }
}

// Every coded sample through one VideoDecoder; its outputs come in presentation order, each
// turned into a bitmap and closed at once (decoders stall while their frames are held).
async function decodeWithWebCodecs(buffer, track, config, size) {
  const order = track.samples.map((s) => s.pts).sort((a, b) => a - b);
  const indexOf = new Map(order.map((pts, k) => [Math.round((pts * 1e6) / track.timescale), k]));
  const frames = new Array(order.length);
  const pending = [];
  let failure = null;
  const decoder = new VideoDecoder({
    output: (frame) => {
      const k = indexOf.get(frame.timestamp);
      pending.push(toBitmap(frame, size, track).then((bitmap) => {
        if (k === undefined || frames[k]) bitmap.close();
        else frames[k] = bitmap;
      }).finally(() => frame.close()));
    },
    error: (error) => { failure = error; },
  });
  try {
    decoder.configure(config);
    for (const s of track.samples) {
      decoder.decode(new EncodedVideoChunk({ type: s.key ? "key" : "delta",
        timestamp: Math.round((s.pts * 1e6) / track.timescale),
        duration: Math.round((s.duration * 1e6) / track.timescale),
        data: new Uint8Array(buffer, s.offset, s.size) }));
    }
    await decoder.flush();
  } catch (error) {
    failure = failure || error;
  } finally {
    await Promise.allSettled(pending);
    if (decoder.state !== "closed") decoder.close();
  }
  if (failure || frames.includes(undefined) || frames.length !== order.length) {
    closeAll(frames);
    throw new Error(DECODE_ERROR);
  }
  return frames;
}

// Resolves on the video's `name` event (or at once when `ready()` already holds), rejects on
// an error or after SEEK_TIMEOUT_MS.
function videoEvent(video, name, ready = () => false) {
  if (ready()) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => finish(new Error(DECODE_ERROR)), SEEK_TIMEOUT_MS);
    const onEvent = () => finish(null);
    const onError = () => finish(new Error(DECODE_ERROR));
    function finish(error) {
      clearTimeout(timer);
      video.removeEventListener(name, onEvent);
      video.removeEventListener("error", onError);
      if (error) reject(error); else resolve();
    }
    video.addEventListener(name, onEvent);
    video.addEventListener("error", onError);
  });
}

// Resolves once the video has handed the frame starting at `start` (seconds) to the
// compositor, or after PRESENT_WAIT_MS. After "seeked" an engine may still hold the previous
// frame for a while (Chromium under load gave the last frame as its predecessor), so where
// the engine reports the presented frame's media time (requestVideoFrameCallback) this waits
// for that frame; elsewhere it waits one animation frame.
function presented(video, start, tolerance) {
  if (!video.requestVideoFrameCallback) {
    return new Promise((resolve) => requestAnimationFrame(() => resolve()));
  }
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, PRESENT_WAIT_MS);
    const check = (now, metadata) => {
      if (Math.abs(metadata.mediaTime - start) <= tolerance) {
        clearTimeout(timer);
        resolve();
      } else {
        video.requestVideoFrameCallback(check);
      }
    };
    video.requestVideoFrameCallback(check);
  });
}

// Seeks to the middle of each frame's display interval, where every engine shows that frame.
async function decodeBySeeking(url, track, size) {
  const video = document.createElement("video");
  video.muted = true;
  video.preload = "auto";
  video.src = url;
  const frames = [];
  try {
    // WebKit takes a blank picture of a seek made before the first frame is decoded.
    await videoEvent(video, "loadeddata", () => video.readyState >= 2);
    const order = track.samples.slice().sort((a, b) => a.pts - b.pts);
    for (const sample of order) {
      const seeked = videoEvent(video, "seeked");
      const shown = presented(video, sample.pts / track.timescale,
        sample.duration / 2 / track.timescale);
      video.currentTime = (sample.pts + sample.duration / 2) / track.timescale;
      await Promise.all([seeked, shown]);
      frames.push(await toBitmap(video, size, track));
    }
    return frames;
  } catch (error) {
    closeAll(frames);
    throw error.message === DECODE_ERROR ? error : new Error(DECODE_ERROR);
  } finally {
    video.removeAttribute("src");
    video.load();
  }
}

export async function decodeClip(blob, url, { maxSize, maxBytes = Infinity, webcodecs = true }) {
  const buffer = await blob.arrayBuffer();
  let track;
  try {
    track = parseMp4(buffer);
  } catch (error) {
    throw new Error(DECODE_ERROR);
  }
  if (!track.samples.length) throw new Error(DECODE_ERROR);
  const size = bitmapSize(track.width, track.height, maxSize);
  if (track.samples.length * size.width * size.height * 4 > maxBytes) {
    throw new ClipTooLarge(`${track.samples.length} frames of ${size.width}x${size.height}`);
  }
  const config = webcodecs ? await decoderConfig(track) : null;
  const source = config ? "webcodecs" : "seek";
  const frames = config ? await decodeWithWebCodecs(buffer, track, config, size)
    : await decodeBySeeking(url, track, size);
  return { frames, fps: track.fps, width: size.width, height: size.height, source,
    close: () => closeAll(frames) };
}
