// The JSON API of one participant session (contract: webapp/openapi/participant.json, served
// at /api/openapi.json), and the trial queue that makes sure no trial is lost: every trial
// waits in localStorage until the server acknowledged it, and is retried with exponential
// backoff and jitter.

const RETRY_BASE_MS = 500;
const RETRY_CAP_MS = 20000;
const HEARTBEAT_MS = 15000;

export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.message) || `HTTP ${status}`);
    this.status = status;
    this.body = body || {};
  }
}

// What an error screen shows of ``error``: the API's machine code, never its English message
// (the participant reads the screen in the study's language).
export function errorCode(error) {
  if (!(error instanceof ApiError)) return "client";
  return /^[a-z0-9_]+$/.test(error.body.error || "") ? error.body.error : `http_${error.status}`;
}

// Network failures, timeouts, rate limits and server errors are worth retrying;
// any other 4xx means the request itself is wrong and retrying cannot help.
export function isRetryable(error) {
  if (!(error instanceof ApiError)) return true;
  return error.status >= 500 || error.status === 408 || error.status === 429 || error.status === 0;
}

export function backoffMs(attempt, base = RETRY_BASE_MS, cap = RETRY_CAP_MS) {
  // "Full jitter": spreads the retries of many clients after an outage.
  return Math.random() * Math.min(cap, base * 2 ** attempt);
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Answers that mean this page must stop running the session: another tab took it over, or
// it ended elsewhere (e.g. the researchers stopped the study).
export function isInterruption(error) {
  return error instanceof ApiError && error.status === 409 &&
    (error.body.error === "other_tab" || (error.body.error === "not_in_progress" && error.body.status));
}

export class Api {
  constructor(base, lang = null) {
    this.base = base;
    this.lang = lang;  // the texts' language, as the run page chose it
    // This page's id: the server lets one tab at a time run a session (the one that claimed
    // it last) and refuses the others' writes.
    this.client = uuid4();
  }

  url(method, path) {
    return method === "GET" ? this.base + path : `${this.base}${path}?client=${this.client}`;
  }

  async request(method, path, body) {
    let response;
    try {
      response = await fetch(this.url(method, path), {
        method,
        headers: body === undefined ? {} : { "Content-Type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
        cache: "no-store",
        credentials: "same-origin",
      });
    } catch (networkError) {
      throw new ApiError(0, { error: "network", message: String(networkError) });
    }
    const text = await response.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch { data = { message: text }; }
    if (!response.ok) throw new ApiError(response.status, data);
    return { status: response.status, data };
  }

  // Retries until it succeeds or fails for good (a non-retryable 4xx).
  async requestPatiently(method, path, body, onRetry) {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.request(method, path, body);
      } catch (error) {
        if (!isRetryable(error)) throw error;
        if (onRetry) onRetry(error, attempt);
        await sleep(backoffMs(attempt));
      }
    }
  }

  session() {
    return this.requestPatiently("GET", this.lang ? `?lang=${encodeURIComponent(this.lang)}` : "");
  }
  // `where`: {trial_index, restarted}, where this page goes on (the server keeps it when the
  // claim is a resume).
  claim(where = {}) {
    return this.requestPatiently("POST", "/claim", { client: this.client, ...where });
  }
  consent(consent) { return this.requestPatiently("POST", "/consent", { consent }); }
  device(info) { return this.requestPatiently("POST", "/device", info); }
  switchDevice(reasons) { return this.requestPatiently("POST", "/switch", { reasons }); }
  screenOut(reasons) { return this.requestPatiently("POST", "/screen-out", { reasons }); }
  complete() { return this.request("POST", "/complete", {}); }
  heartbeat() { return this.request("POST", "/heartbeat", {}); }

  beacon(path, body) {
    if (!navigator.sendBeacon) return false;
    return navigator.sendBeacon(this.url("POST", path), JSON.stringify(body));
  }
}

export class TrialQueue {
  constructor(api, token, { onChange, onInterrupt } = {}) {
    this.api = api;
    this.onInterrupt = onInterrupt || (() => {});
    this.key = `chronoscope:queue:${token}`;
    this.rejectedKey = `chronoscope:rejected:${token}`;
    this.onChange = onChange || (() => {});
    this.flushing = null;
    this.waiters = [];
    this.replies = new Map();  // client_uuid -> resolves with the server's reply (this page)
  }

