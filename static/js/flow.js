// The screens of the session outside the trials: device check (before consent), consent,
// fullscreen, instructions, block breaks, debrief, the endings and the redirect countdown.
// Every word comes from the session's texts by key (screens.js text()).
import { SWITCHABLE, deviceInfo, problems, windowProblem } from "./device.js";
import { blobUrl } from "./preload.js";
import { button, el, localTimeNode, message, paragraphs, plain, show, showFinal, text,
  waitForButton, waitForKey } from "./screens.js";
import { TRIAL_TYPES } from "./trials/index.js";

// Seconds before an ending sends the participant back to the recruitment site; longer when
// there is a next session to note down and its calendar file to save.
export const REDIRECT_S = 10;
export const NEXT_SESSION_REDIRECT_S = 60;

export async function consent(session) {
  show("consent", el("h1", {}, text("consent_title")), ...consentParagraphs(session),
    el("div", { class: "buttons" },
      button("consent-yes", text("consent_yes")), button("consent-no", text("consent_no"))));
  return (await waitForButton(["consent-yes", "consent-no"])) === "consent-yes";
}

// The consent, with the note of a study's sessions on different days before its last
// paragraph (the question "Do you consent?"), not after it.
function consentParagraphs(session) {
  const [body] = paragraphs(["consent"]);
  if (session.sessions <= 1) return [body];
  const [note] = paragraphs(["consent_sessions"]);
  const blocks = body.querySelectorAll(":scope>p");
  if (blocks.length < 2) return [body, note];
  blocks[blocks.length - 1].before(note);
  return [body];
}

function firstClipUrl(session) {
  const trial = session.trials.find((t) => t.stimulus && t.stimulus.url);
  return trial ? trial.stimulus.url : null;
}

// Runs until the device passes (resolves with the info sent to the server) or the participant
// is screened out (resolves with {screenedOut: reasons}).  A phone, a browser the study does
// not allow or one without fullscreen cannot be fixed here, but in another browser or on
// another computer: the participant is asked to switch, and continues there with the same
// id (switchDevice); only one who cannot is screened out.  A small window is fixed here.
export async function deviceCheck(api, session) {
  for (;;) {
    show("device", el("h1", {}, text("device_check_title")), el("p", {}, text("device_check_wait")));
    const clip = firstClipUrl(session);
    const info = await deviceInfo(clip ? await blobUrl(clip) : null);
    await api.device(info);
    // A session without clips (frame ordering without catch videos) plays no video.
    const found = problems(info, { needsVideo: Boolean(clip), requirements: session.requirements });
    if (!found.length) {
      show("keyboard-check", el("h1", {}, text("keyboard_check_title")),
        el("p", {}, text("keyboard_check")));
      await waitForKey([" "]);
      return info;
    }
    const reasons = found.map((problem) => problem.reason);
    if (!found.every((problem) => problem.fixable)) return switchDevice(api, found);
    show("device-problem", el("h1", {}, text("device_problem_title")),
      ...paragraphs(found.map((problem) => [problem.key, problem.values || {}])),
      el("div", { class: "buttons" }, button("device-retry", text("device_retry")),
        button("device-give-up", text("device_give_up"))));
    if ((await waitForButton(["device-retry", "device-give-up"])) === "device-give-up") {
      return { screenedOut: reasons, found };
    }
  }
}

// Asks the participant to open the same link in another browser or on another computer,
// where the same id continues (the server hands the session to the next browser that enters
// with it); only "I cannot switch" ends the session here, with the screen-out code.
async function switchDevice(api, found) {
  const reasons = found.map((problem) => problem.reason);
  await api.switchDevice(reasons.filter((reason) => SWITCHABLE.includes(reason)));
  show("device-switch", el("h1", {}, text("device_switch_title")),
    ...paragraphs([...found.map((problem) => [problem.key, problem.values || {}]), "device_switch"]),
    el("div", { class: "buttons" }, button("device-give-up", text("device_switch_give_up"))));
  await waitForButton(["device-give-up"]);
  return { screenedOut: reasons, found };
}

