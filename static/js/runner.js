// Chronoscope trial runner: the whole participant session in the browser.
// The page embeds {"token", "api"} in <script id="runner-config">; everything else comes
// from GET /api/session/<token> (contract: webapp/openapi/participant.json, served at
// /api/openapi.json).
import { Api, ApiError, TrialQueue, backoffMs, errorCode, isInterruption, sleep, startHeartbeat,
  uuid4 } from "./api.js";
import * as flow from "./flow.js";
import { preloadTrials, release, stimulusUrls } from "./preload.js";
import { TrialMonitor, technicalEvent } from "./monitor.js";
import { el, setAutoAnswer, setProgress, setScreen, setTexts, show, text, watchConnection }
  from "./screens.js";
import { Simulation } from "./simulate.js";
import { TRIAL_TYPES } from "./trials/index.js";

const FINISHED = new Set(["completed", "failed_attention", "failed_practice", "no_consent"]);
const MAX_COMPLETE_ROUNDS = 5;
const FEEDBACK_WAIT_MS = 5000;
// A trial during which the page left fullscreen is offered again this many times, whether
// it timed out or was answered (monitor.js technicalEvent).  Leaving fullscreen can swallow
// the answer itself (WebKitGTK leaves it on Escape, f and F and never passes the key on), so
// such a timeout says nothing about the participant, and an answer after the exit (the F
// pressed again, a key right after Escape) has an RT that includes the exit.  The bound stops
// a browser that loses fullscreen every time from looping.  The server expects the same
// number (MAX_TECHNICAL_EVENTS = MAX_REOFFERS + 1 in experiments/trial_types/base.py).
export const MAX_REOFFERS = 2;

const isPractice = (trial) => String(trial.block).startsWith("practice");

// Trials still to run: neither stored on the server (as of the last GET) nor done here
// since (waiting in the local queue, or acknowledged after that GET).  Practice comes
// first, so a practice block the server appended after a failed attempt runs before any
// main trial.
export function trialsToRun(session, done) {
  const stored = new Set(session.stored_indices || []);
  const open = session.trials.filter((t) => !stored.has(t.trial_index) && !done.has(t.trial_index));
  return [...open.filter(isPractice), ...open.filter((t) => !isPractice(t))];
}

class SessionRunner {
  constructor(config) {
    this.api = new Api(config.api, config.lang);
    this.token = config.token;
    this.queue = new TrialQueue(this.api, config.token, {
      onChange: (n) => { document.body.dataset.unsent = String(n); },
      onInterrupt: (error) => this.interrupt(error),
    });
    this.simulate = null;
    this.fullscreen = false;  // whether the browser ever granted fullscreen (noteFullscreen)
    this.practiceAttempts = 0;
    this.scheduleChanged = false;  // a trial's reply said so: read the session again
    this.ran = new Set();  // trial indices run on this page since the last GET
    // The trial on screen when the page last went away: shown again, it is stored restarted.
    this.shownKey = `chronoscope:shown:${config.token}`;
    this.interruptedIndex = readStored(this.shownKey);
    // The technical events of the trial on screen, kept until it is stored: a reload must not
    // give a trial fresh re-offers (more looks at the clip, and MAX_REOFFERS dodged).
    this.eventsKey = `chronoscope:events:${config.token}`;
  }

  async refresh() {
    const settled = this.queue.pending().length === 0;
    this.session = (await this.api.session()).data;
    setTexts(this.session.texts, this.session.language, this.session.direction);
    // Once nothing is queued, the server's stored_indices hold every trial run here.
    // (Indices may be renumbered after a failed practice attempt, so forget the old ones.)
    if (settled) this.ran.clear();
    return this.session;
  }

  done() {
    return new Set([...this.ran, ...this.queue.pendingIndices()]);
  }

