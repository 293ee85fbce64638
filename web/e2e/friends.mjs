// Browser test of the account and private-table flows against a running
// cluster, driven by cmd/devcluster's TestWebClientAccountsAndTables (or by
// hand: see docs/web.md):
//
//   BASE_URL=http://localhost:8080 ARTIFACTS=/tmp/fk node e2e/friends.mjs
//
// It drives Debian's /usr/bin/chromium, headless, with playwright-core:
//  - account: a guest signs in, renames on /account (the nav, the kept
//    session and a reload show the new name; the kept refresh token is the
//    rotated one), then signs out: back to the sign-in view, nothing kept,
//    and the old refresh token is refused by the server;
//  - tables (TABLES=1, the default): a host opens a private table (Red
//    theirs, Blue and Green open, Yellow a bot), a second browser context
//    opens the invite link, signs in and is seated; the host's lobby shows
//    the friend; the host starts with bots filling the free seat and both
//    pages land in the same match's view. A third context opens a link with
//    an unknown code and must read a sentence, not an error code;
//  - rematch (REMATCH=1, the default): four players at a table of open
//    seats (three by the link), the host starts, three resign; each of the
//    four clicks Rematch on the summary (the later ones see the offer and
//    who accepted) and all four pages land in the same new match.
// It prints one JSON line prefixed "RESULT ".
import { chromium } from "playwright-core";
import { mkdirSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

const base = process.env.BASE_URL ?? "http://localhost:8080";
const artifacts = process.env.ARTIFACTS ?? join(dirname(fileURLToPath(import.meta.url)), "..", "test-artifacts");
const tables = (process.env.TABLES ?? "1") === "1";
const rematch = (process.env.REMATCH ?? "1") === "1";
mkdirSync(artifacts, { recursive: true });

const log = (...a) => console.log(new Date().toISOString().slice(11, 23), ...a);
function fail(msg) {
  throw new Error(msg);
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
const errors = [];
const pages = {};
const contexts = [];
async function newPage(who, opts = { viewport: { width: 1280, height: 860 } }) {
  const ctx = await browser.newContext(opts);
  contexts.push(ctx);
  const page = await ctx.newPage();
  page.on("pageerror", (e) => errors.push(`${who}: ${e.message}`));
  page.on("console", (m) => { if (m.type() === "error" || process.env.FK_DEBUG) log(`${who} console:`, m.text()); });
  // Which call a console error was about (the console names no URL).
  page.on("requestfailed", (r) => log(`${who} request failed:`, r.url(), r.failure()?.errorText ?? ""));
  page.on("response", (r) => { if (r.status() >= 400) log(`${who} ${r.status()}:`, r.url()); });
  pages[who] = page;
  return page;
}
const screenshots = [];
async function shot(page, name) {
  const path = join(artifacts, name);
  await page.screenshot({ path });
  screenshots.push(path);
}
const kept = (page) => page.evaluate(() => JSON.parse(localStorage.getItem("fk.session") ?? "null"));

// refreshWorks asks the server (Connect, JSON) whether a refresh token still works.
async function refreshWorks(page, refreshToken) {
  return page.evaluate(async (rt) => {
    const r = await fetch("/fourkingdoms.auth.v1.AuthService/RefreshSession", {
      method: "POST", headers: { "content-type": "application/json", "connect-protocol-version": "1" },
      body: JSON.stringify({ refreshToken: rt }),
    });
    return { status: r.status, body: await r.text() };
  }, refreshToken);
}

async function signIn(page, name) {
  await page.waitForSelector("input[aria-label=name]");
  await page.fill("input[aria-label=name]", name);
  await page.click("button.primary");
  await page.waitForSelector("[data-player]");
}

const limitMs = Number(process.env.LIMIT_MS ?? 150_000);
const watchdog = setTimeout(async () => {
  log(`the browser test is still running after ${limitMs / 1000} s; the pages:`);
  for (const [who, page] of Object.entries(pages)) {
    try {
      log(who, page.url(), JSON.stringify(await page.evaluate(() => ({ flash: document.querySelector(".flash")?.textContent, error: [...document.querySelectorAll(".error")].map((e) => e.textContent).join(" | ") }))));
      await page.screenshot({ path: join(artifacts, `stuck-friends-${who}.png`) });
    } catch (e) {
      log(who, "unreadable:", e.message);
    }
  }
  process.exit(1);
}, limitMs);
watchdog.unref();

const result = { screenshots, errors };
try {
  // --- account: rename and sign out
  const acct = await newPage("account");
  await acct.goto(base + "/");
  await signIn(acct, "Before Rename");
  const playerId = await acct.getAttribute("[data-player]", "data-player");
  const first = await kept(acct);
  await acct.click("[data-player]");
  await acct.waitForSelector("form.rename");
  await acct.fill("input[aria-label='new name']", "After Rename");
  await acct.click("form.rename button[type=submit]");
  await acct.waitForFunction(() => document.querySelector("[data-player]")?.textContent === "After Rename", null, { timeout: 15_000 });
  const renamed = await kept(acct);
  if (renamed.playerId !== playerId || renamed.displayName !== "After Rename" || renamed.refreshToken === first.refreshToken || renamed.token === first.token) {
    fail(`after the rename the kept session is ${JSON.stringify({ ...renamed, token: "…", refreshToken: renamed.refreshToken === first.refreshToken ? "unchanged" : "rotated" })}`);
  }
  await acct.reload();
  await acct.waitForSelector("[data-player]");
  if ((await acct.textContent("[data-player]")) !== "After Rename") fail("a reload lost the new name");
  await shot(acct, "account-desktop.png");
  // The rename spent the refresh token it sent; the kept one is the new one.
  const beforeOut = await kept(acct);
  await acct.click("[data-player]");
  await acct.click("[data-testid=sign-out]");
  await acct.waitForSelector("input[aria-label=name]", { timeout: 15_000 });
  if (await kept(acct)) fail("signing out left a kept session");
  if (!/signed out/.test((await acct.textContent(".flash")) ?? "")) fail("signing out said nothing");
  const after = await refreshWorks(acct, beforeOut.refreshToken);
  if (after.status === 200 || !/unauthenticated/.test(after.body)) fail(`the refresh token of a signed-out session still works: ${after.status} ${after.body}`);
  await acct.reload();
  await acct.waitForSelector("input[aria-label=name]");
  result.account = { playerId, renamed: true, signedOut: true, revokedStatus: after.status };
  log("account: renamed and signed out");

  if (tables) {
    // --- a private table: host, a friend by link, start with bots
    const host = await newPage("host");
    await host.goto(base + "/");
    await signIn(host, "Table Host");
    const hostId = await host.getAttribute("[data-player]", "data-player");
    await host.click("[data-testid=friends]");
    await host.waitForSelector("select[aria-label='time control'] option", { state: "attached", timeout: 15_000 });
    await host.selectOption("select[aria-label='your seat']", "1");
    await host.selectOption("select[data-seat='3']", "bot:greedy");
    await host.selectOption("select[data-seat='2']", "open");
    await host.selectOption("select[data-seat='4']", "open");
    await shot(host, "friends-form-desktop.png");
    await host.click("form.table-form button[type=submit]");
    await host.waitForSelector(".lobby [data-testid=table-seats] li", { timeout: 15_000 });
    const code = await host.getAttribute(".lobby", "data-code");
    const link = await host.inputValue("input.invite-link");
    if (!link.includes(`#table=${code}`)) fail(`the invite link ${link} does not carry the code ${code}`);
    log("table", code, link);

    // The friend, phone-sized, opens the link in a fresh browser.
    const friend = await newPage("friend", { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    await friend.goto(link.replace(/^https?:\/\/[^/]+/, base));
    await friend.waitForSelector(".invite-note");
    await signIn(friend, "Table Friend");
    const friendId = await friend.getAttribute("[data-player]", "data-player");
    await friend.waitForFunction((id) => [...document.querySelectorAll(".table-seats li")].some((li) => li.textContent.includes("you")), friendId, { timeout: 15_000 });
    if (new URL(friend.url()).hash) fail(`the invite fragment stayed in the address: ${friend.url()}`);
    // The host's lobby shows the friend (WatchTable), in the first open seat: Blue.
    await host.waitForFunction(() => document.querySelector(".table-seats li[data-seat='2']")?.dataset.taken === "1", null, { timeout: 15_000 });
    await shot(host, "lobby-desktop.png");
    await shot(friend, "lobby-phone.png");
    if (await friend.$("[data-testid=start-table]")) fail("the friend sees a Start button");

    // An unknown code: a sentence.
    const stranger = await newPage("stranger");
    await stranger.goto(base + "/#table=ZZZZ-ZZZZ-ZZZZ");
    await signIn(stranger, "Stranger");
    await stranger.waitForFunction(() => /no table with that code/.test(document.querySelector(".lobby .error")?.textContent ?? ""), null, { timeout: 15_000 });

    await host.click("[data-testid=start-table]");
    await Promise.all([host, friend].map((p) => p.waitForFunction(() => location.pathname.startsWith("/play/"), null, { timeout: 30_000 })));
    const hostMatch = new URL(host.url()).pathname;
    const friendMatch = new URL(friend.url()).pathname;
    if (hostMatch !== friendMatch) fail(`host in ${hostMatch}, friend in ${friendMatch}`);
    await Promise.all([host, friend].map((p) => p.waitForSelector("svg.board rect[data-sq]", { timeout: 30_000 })));
    // Both are players of it: each page shows its own seat as "you".
    for (const [p, who] of [[host, "host"], [friend, "friend"]]) {
      await p.waitForSelector(".player .tag.you", { timeout: 15_000 }).catch(() => fail(`the ${who} is not a player of the match`));
    }
    await shot(host, "table-match-desktop.png");
    result.tables = { code, link, matchId: decodeURIComponent(hostMatch.split("/")[2]), hostId, friendId };
    log("both in", hostMatch);

    // The friend's phone goes away (its watch stream with it): the host's
    // page shows Blue's disconnect countdown (presence, docs/match.md).
    await friend.context().close();
    await host.waitForFunction(() => /disconnected/.test(document.querySelector(".disconnected[data-grace='2']")?.textContent ?? ""), null, { timeout: 30_000 });
    result.tables.disconnected = await host.textContent(".disconnected[data-grace='2']");
    await shot(host, "disconnected-desktop.png");
    log("friend shown as", result.tables.disconnected);
  }

  if (rematch) {
    // --- four players, three resign, all four accept a rematch
    for (const c of contexts.splice(0)) await c.close();
    for (const k of Object.keys(pages)) delete pages[k];
    const ps = [];
    for (let i = 1; i <= 4; i++) ps.push(await newPage(`r${i}`, { viewport: { width: 1100, height: 800 } }));
    const [p1] = ps;
    await p1.goto(base + "/friends");
    await signIn(p1, "Rematch 1");
    await p1.waitForSelector("select[aria-label='time control'] option", { state: "attached", timeout: 15_000 });
    await p1.click("form.table-form button[type=submit]");
    await p1.waitForSelector(".lobby [data-testid=table-seats] li", { timeout: 15_000 });
    const link = (await p1.inputValue("input.invite-link")).replace(/^https?:\/\/[^/]+/, base);
    for (const [i, p] of ps.slice(1).entries()) {
      await p.goto(link);
      await signIn(p, `Rematch ${i + 2}`);
      await p.waitForFunction(() => [...document.querySelectorAll(".table-seats li")].some((li) => li.textContent.includes("you")), null, { timeout: 15_000 });
    }
    await p1.waitForFunction(() => document.querySelectorAll(".table-seats li[data-taken='1']").length === 4, null, { timeout: 15_000 });
    await p1.click("[data-testid=start-table]");
    await Promise.all(ps.map((p) => p.waitForFunction(() => location.pathname.startsWith("/play/"), null, { timeout: 30_000 })));
    const first = new URL(p1.url()).pathname;
    await Promise.all(ps.map((p) => p.waitForSelector(".player .tag.you", { timeout: 30_000 })));
    // Red, Blue and Yellow resign (the host took Red; the others joined in seat order).
    for (const p of ps.slice(0, 3)) {
      await p.click(".controls button.danger");
      await p.click("[data-testid=confirm-resign]");
    }
    await Promise.all(ps.map((p) => p.waitForSelector("[data-testid=ranking]", { timeout: 30_000 })));
    await Promise.all(ps.map((p) => p.waitForSelector("[data-testid=offer-rematch]", { timeout: 30_000 })));
    await p1.click("[data-testid=offer-rematch]");
    // The others see the offer (they poll WatchRematch while there is none) and accept.
    for (const p of ps.slice(1, 3)) {
      await p.waitForFunction(() => /offered a rematch/.test(document.querySelector("[data-testid=rematch]")?.textContent ?? ""), null, { timeout: 15_000 });
      await p.click("[data-testid=offer-rematch]");
      // The page shows its own acceptance (the answer of OfferRematch).
      await p.waitForFunction(() => /Rematch offered: waiting for/.test(document.querySelector("[data-testid=rematch]")?.textContent ?? ""), null, { timeout: 15_000 });
    }
    await ps[3].waitForFunction(() => /waiting|offered/.test(document.querySelector("[data-testid=rematch]")?.textContent ?? ""), null, { timeout: 15_000 });
    await shot(ps[3], "rematch-offer-desktop.png");
    await ps[3].click("[data-testid=offer-rematch]");
    await Promise.all(ps.map((p) => p.waitForFunction((old) => location.pathname.startsWith("/play/") && location.pathname !== old, first, { timeout: 30_000 })));
    const next = ps.map((p) => new URL(p.url()).pathname);
    if (new Set(next).size !== 1) fail(`the four pages went to different matches: ${next.join(", ")}`);
    await Promise.all(ps.map((p) => p.waitForSelector(".player .tag.you", { timeout: 30_000 })));
    await shot(p1, "rematch-match-desktop.png");
    result.rematch = { matchId: decodeURIComponent(first.split("/")[2]), newMatchId: decodeURIComponent(next[0].split("/")[2]) };
    log("rematch", first, "->", next[0]);
  }
  if (errors.length) fail(`errors in the pages: ${errors.join("; ")}`);
  console.log("RESULT " + JSON.stringify(result));
} catch (e) {
  // What each page showed when it failed.
  for (const [who, page] of Object.entries(pages)) {
    try {
      log(who, page.url(), JSON.stringify(await page.evaluate(() => [...document.querySelectorAll(".error, .flash, [data-testid=rematch]")].map((e) => e.textContent).filter(Boolean))));
      await page.screenshot({ path: join(artifacts, `failed-friends-${who}.png`) });
    } catch {
      // a closed page
    }
  }
  throw e;
} finally {
  await browser.close();
}