// After the fullscreen step: a browser that refused fullscreen (or left it) runs the study in
// its window, which must then be large enough; going fullscreen fixes it, as does a larger
// window.  Until then no trial starts.  Before any trial is stored the participant may give
// up instead (the screen-out code and URL); resolves with that screen-out, or nothing.
export async function windowCheck(session) {
  const canGiveUp = session.next_trial_index === 0;
  for (let problem; (problem = windowProblem(session.requirements.min_window)); ) {
    show("window-problem", el("h1", {}, text("device_problem_title")),
      ...paragraphs([[problem.key, problem.values]]),
      el("div", { class: "buttons" }, button("window-retry", text("window_retry")),
        ...(canGiveUp ? [button("window-give-up", text("device_give_up"))] : [])));
    if ((await waitForButton(["window-retry", "window-give-up"])) === "window-give-up") {
      return { screenedOut: [problem.reason], found: [problem] };
    }
    await enterFullscreen();  // right after the click: it needs the user's gesture
  }
  return null;
}

export async function enterFullscreen() {
  if (document.fullscreenElement || !document.documentElement.requestFullscreen) return;
  try {
    await document.documentElement.requestFullscreen({ navigationUI: "hide" });
  } catch {
    // Refused (no user gesture, or a browser that forbids it): the study still runs, and
    // every trial records whether it was in fullscreen.
  }
}

export async function fullscreen() {
  show("fullscreen", el("h1", {}, text("fullscreen_title")), el("p", {}, text("fullscreen")),
    button("fullscreen-go", text("fullscreen_button")));
  await waitForButton(["fullscreen-go"]);
  await enterFullscreen();
}

// After a trial during which the page left fullscreen: leaving it may have taken the answer
// key with it (or timed an answer across the exit), so the same trial runs again once the
// participant is back.
export async function backToFullscreen() {
  show("fullscreen-lost", el("h1", {}, text("fullscreen_lost_title")),
    ...paragraphs(["fullscreen_lost"]),
    button("fullscreen-return", text("fullscreen_return_button")));
  document.getElementById("fullscreen-return").focus();
  await waitForButton(["fullscreen-return"]);
  await enterFullscreen();  // right after the click: it needs the user's gesture
}

// The session's task (its design's trial type) says its part (its module's instructions),
// then the attention-check note.  Not the trials' types: catch videos are presented as clips
// whatever the task, so they would bring in the clip task's paragraphs.  A participant back
// after a reload is told where they are; the practice note only while practice is ahead.
export async function instructions(session, position) {
  const keys = [];
  if (position && position.block) keys.push(["welcome_back_position", position]);
  else if (position) keys.push("welcome_back");
  keys.push(...TRIAL_TYPES[session.task].instructions(session));
  if (session.attention_checks) keys.push("instructions_attention");
  if (!position || position.practice) keys.push("instructions_practice");
  await message("instructions", position ? "welcome_back_title" : "instructions_title", keys,
    "start_button");
}

export async function blockIntro(block, state) {
  if (block.startsWith("practice")) {
    // Again after an attempt the browser could not measure: said as such, never as a failure.
    const again = state.practiceAttempts > 0 &&
      (state.practiceRerun === "technical" ? "practice_technical" : "practice_again");
    await message("block-intro", again ? `${again}_title` : "practice_title",
      [again || "practice_intro"], "practice_button");
  } else if (state.mainBlocksDone === 0) {
    await message("block-intro", "main_title", [["main_intro", { n: state.mainBlockCount }]],
      "start_button");
  } else {
    await message("break", "break_title",
      [["break", { block: state.mainBlocksDone, n: state.mainBlockCount }]], "continue_button");
  }
}

// The full debrief, with what the study is about, only after the last session: told
// earlier, it would change how a participant answers in the next one.
export async function debrief(session) {
  const { session_number: number, sessions } = session;
  if (number < sessions) {
    await message("debrief", "session_end_title", [["session_end", { session: number, sessions }]],
      "session_end_button");
  } else {
    await message("debrief", "debrief_title", ["debrief"], "debrief_button");
  }
}

const TITLES = {
  completed: "done_completed_title",
  failed_attention: "done_failed_attention_title",
  failed_practice: "done_failed_practice_title",
  no_consent: "done_no_consent_title",
  stopped: "done_stopped_title",
  screened_out: "screen_out_title",
};
// What an early ending says, in plain words, before the code and the countdown.
const EXPLANATIONS = {
  failed_attention: "ended_failed_attention",
  failed_practice: "ended_failed_practice",
  stopped: "done_stopped",
};