  async start() {
    const session = await this.refresh();
    await this.claim();  // first: until then another tab may hold the session
    this.queue.installPageHideFlush();
    this.queue.flush();
    this.heartbeat = startHeartbeat(this.api, (error) => this.interrupt(error));
    // Only a session the server made for simulation (development, tests, a researcher's
    // preview) runs the robot: a participant's own link ignores ?simulate=1.  A researcher's
    // click-by-click preview (?manual=1) is a simulated session that a person answers.
    if (session.simulated && !new URLSearchParams(location.search).has("manual")) {
      this.simulate = Simulation.fromUrl(location.search);
      setAutoAnswer(this.simulate);
    }
    if (FINISHED.has(session.status)) return this.finish();
    watchConnection();
    const first = trialsToRun(session, this.done())[0];
    // Warm up during the checks (not an adaptive session's main trials: they wait for answers).
    if (first && !(session.adaptive && !isPractice(first))) {
      preloadTrials(this.blockOf(first)).catch(() => {});
    }
    // Before consent: someone whose device cannot run the study is sent back at once.
    const checked = await flow.deviceCheck(this.api, session);
    if (checked.screenedOut) return this.screenOut(checked);
    if (session.consent !== true) {
      const agreed = await flow.consent(session);
      const { data } = await this.api.consent(agreed);
      if (!agreed) {
        clearInterval(this.heartbeat);
        return flow.completionScreen({ status: "no_consent", ...data });
      }
    }
    const resuming = this.queue.pending().length > 0 || (session.stored_indices || []).length > 0;
    this.guardLeaving();
    await flow.fullscreen();
    // The robot's clicks are no user gesture, so fullscreen never comes for it: no wait.
    const gaveUp = this.simulate ? null : await flow.windowCheck(session);
    if (gaveUp) return this.screenOut(gaveUp);
    this.noteFullscreen();
    await flow.instructions(session, resuming ? this.position() : null);
    if (await this.runAll()) await flow.debrief(session);
    return this.finish();
  }

  // This tab runs the session from now on: the server refuses other tabs' writes, and tabs of
  // this browser hear it at once.
  async claim() {
    await this.api.claim(this.resumePoint());
    if (typeof BroadcastChannel === "undefined") return;
    const channel = new BroadcastChannel(`chronoscope:${this.token}`);
    channel.onmessage = (event) => {
      if (event.data && event.data.claimed !== this.api.client) {
        this.interrupt(new ApiError(409, { error: "other_tab" }));
      }
    };
    channel.postMessage({ claimed: this.api.client });
  }

  // The session moved to another tab or ended elsewhere: stop here, for good.
  interrupt(error) {
    if (this.interrupted) return;
    this.interrupted = true;
    clearInterval(this.heartbeat);
    this.stopGuardingLeaving();
    if (error.body.error === "other_tab") flow.otherTabScreen();
    else flow.completionScreen(error.body);
  }

  // The run of consecutive to-do trials that share the first one's block.
  blockOf(first) {
    const todo = trialsToRun(this.session, this.done());
    const end = todo.findIndex((t) => t.block !== first.block);
    return todo.slice(0, end === -1 ? todo.length : end);
  }

  mainProgress() {
    const main = this.session.trials.filter((t) => !isPractice(t));
    const open = new Set(trialsToRun(this.session, this.done()).map((t) => t.trial_index));
    const blocks = [...new Set(main.map((t) => t.block))];
    const doneBlocks = blocks.filter(
      (b) => main.every((t) => t.block !== b || !open.has(t.trial_index)));
    return { done: main.filter((t) => !open.has(t.trial_index)).length, total: main.length,
      mainBlockCount: blocks.length, mainBlocksDone: doneBlocks.length };
  }

