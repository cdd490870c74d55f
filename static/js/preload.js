// Stimulus preloading: a block's clips and frame images are fetched into blobs before the
// block starts, a few requests at a time, each retried with backoff, so that no trial ever
// waits on the network and a clip never stalls mid-playback. The Blob is kept with its object
// URL: the clip presenter decodes it from memory (the page's CSP lets nothing fetch blob: URLs).
import { backoffMs, sleep } from "./api.js";

const CONCURRENCY = 3;
const ATTEMPTS = 6;

const cache = new Map();  // url -> Promise<{blob, objectUrl}>

async function fetchStimulus(url) {
  for (let attempt = 0; ; attempt++) {
    try {
      const response = await fetch(url, { credentials: "same-origin" });
      if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
      const blob = await response.blob();
      return { blob, objectUrl: URL.createObjectURL(blob) };
    } catch (error) {
      if (attempt + 1 >= ATTEMPTS) throw error;
      await sleep(backoffMs(attempt, 300, 5000));
    }
  }
}

export function stimulusUrls(trial) {
  const stimulus = trial.stimulus || {};
  return [stimulus.url, ...(stimulus.frames || [])].filter(Boolean);
}

// Fetches every url with at most `concurrency` requests in flight; resolves when all are in.
export async function preload(urls, { concurrency = CONCURRENCY, onProgress } = {}) {
  const todo = [...new Set(urls)].filter((url) => !cache.has(url));
  let done = urls.length - todo.length;
  const report = () => onProgress && onProgress(done, urls.length);
  report();
  const worker = async () => {
    while (todo.length) {
      const url = todo.shift();
      const promise = fetchStimulus(url);
      cache.set(url, promise);
      try {
        await promise;
      } catch (error) {
        cache.delete(url);  // a later preload may try again
        throw error;
      }
      done++;
      report();
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  await Promise.all(urls.map((url) => cache.get(url)));
}

export function preloadTrials(trials, options) {
  return preload(trials.flatMap(stimulusUrls), options);
}

function cached(url) {
  if (!cache.has(url)) {
    const promise = fetchStimulus(url);
    cache.set(url, promise);
    promise.catch(() => cache.delete(url));
  }
  return cache.get(url);
}

// The blob URL of a preloaded stimulus (fetching it now if it was not preloaded).
export async function blobUrl(url) {
  return (await cached(url)).objectUrl;
}

// The preloaded stimulus itself, for code that reads its bytes.
export async function blobOf(url) {
  return (await cached(url)).blob;
}

export function release(urls) {
  for (const url of urls) {
    const entry = cache.get(url);
    cache.delete(url);
    if (entry) entry.then(({ objectUrl }) => URL.revokeObjectURL(objectUrl), () => {});
  }
}
