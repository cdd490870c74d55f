// Firefox ESR for tests/engines, driven over WebDriver BiDi by puppeteer-core.
//
//   DISPLAY=:N node firefox.mjs [/usr/bin/firefox-esr [PREFS]]
//
// PREFS: a JSON object of Firefox preferences, e.g. {"layout.frame_rate": 120}: the rate of
// Firefox's software vsync, which drives its animation frames on a virtual display.
//
// Firefox runs in a real window on the X display $DISPLAY (an Xvfb in the tests), not
// headless, so that input sent through the X server (tests/engines/xinput.py) reaches it.
//
// Reads one JSON command per line on stdin, {"op": NAME, ...arguments}, and answers each on
// one line of stdout, {"value": ...} or {"error": "message"}, in order.  Prints {"ready": true}
// once Firefox runs.  Page errors and console.error messages of the current tab are kept
// until the "errors" command takes them.  Exits when stdin closes.
import readline from "node:readline";
import puppeteer from "puppeteer-core";

const browser = await puppeteer.launch({
  browser: "firefox",
  executablePath: process.argv[2] || "/usr/bin/firefox-esr",
  protocol: "webDriverBiDi",
  headless: false,
  args: ["--width=1280", "--height=800"],
  extraPrefsFirefox: JSON.parse(process.argv[3] || "{}"),
  defaultViewport: null,  // the window's own size: no emulation between X and the page
});
let context = null;
let page = null;
const errors = [];

const commands = {
  // A new tab in a fresh browser context (its own storage).
  async open() {
    context = await browser.createBrowserContext();
    page = await context.newPage();
    errors.length = 0;
    page.on("pageerror", (error) => errors.push(`page error: ${error.message ?? error}`));
    page.on("console", (message) => {
      if (message.type() === "error") errors.push(`console.error: ${message.text()}`);
    });
    // The runner asks before a participant leaves mid-session; a reload here is one the
    // participant confirmed.
    page.on("dialog", (dialog) => dialog.type() === "beforeunload" ? dialog.accept() : undefined);
  },
  goto: async ({ url }) => { await page.goto(url, { waitUntil: "load" }); return page.url(); },
  reload: async () => { await page.reload({ waitUntil: "load" }); },
  // A JavaScript expression, evaluated in the page; a promise is awaited.
  evaluate: ({ expression }) => page.evaluate(expression),
  click: ({ x, y }) => page.mouse.click(x, y),
  press: ({ key }) => page.keyboard.press(key),
  offline: ({ on }) => page.setOfflineMode(on),
  // The page's viewport, as a window of that size would have it (tests/engines window matrix).
  viewport: ({ width, height }) => page.setViewport({ width, height }),
  errors: () => errors.splice(0),
  async close() {
    await context.close();
    context = page = null;
  },
};

const reply = (answer) => process.stdout.write(`${JSON.stringify(answer)}\n`);
const lines = readline.createInterface({ input: process.stdin });
reply({ ready: true });
for await (const line of lines) {
  const { op, ...args } = JSON.parse(line);
  try {
    const value = await commands[op](args);
    reply({ value: value ?? null });
  } catch (error) {
    reply({ error: String(error.message ?? error) });
  }
}
await browser.close();