  // Runs every open trial; false when the session ended early (failed practice).
  async runAll() {
    for (let gated = false; ;) {
      const todo = trialsToRun(this.session, this.done());
      if (!todo.length) return true;
      // No main trial before the server passed the practice (a reload can land here with the
      // last practice trials still unacknowledged in the queue).
      if (!isPractice(todo[0]) && this.session.practice_passed !== true && !gated) {
        gated = true;
        if (!(await this.practiceGate())) return false;
        continue;
      }
      const block = this.blockOf(todo[0]);
      // An adaptive session's main trials load one at a time, once the answers before them
      // are stored: the server chooses a trial's level from them (experiments/adaptive.py).
      const oneByOne = this.session.adaptive && !isPractice(block[0]);
      if (!oneByOne) {
        await this.preloadBlock(block);
        this.prefetchAfter(block);
      }
      const progress = this.mainProgress();
      setProgress(progress.done, isPractice(block[0]) ? 0 : progress.total);
      // A block begun before a reload goes on without its intro (the welcome back said where).
      const begun = !isPractice(block[0]) && this.session.trials.some((t) =>
        t.block === block[0].block && !block.some((b) => b.trial_index === t.trial_index));
      if (!begun) {
        await flow.blockIntro(block[0].block, { ...progress, practiceAttempts: this.practiceAttempts,
          practiceRerun: this.session.practice_rerun });
      }
      await flow.enterFullscreen();  // right after the click: it needs the user's gesture
      this.noteFullscreen();
      let shown = 0;
      for (const trial of block) {
        if (oneByOne) {
          await this.queue.settled();
          // An answer that ended its sweep (a stopping rule) skipped the sweep's later trials.
          if (this.scheduleChanged) {
            this.scheduleChanged = false;
            await this.refresh();
          }
          if (!this.session.trials.some((t) => t.trial_index === trial.trial_index)) continue;
        }
        if (shown++) await this.betweenTrials();
        if (oneByOne) await this.preloadBlock([trial]);
        await this.runTrial(trial);
      }
      this.releaseAfter(block);
      if (isPractice(block[0])) {
        if (!(await this.practiceGate())) return false;
        gated = true;
      }
    }
  }

  // Frees a finished block's blobs, except those later trials show again (catch videos).
  releaseAfter(block) {
    const later = new Set(trialsToRun(this.session, this.done()).flatMap(stimulusUrls));
    release(block.flatMap(stimulusUrls).filter((url) => !later.has(url)));
  }

  // The next block loads in the background while this one runs, so a break is never a wait.
  prefetchAfter(block) {
    const inBlock = new Set(block.map((t) => t.trial_index));
    const rest = trialsToRun(this.session, this.done()).filter((t) => !inBlock.has(t.trial_index));
    if (!rest.length) return;
    const end = rest.findIndex((t) => t.block !== rest[0].block);
    preloadTrials(rest.slice(0, end === -1 ? rest.length : end), { concurrency: 1 }).catch(() => {});
  }

  async preloadBlock(trials) {
    for (let attempt = 0; ; attempt++) {
      const bar = el("progress", { id: "preload", max: "1", value: "0" });
      show("loading", el("h1", {}, text("loading_clips")), bar);
      try {
        const onProgress = (done, total) => { bar.max = total; bar.value = done; };
        await preloadTrials(trials, { onProgress });
        return;
      } catch (error) {
        show("loading", el("h1", {}, text(navigator.onLine ? "connection_problem_title" : "offline")),
          el("p", {}, text("connection_retrying")));
        await sleep(1000 + backoffMs(attempt, 1000, 15000));
      }
    }
  }

  // Runs a trial until it has an answer to store: a presentation that left fullscreen, timed
  // out or answered, is recorded as a technical event and the trial offered again (up to
  // MAX_REOFFERS times), once the participant is back in fullscreen; after that it is stored
  // as it ended, with its events, and the server flags it technical.  The events outlive a
  // reload (storedEvents), so the bound holds however often the page is reloaded.
  async runTrial(trial) {
    const type = TRIAL_TYPES[trial.trial_type];
    if (!type) throw new Error(`unknown trial type ${trial.trial_type}`);
    const events = this.storedEvents(trial);
    for (;;) {
      await this.keepFullscreen();
      if (this.interrupted) return;
      setScreen("trial-start");  // the trial names its own screens once it is ready
      document.body.dataset.trialIndex = String(trial.trial_index);
      // From the presentation's first moment (fixation, loading), not only from the clip on:
      // a browser that leaves fullscreen on an early key press swallows that key too.
      const monitor = new TrialMonitor({ expectFullscreen: this.fullscreen });
      writeStored(this.shownKey, String(trial.trial_index));
      let data;
      try {
        data = await type.run(trial, { session: this.session, simulate: this.simulate, monitor });
      } finally {
        monitor.finish();
      }
      if (this.interrupted) return;  // answered after the session left this tab: not sent
      const kind = technicalEvent(data);
      if (!kind) return this.storeWithFeedback(trial, type, { ...data, technical_events: events });
      events.push({ kind, presentation: events.length + 1 });
      writeStored(this.eventsKey, JSON.stringify({ trial_index: trial.trial_index, events }));
      if (events.length > MAX_REOFFERS) return this.store(trial, { ...data, technical_events: events });
      await flow.backToFullscreen();
      if (this.interrupted) return;
    }
  }