  // localStorage can be full or disabled (private windows): the queue then lives in memory
  // for this page, which still survives network drops, though not a reload.
  pending() {
    try {
      const stored = localStorage.getItem(this.key);
      if (stored !== null) return JSON.parse(stored);
    } catch { /* fall through to memory */ }
    return this.memory || [];
  }

  pendingIndices() { return new Set(this.pending().map((t) => t.trial_index)); }

  save(list) {
    this.memory = list;
    try {
      localStorage.setItem(this.key, JSON.stringify(list));
    } catch (error) {
      try { localStorage.removeItem(this.key); } catch { /* storage unavailable */ }
      console.warn("trial queue kept in memory only:", error);
    }
    this.onChange(list.length);
  }

  // Stored before it is sent, so a crash or reload during the request loses nothing.
  // Resolves with the server's reply once the trial is stored (practice feedback is in it),
  // or with null should it never be (refused, or stored earlier under another uuid).
  push(trial) {
    const reply = new Promise((resolve) => this.replies.set(trial.client_uuid, resolve));
    this.save([...this.pending().filter((t) => t.client_uuid !== trial.client_uuid), trial]);
    this.flush();
    return reply;
  }

  remove(uuid, reply = null) {
    this.save(this.pending().filter((t) => t.client_uuid !== uuid));
    this.replies.get(uuid)?.(reply);
    this.replies.delete(uuid);
  }

  // Kept (not silently dropped) so the data can still be recovered from the browser.
  reject(trial, error) {
    try {
      const rejected = JSON.parse(localStorage.getItem(this.rejectedKey) || "[]");
      rejected.push({ trial, status: error.status, body: error.body });
      localStorage.setItem(this.rejectedKey, JSON.stringify(rejected));
    } catch { /* storage unavailable: the console message below is all that is left */ }
    console.error("trial rejected by the server", trial.trial_index, error.body);
    this.remove(trial.client_uuid);
  }

  flush() {
    if (!this.flushing) {
      this.flushing = this.drain().finally(() => {
        this.flushing = null;
        if (this.pending().length) this.flush();
        else this.waiters.splice(0).forEach((resolve) => resolve());
      });
    }
    return this.flushing;
  }

  async drain() {
    for (let attempt = 0; this.pending().length; ) {
      const trial = this.pending()[0];
      try {
        const { data } = await this.api.request("POST", "/trials", trial);
        this.remove(trial.client_uuid, data);  // 201 stored, or 200 duplicate of the same uuid
        attempt = 0;
      } catch (error) {
        if (isInterruption(error)) {
          // Another tab holds the session: it shares this queue (localStorage) and sends it.
          // An ended session can store nothing more: the trial is kept in this browser only.
          if (error.body.error !== "other_tab") this.reject(trial, error);
          this.onInterrupt(error);
          return;
        } else if (error.status === 409 && error.body.error === "trial_index_taken") {
          // The server already holds this trial_index under another uuid (a trial replayed
          // after a lost acknowledgement): the stored one wins, this copy is redundant.
          this.remove(trial.client_uuid);
        } else if (!isRetryable(error)) {
          this.reject(trial, error);
        } else {
          await sleep(backoffMs(attempt++));
        }
      }
    }
  }

  // Resolves once every queued trial has been acknowledged.
  settled() {
    if (!this.pending().length) return Promise.resolve();
    const done = new Promise((resolve) => this.waiters.push(resolve));
    this.flush();
    return done;
  }

  // The page may be going away: hand everything unacknowledged to the browser, which sends
  // it even after unload. It stays queued; a replay later is answered as a duplicate.
  beaconAll() {
    for (const trial of this.pending()) this.api.beacon("/trials", trial);
  }

  installPageHideFlush() {
    const flushOut = () => this.beaconAll();
    addEventListener("pagehide", flushOut);
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "hidden") flushOut();
      else this.flush();
    });
    addEventListener("online", () => this.flush());
  }
}

export function startHeartbeat(api, onInterrupt, intervalMs = HEARTBEAT_MS) {
  const beat = () => api.heartbeat().catch((error) => { if (isInterruption(error)) onInterrupt(error); });
  beat();
  return setInterval(beat, intervalMs);
}

// crypto.randomUUID exists only in secure contexts (https, localhost); the fallback builds
// the same RFC 4122 version-4 UUID from crypto.getRandomValues.
export function uuid4() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