// The end of the session: why (for an early ending), when the next session opens (a
// completed session with another to come), the code, and a visible countdown before the
// redirect to the recruitment site.  `found`: a screen-out's problems, to say why.
export function completionScreen(result, found = []) {
  const status = result.status || "";
  const next = status === "completed" ? result.next_session : null;
  const nodes = [el("h1", {}, next
    ? text("next_session_title", { session: next.session - 1, sessions: next.sessions })
    : text(TITLES[status] || "done_default_title"))];
  if (next) {
    nodes.push(...nextSession(next));
  } else if (status === "screened_out") {
    const reasons = document.createDocumentFragment();
    found.forEach((p, i) => reasons.append(...(i ? [el("br")] : []), text(p.key, p.values || {})));
    const code = result.completion_code || "";
    nodes.push(el("div", { class: "why" }, text("screen_out", { code }, { reasons })));
  } else if (EXPLANATIONS[status]) {
    nodes.push(el("p", { class: "why" }, text(EXPLANATIONS[status])));
  }
  if (result.completion_code) {
    const code = el("p", { id: "completion-code", class: "code" }, result.completion_code);
    nodes.push(el("p", {}, text(status === "screened_out" ? "screen_out_code_label" : "completion_code_label")),
      code, copyButton(code));
  }
  if (result.redirect_url) {
    const link = el("a", { id: "redirect", href: result.redirect_url }, text("redirect_link"));
    const countdown = el("p", { id: "countdown", role: "timer" });
    nodes.push(countdown, el("p", {}, link));
    countDown(countdown, next ? NEXT_SESSION_REDIRECT_S : REDIRECT_S,
      () => location.assign(result.redirect_url));
  }
  showFinal("done", ...nodes);
  document.body.dataset.status = status;
}

// Copies the code; where the clipboard is refused (no permission, an older browser, a page
// not served over https) the code is selected instead and the participant is told to copy it.
function copyButton(code) {
  const copy = button("copy-code", text("copy_code_button"));
  const said = el("span", { id: "copy-code-status", role: "status" });
  copy.addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText(code.textContent);
      said.replaceChildren(text("copy_code_done"));
      copy.dataset.copied = "clipboard";
    } catch {
      getSelection().selectAllChildren(code);
      said.replaceChildren(text("copy_code_selected"));
      copy.dataset.copied = "selected";
    }
  });
  return el("p", {}, copy, " ", said);
}

// When the next session opens, in the participant's own time zone and language, how they
// will be invited, and the session's calendar file (in the same language).
function nextSession(next) {
  const lang = encodeURIComponent(document.documentElement.lang || "");
  const calendar = el("a", { id: "calendar-link", href: `${next.calendar_url}?lang=${lang}`,
    download: "" }, text("next_session_calendar"));
  return [el("div", { id: "next-session" }, text("next_session", { next_session: next.session },
    { opens_at: localTimeNode(next.opens_at) })), el("p", {}, calendar)];
}

function countDown(node, seconds, then) {
  let left = seconds;
  const tick = () => {
    node.replaceChildren(text("redirect_countdown", { seconds: left }));
    node.dataset.seconds = String(left);
    if (left-- <= 0) return then();
    setTimeout(tick, 1000);
  };
  tick();
}

// The study filled up or closed while this participant read the consent form.
export function notTakingScreen(key) {
  showFinal("not-taking", el("h1", {}, text("not_available_title")), el("p", {}, text(key)),
    el("p", {}, text("not_available_return")));
}

// Another tab or window took the session over; this one stops until the participant
// chooses to continue here (a reload claims the session back).
export function otherTabScreen() {
  const again = button("continue-here", text("other_tab_button"));
  again.addEventListener("click", () => location.reload());
  showFinal("other-tab", el("h1", {}, text("other_tab_title")), el("p", {}, text("other_tab")),
    again);
}

// `key` names the text; `values` fill its placeholders (e.g. the error's {code}).
export function errorScreen(key, values = {}) {
  show("error", el("h1", {}, text("error_title")), el("p", {}, text(key, values)));
}

// The prompt a browser shows when the participant leaves mid-session (its own wording; the
// text is for the few browsers that still show ours).
export function leavePrompt() {
  return plain("leave_warning");
}