  // The events of `trial` recorded before the page was reloaded (none for any other trial).
  storedEvents(trial) {
    let saved;
    try { saved = JSON.parse(readStored(this.eventsKey)); } catch { return []; }
    if (!saved || saved.trial_index !== trial.trial_index || !Array.isArray(saved.events)) return [];
    return saved.events.slice(0, MAX_REOFFERS);
  }

  // The study's blank gap between the trials of a block (timing.inter_trial_ms).
  async betweenTrials() {
    if (!this.session.inter_trial_ms) return;
    show("gap");
    await sleep(this.session.inter_trial_ms);
  }

  // Once the browser granted fullscreen, the session runs in it: a block that could not enter
  // it (a reload lost the gesture) still expects it, and asks before its first trial.
  noteFullscreen() {
    this.fullscreen = Boolean(this.fullscreen || document.fullscreenElement);
  }

  // Before each presentation: a page that left fullscreen since the last trial (a key during
  // feedback or the gap, which no trial's monitor saw) asks the participant back first, as
  // at a block start.  Should the browser refuse, the trial starts counted as out of
  // fullscreen (TrialMonitor), so it is offered again up to MAX_REOFFERS times.
  async keepFullscreen() {
    if (!this.fullscreen || document.fullscreenElement) return;
    await flow.fullscreen();
  }

  // Where this page goes on, for the server's record of a resume: the trial that was on screen
  // when the page last went away (shown again from its start), else the next one to run.
  resumePoint() {
    const next = trialsToRun(this.session, this.done())[0];
    const stored = new Set(this.session.stored_indices || []);
    const interrupted = this.session.trials.find((t) =>
      String(t.trial_index) === this.interruptedIndex)?.trial_index ?? null;
    if (interrupted !== null && !stored.has(interrupted)) {
      return { trial_index: interrupted, restarted: true };
    }
    return { trial_index: next ? next.trial_index : null, restarted: false };
  }

  // A practice trial's feedback is the server's verdict on the stored answer, in the reply to
  // its POST: the browser is never sent the answer.  The feedback screen shows at once, as
  // before, and its words once the reply is in; after FEEDBACK_WAIT_MS without one (the
  // connection is down: the queue keeps retrying) the session goes on without them.
  async storeWithFeedback(trial, type, data) {
    const reply = this.store(trial, data);
    if (!trial.params?.feedback) return;
    show("feedback");
    const answer = await Promise.race([reply, sleep(FEEDBACK_WAIT_MS)]);
    await type.feedback(data, answer?.feedback ?? null);
  }

  // Queues the trial; resolves with the server's reply once it is stored (api.js).
  store(trial, data) {
    const restarted = String(trial.trial_index) === this.interruptedIndex;
    const reply = this.queue.push({ client_uuid: uuid4(), trial_index: trial.trial_index, ...data,
      ...(restarted ? { restarted: true } : {}) });
    reply.then((answer) => { if (answer?.schedule_changed) this.scheduleChanged = true; });
    writeStored(this.shownKey, null);
    writeStored(this.eventsKey, null);
    this.ran.add(trial.trial_index);
    const progress = this.mainProgress();
    setProgress(progress.done, isPractice(trial) ? 0 : progress.total);
    return reply;
  }

