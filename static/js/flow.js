// The screens of the session outside the trials: consent, device check, fullscreen,
// instructions, block breaks, debrief and the completion code.
import { deviceInfo, problems } from "./device.js";
import { blobUrl } from "./preload.js";
import { button, el, message, paragraphs, show, showFinal, waitForButton, waitForKey } from "./screens.js";
import { TRIAL_TYPES } from "./trials/index.js";

export async function consent() {
  show("consent",
    el("h1", {}, "Consent"),
    ...paragraphs([
      "In this study you will watch short video clips and judge whether each one plays forwards " +
      "or backwards in time, or put still frames into the order in which they happened.",
      "It takes about 15 minutes. Your answers and response times are stored with a random " +
      "identifier, never with your name. You may stop at any time by closing this window.",
      "Do you consent to take part?",
    ]),
    el("div", { class: "buttons" },
      button("consent-yes", "I consent"), button("consent-no", "I do not consent")));
  return (await waitForButton(["consent-yes", "consent-no"])) === "consent-yes";
}

function firstClipUrl(session) {
  const trial = session.trials.find((t) => t.stimulus && t.stimulus.url);
  return trial ? trial.stimulus.url : null;
}

// Repeats until the device passes; returns the info that was sent to the server.
export async function deviceCheck(api, session) {
  for (;;) {
    show("device", el("h1", {}, "Checking your browser"), el("p", {}, "One moment…"));
    const clip = firstClipUrl(session);
    const info = await deviceInfo(clip ? await blobUrl(clip) : null);
    await api.device(info);
    // A session without clips (frame ordering without catch videos) plays no video.
    const found = problems(info, { needsVideo: Boolean(clip) });
    if (!found.length) {
      show("keyboard-check", el("h1", {}, "Keyboard check"),
        el("p", {}, "Please press the SPACE bar on your keyboard."));
      await waitForKey([" "]);
      return info;
    }
    show("device-problem", el("h1", {}, "Your setup needs a change"), ...paragraphs(found),
      button("device-retry", "Check again"));
    await waitForButton(["device-retry"]);
  }
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
  show("fullscreen", el("h1", {}, "Fullscreen"),
    el("p", {}, "The study runs in fullscreen so that nothing distracts you. Click the button to switch."),
    button("fullscreen-go", "Go fullscreen"));
  await waitForButton(["fullscreen-go"]);
  await enterFullscreen();
}

// After a trial that timed out once the page had left fullscreen: leaving it may have taken
// the answer key with it, so the same trial runs again once the participant is back.
export async function backToFullscreen() {
  show("fullscreen-lost", el("h1", {}, "Back to fullscreen"),
    ...paragraphs([
      "The study left fullscreen during the last trial, so your answer may not have reached us.",
      "Please return to fullscreen: the same trial then starts again.",
    ]),
    button("fullscreen-return", "Return to fullscreen and continue"));
  document.getElementById("fullscreen-return").focus();
  await waitForButton(["fullscreen-return"]);
  await enterFullscreen();  // right after the click: it needs the user's gesture
}

// Each trial type in the session says its own part (its module's instructions); the
// attention-check note follows the first type's part: attention checks are catch videos, shown
// as clip trials, which come first in the registry.
export async function instructions(session, resuming) {
  const present = new Set(session.trials.map((t) => t.trial_type));
  const [first = [], ...rest] = Object.values(TRIAL_TYPES)
    .filter((type) => present.has(type.name)).map((type) => type.instructions(session));
  const texts = [];
  if (resuming) texts.push("Welcome back. You continue where you left off; nothing you answered was lost.");
  texts.push(...first);
  if (session.attention_checks) {
    texts.push("Now and then a short video tells you which key to press: please press exactly that key.");
  }
  texts.push(...rest.flat());
  texts.push("You start with a few practice trials that tell you whether you were right.");
  await message("instructions", resuming ? "Welcome back" : "Instructions", texts, "Start");
}

export async function blockIntro(block, state) {
  if (block.startsWith("practice")) {
    const again = state.practiceAttempts > 0;
    await message("block-intro", again ? "Practice again" : "Practice",
      [again ? "Your practice accuracy was a little low. Let's practise once more." :
        "First, a few practice trials with feedback."], "Start practice");
  } else if (state.mainBlocksDone === 0) {
    await message("block-intro", "The main task",
      ["Well done. The main task starts now. You will not get feedback any more.",
        `There are ${state.mainBlockCount} blocks with a short break between them.`], "Start");
  } else {
    await message("break", "Break",
      [`You finished block ${state.mainBlocksDone} of ${state.mainBlockCount}. Take a short break.`,
        "Continue when you are ready."], "Continue");
  }
}

export async function debrief() {
  await message("debrief", "Thank you!", [
    "This study is about how people perceive the direction of time in video: which cues tell us that " +
    "a clip runs backwards, and how well people order moments of an event. Your answers will be " +
    "compared with those of computer vision models shown the same clips.",
    "Please do not tell other possible participants what the study is about.",
  ], "Finish and get my completion code");
}

export function completionScreen(result) {
  const titles = {
    completed: "All done — thank you!",
    failed_attention: "Thank you for taking part",
    failed_practice: "Thank you for taking part",
    no_consent: "You did not consent",
    stopped: "The researchers have stopped this study",
  };
  const nodes = [el("h1", {}, titles[result.status] || "Session finished")];
  if (result.status === "stopped") nodes.push(el("p", {}, "The answers you gave are saved."));
  if (result.completion_code) {
    nodes.push(el("p", {}, "Your completion code:"),
      el("p", { id: "completion-code", class: "code" }, result.completion_code));
  }
  if (result.redirect_url) {
    const link = el("a", { id: "redirect", href: result.redirect_url }, "Return to the recruitment site");
    nodes.push(el("p", {}, link));
    setTimeout(() => location.assign(result.redirect_url), 5000);
  }
  showFinal("done", ...nodes);
  document.body.dataset.status = result.status || "";
}

// The study filled up or closed while this participant read the consent form.
export function notTakingScreen(text) {
  showFinal("not-taking", el("h1", {}, "This study is not available"), el("p", {}, text),
    el("p", {}, "If you came from a recruitment site, please return the study there."));
}

// Another tab or window took the session over; this one stops until the participant
// chooses to continue here (a reload claims the session back).
export function otherTabScreen() {
  const again = button("continue-here", "Continue here instead");
  again.addEventListener("click", () => location.reload());
  showFinal("other-tab", el("h1", {}, "This study is open in another tab or window"),
    el("p", {}, "Please continue there and close this one. Your answers so far are saved."), again);
}

export function errorScreen(text) {
  show("error", el("h1", {}, "Something went wrong"), el("p", {}, text));
}
