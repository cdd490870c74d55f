// Stimulus preloading: a block's clips and frame images are fetched into blobs before the
// block starts, a few requests at a time, each retried with backoff, so that no trial ever
// waits on the network and a clip never stalls mid-playback.
import { backoffMs, sleep } from "./api.js";

const CONCURRENCY = 3;
const ATTEMPTS = 6;

const cache = new Map();  // url -> Promise<objectURL>

async function fetchBlobUrl(url) {
  for (let attempt = 0; ; attempt++) {
    try {
      const response = await fetch(url, { credentials: "same-origin" });
      if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
      return URL.createObjectURL(await response.blob());
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
      const promise = fetchBlobUrl(url);
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

// The blob URL of a preloaded stimulus (fetching it now if it was not preloaded).
export function blobUrl(url) {
  if (!cache.has(url)) {
    const promise = fetchBlobUrl(url);
    cache.set(url, promise);
    promise.catch(() => cache.delete(url));
  }
  return cache.get(url);
}

export function release(urls) {
  for (const url of urls) {
    const entry = cache.get(url);
    cache.delete(url);
    if (entry) entry.then((u) => URL.revokeObjectURL(u), () => {});
  }
}
