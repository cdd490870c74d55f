// Frame-ordering trial (EGO-FLIGHT style): N shuffled frames to be put in chronological order
// by drag (mouse or touch, SortableJS in swap mode) or by keyboard (select with Space/Enter,
// move with the arrow keys).  Hint frames sit in their true slot and cannot move.
// Every image is fully decoded before the frames appear, so the RT clock starts on a
// complete display.  The module is the whole browser side of the type: see trials/index.js.
import { noteIgnored } from "../monitor.js";
import { blobUrl } from "../preload.js";
import { sleep } from "../api.js";
import { button, el, nextFrame, plain, show, text } from "../screens.js";

const MAX_MOVES = 500;
// Clicks on Done in the first MIN_INPUT_MS after the frames appear are ignored and recorded:
// they were meant for what was on screen before (the second click of a double-click on the
// previous trial's Done lands here).  300 ms is below any considered ordering response.
// The guard is visible (Done is greyed out until it ends), and an early click is never lost
// silently: it is recorded, and the participant is told it came too early (#order-done-early)
// instead of waiting out the trial's time limit.  It is not taken as the answer once the
// guard ends: a double-click's stray second click would then answer a trial unseen.
// The server refuses an answer sooner or an ignored click later (DONE_GUARD_MS in
// experiments/trial_types/frame_order.py: keep the two equal).
export const MIN_INPUT_MS = 300;

// Slot order shown first: the server's permutation, with every hint frame moved to its own
// position (a hint is a frame already in the right place).
export function initialOrder(presented, hints) {
  const hinted = new Set(hints);
  const free = presented.filter((p) => !hinted.has(p));
  return presented.map((_, slot) => (hinted.has(slot) ? slot : free.shift()));
}

async function decodedImage(url, position) {
  const img = new Image();
  img.src = await blobUrl(url);
  img.alt = plain("order_frame_alt", { n: position + 1 });
  img.draggable = false;
  await img.decode();
  return img;
}

class OrderBoard {
  constructor(list, order, hints) {
    this.list = list;
    this.hints = new Set(hints);
    this.moves = [];
    this.grabbed = null;
    this.shownAt = null;
    this.lastPointer = "mouse";
    this.initial = order;
  }

  items() { return [...this.list.children]; }
  order() { return this.items().map((item) => Number(item.dataset.position)); }

  record(from, to, via) {
    if (from === to || this.moves.length >= MAX_MOVES) return;
    this.moves.push({ t_ms: performance.now() - this.shownAt, from, to, via });
  }

  // Swaps the items in two slots (hint slots never take part).
  swap(from, to) {
    const items = this.items();
    const [a, b] = [items[from], items[to]];
    const marker = document.createElement("li");
    this.list.replaceChild(marker, a);
    this.list.replaceChild(a, b);
    this.list.replaceChild(b, marker);
  }

  // The nearest movable slot from `slot` in direction `step`, or null.
  neighbour(slot, step) {
    const items = this.items();
    for (let s = slot + step; s >= 0 && s < items.length; s += step) {
      if (!this.hints.has(Number(items[s].dataset.position))) return s;
    }
    return null;
  }

  enableDrag() {
    this.list.addEventListener("pointerdown", (event) => {
      this.lastPointer = event.pointerType === "touch" ? "touch" : "mouse";
    });
    this.sortable = new window.Sortable(this.list, {
      swap: true,
      swapClass: "swap-target",
      animation: 120,
      filter: ".hint",
      draggable: ".frame:not(.hint)",
      onMove: (event) => !event.related.classList.contains("hint"),
      onEnd: (event) => this.record(event.oldIndex, event.newIndex, this.lastPointer),
    });
  }

  enableKeyboard() {
    this.list.addEventListener("keydown", (event) => {
      const item = event.target.closest(".frame");
      if (!item || item.classList.contains("hint")) return;
      const slot = this.items().indexOf(item);
      if (event.key === " " || event.key === "Enter") {
        event.preventDefault();
        this.grab(this.grabbed === item ? null : item);
      } else if (event.key === "ArrowLeft" || event.key === "ArrowRight") {
        event.preventDefault();
        const target = this.neighbour(slot, event.key === "ArrowLeft" ? -1 : 1);
        if (target === null) return;
        if (this.grabbed === item) {
          this.swap(slot, target);
          this.record(slot, target, "keyboard");
          item.focus();
        } else {
          this.items()[target].focus();
        }
      } else if (event.key === "Escape") {
        this.grab(null);
      }
    });
  }

  grab(item) {
    if (this.grabbed) {
      this.grabbed.classList.remove("grabbed");
      this.grabbed.setAttribute("aria-grabbed", "false");
    }
    this.grabbed = item;
    if (item) {
      item.classList.add("grabbed");
      item.setAttribute("aria-grabbed", "true");
    }
  }
}