  // Where a participant back after a reload goes on: main block and trial within it (none
  // while practice is still ahead).
  position() {
    const next = trialsToRun(this.session, this.done())[0];
    if (!next || isPractice(next)) return { practice: true };
    const main = this.session.trials.filter((t) => !isPractice(t));
    const blocks = [...new Set(main.map((t) => t.block))];
    const inBlock = main.filter((t) => t.block === next.block);
    return { block: blocks.indexOf(next.block) + 1, blocks: blocks.length,
      trial: inBlock.findIndex((t) => t.trial_index === next.trial_index) + 1 };
  }

  // The device check failed: the server ends the session and gives the screen-out code.
  async screenOut({ screenedOut, found }) {
    const { data } = await this.api.screenOut(screenedOut);
    clearInterval(this.heartbeat);
    return flow.completionScreen(data, found);
  }

  // Leaving mid-session asks first; once the session ended, nothing holds the page.
  guardLeaving() {
    this.onLeave = (event) => {
      event.preventDefault();
      event.returnValue = flow.leavePrompt();
      return event.returnValue;
    };
    addEventListener("beforeunload", this.onLeave);
  }

  stopGuardingLeaving() {
    if (this.onLeave) removeEventListener("beforeunload", this.onLeave);
    this.onLeave = null;
  }

  // The server decides the practice gate from the stored practice trials.
  async practiceGate() {
    show("saving", el("h1", {}, text("saving")));
    await this.queue.settled();
    const session = await this.refresh();
    // Failed, or every practice trial technical (the browser could not measure: screened out).
    if (FINISHED.has(session.status) || session.status === "screened_out") return false;
    // A failed attempt with attempts left: the server appended a new practice block.
    if (trialsToRun(session, this.done()).some(isPractice)) this.practiceAttempts++;
    return true;
  }

  // Asks the server to close the session; only its 200 (every trial stored) leads to the code.
  async finish() {
    show("saving", el("h1", {}, text("saving_answers")), el("p", {}, text("keep_page_open")));
    for (let round = 0, attempt = 0; round < MAX_COMPLETE_ROUNDS; ) {
      await this.queue.settled();
      try {
        const { data } = await this.api.complete();
        clearInterval(this.heartbeat);  // the session is over; "last seen" stays its end
        this.stopGuardingLeaving();
        return flow.completionScreen(data);
      } catch (error) {
        if (isInterruption(error)) {
          return this.interrupt(error);
        } else if (error instanceof ApiError && error.status === 409 && error.body.missing) {
          round++;  // trials the server lacks and we no longer hold: run them again
          await this.refresh();
          await this.runAll();
        } else if (!(error instanceof ApiError) || error.status === 0 || error.status >= 500) {
          await sleep(backoffMs(attempt++, 1000, 15000));
        } else {
          return flow.errorScreen("error_reload", { code: errorCode(error) });
        }
      }
    }
    return flow.errorScreen("error_unsaved");
  }
}

// localStorage may be unavailable (private windows): then a reload just is not noticed.
function readStored(key) {
  try { return localStorage.getItem(key); } catch { return null; }
}

function writeStored(key, value) {
  try {
    if (value === null) localStorage.removeItem(key);
    else localStorage.setItem(key, value);
  } catch { /* storage unavailable */ }
}

async function main() {
  const config = JSON.parse(document.getElementById("runner-config").textContent);
  const runner = new SessionRunner(config);
  window.chronoscope = runner;  // for the console and the browser tests
  try {
    await runner.start();
  } catch (error) {
    if (isInterruption(error)) return runner.interrupt(error);
    if (error instanceof ApiError && ["study_full", "study_closed"].includes(error.body.error)) {
      return flow.notTakingScreen(error.body.error);
    }
    console.error(error);
    flow.errorScreen("error_reload", { code: errorCode(error) });
  }
}

// Only on the runner page: elsewhere (tests, the console) the module just exports.
if (document.getElementById("runner-config")) main();