function frameItem(img, position, hinted) {
  const item = el("li", {
    class: hinted ? "frame hint" : "frame",
    "data-position": String(position),
    tabindex: hinted ? "-1" : "0",
    role: "option",
    "aria-grabbed": "false",
  }, img);
  if (hinted) item.append(el("span", { class: "hint-badge" }, text("order_fixed_badge")));
  return item;
}

async function run(trial, ctx) {
  const params = trial.params || {};
  const hints = params.hint_positions || [];
  const order = initialOrder(params.presented_order, hints);
  const images = await Promise.all(order.map((position) =>
    decodedImage(trial.stimulus.frames[position], position)));
  const list = el("ol", { class: "frames", role: "listbox", "aria-label": plain("order_frames_label") },
    order.map((position, slot) => frameItem(images[slot], position, hints.includes(position))));
  const board = new OrderBoard(list, order, hints);
  board.enableDrag();
  board.enableKeyboard();
  const annotation = params.annotation ? el("p", { class: "annotation" }, params.annotation) : "";
  const help = el("p", { class: "help" }, text("order_help"),
    hints.length ? [" ", text("order_help_fixed")] : "");
  const done = button("order-done", text("order_done_button"));
  done.setAttribute("aria-disabled", "true");  // until MIN_INPUT_MS after the frames appear
  const early = el("p", { id: "order-done-early", role: "status" });
  // The handler is attached before the button can be seen, so no click is ever dropped.
  const ignored = [];
  let submit = null;
  done.addEventListener("click", (event) => {
    const since = board.shownAt === null ? null : event.timeStamp - board.shownAt;
    if (submit === null || since === null || since < MIN_INPUT_MS) {
      noteIgnored(ignored, Math.max(0, since ?? 0), "click");  // the server takes 0 <= t_ms
      early.replaceChildren(text("order_done_too_early"));
      return;
    }
    const resolve = submit;
    submit = null;
    resolve(event.timeStamp);
  });
  show("frame_order", annotation, help, list, done, early);
  await nextFrame();
  // The frame after the one that painted the frames: they are on screen from (about) here.
  board.shownAt = await nextFrame();
  setTimeout(() => done.removeAttribute("aria-disabled"), MIN_INPUT_MS);
  if (ctx.simulate) ctx.simulate.answer(trial, { board });
  const submitted = await new Promise((resolve) => {
    // The design's time limit ends the trial with whatever order is on screen.
    const limit = Number.isFinite(params.max_response_ms)
      ? setTimeout(() => { submit = null; resolve(null); }, params.max_response_ms) : null;
    submit = (time) => { clearTimeout(limit); resolve(time); };
  });
  board.sortable.destroy();
  const { focus_lost, fullscreen_exited } = ctx.monitor.finish();
  const data = {
    trial_type: trial.trial_type,
    rt_ms: submitted === null ? null : submitted - board.shownAt,
    timed_out: submitted === null,
    focus_lost,
    fullscreen_exited,
    initial_order: board.initial,
    final_order: board.order(),
    moves: board.moves,
    ignored_inputs: ignored.slice(),  // a click after the answer is none the trial ignored
  };
  return data;
}

// Practice feedback (runner.js): `verdict` is the server's word on the stored order, null if
// none came.
async function feedback(data, verdict) {
  if (!verdict) return;
  const right = verdict.correct;
  show("feedback", el("p", { class: `feedback ${right ? "correct" : "incorrect"}` },
    text(right ? "order_feedback_correct" : "order_feedback_incorrect")));
  await sleep(1200);
}

function shuffled(items) {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

async function moveLeft(sim, board, slot) {
  const item = board.items()[slot];
  item.focus();
  sim.press(item, " ");
  sim.press(item, "ArrowLeft");
  sim.press(item, " ");
  await sleep(20);
}

// The simulated participant (simulate.js): orders the frames with the keyboard controls
// (selection sort by swaps), towards the known order in a simulated session's practice,
// otherwise towards a random one; then presses Done.
async function simulate(sim, trial, { board }) {
  const target = trial.params?.correct_response || shuffled(board.order());
  const movable = board.order()
    .map((p, slot) => (board.hints.has(p) ? null : slot)).filter((s) => s !== null);
  const goal = target.filter((p) => !board.hints.has(p));
  for (let i = 0; i < movable.length; i++) {
    const current = board.order();
    const from = movable.findIndex((slot) => current[slot] === goal[i]);
    for (let k = from; k > i; k--) await moveLeft(sim, board, movable[k]);
  }
  await sleep(sim.delay());
  document.getElementById("order-done").click();
}

// This type's paragraphs of the instructions screen (flow.js).
function instructions() {
  return ["instructions_frame_order"];
}

export default { name: "frame_order", run, feedback, simulate, instructions };
