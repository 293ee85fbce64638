// The web client's entry point: routes (/, /play/<id>, /watch/<id>,
// /rating, /leaderboard, /account, /friends, /table/<code>), the guest
// session (sign-in, rename, sign-out), invite links (#table=<code>), the
// queue picker and the search for a match. The game itself is in game.ts,
// the private tables' screens in friends.ts.

import { Code, ConnectError } from "@connectrpc/connect";
import { durationMs, timestampMs } from "@bufbuild/protobuf/wkt";
import { loadSession, newApi, type Api } from "./api";
import { h, replace } from "./dom";
import { describe, reason, retryable, sessionReasons } from "./errors";
import { mountGame } from "./game";
import type { Queue } from "./gen/fourkingdoms/matchmaking/v1/matchmaking_pb";
import { LeaderboardSection } from "./gen/fourkingdoms/rating/v1/rating_pb";
import { Backoff } from "./backoff";
import { friendsScreen, joinByCode, lobbyScreen, tablePath, type Ctx } from "./friends";
import { codeFromHash } from "./tables";
import { rememberQueueOfMatch } from "./queueof";
import { seatName } from "./boardview";

const { expired } = loadSession(localStorage);
const api = newApi(location.origin, localStorage);
let message = expired ? "Your guest session expired, so you are playing as a new guest now." : "";
let unmount: (() => void) | undefined;
// The code of an invite link ("/#table=<code>") the page was opened with:
// joined once the player is signed in (route).
let invite = "";
let badInvite = false;

const nav = h("nav", { class: "top" },
  h("a", { href: "/", "data-nav": "", class: "brand" }, "Four Kingdoms"),
  h("a", { href: "/", "data-nav": "" }, "Play"),
  h("a", { href: "/rating", "data-nav": "" }, "Rating"),
  h("a", { href: "/friends", "data-nav": "" }, "Friends"),
  h("a", { href: "/leaderboard", "data-nav": "" }, "Leaderboard"),
  h("span", { class: "who" }));
const flash = h("div", { class: "flash", role: "status" });
const main = h("main", {});
document.body.replaceChildren(nav, flash, main);

document.addEventListener("click", (e) => {
  const a = (e.target as Element).closest?.("a[data-nav]");
  if (!a || e.defaultPrevented || (e as MouseEvent).ctrlKey || (e as MouseEvent).metaKey) return;
  e.preventDefault();
  go(a.getAttribute("href") ?? "/");
});
addEventListener("popstate", () => route());
addEventListener("hashchange", () => { takeInvite(); route(); });

// takeInvite reads an invite link's code from the fragment and removes the
// fragment, so that a reload or a shared screen does not join again.
function takeInvite(): void {
  if (!/^#table=/.test(location.hash)) return;
  invite = codeFromHash(location.hash);
  badInvite = invite === "";
  history.replaceState(null, "", location.pathname + location.search);
}
takeInvite();

/** go navigates within the app. */
export function go(path: string): void {
  history.pushState(null, "", path);
  route();
}

function showMessage(): void {
  flash.textContent = message;
  flash.hidden = message === "";
}

function setMessage(m: string): void {
  message = m;
  showMessage();
}

function route(): void {
  unmount?.();
  unmount = undefined;
  const s = api.session();
  replace(nav.querySelector(".who")!, s ? h("a", { href: "/account", "data-nav": "", "data-player": s.playerId, title: "Your account: rename, sign out" }, s.displayName || "Guest") : "");
  if (badInvite) {
    badInvite = false;
    message = "That invite link is damaged: its table code is not valid. Ask for the link again.";
  }
  showMessage();
  if (!s) return signIn();
  if (invite) {
    // An invite link: join its table now that the player is signed in.
    const code = invite;
    invite = "";
    history.replaceState(null, "", tablePath(code));
    unmount = lobbyScreen(main, ctx, code, true);
    return;
  }
  const path = location.pathname;
  const watch = /^\/watch\/([^/]+)$/.exec(path);
  const play = /^\/play\/([^/]+)$/.exec(path);
  const table = /^\/table\/([^/]+)$/.exec(path);
  const queue = /^\/queue\/([^/]+)$/.exec(path);
  if (watch) unmount = mountGame(main, api, decodeURIComponent(watch[1]!), true, go);
  else if (play) unmount = mountGame(main, api, decodeURIComponent(play[1]!), false, go);
  else if (queue) unmount = searchScreen(decodeURIComponent(queue[1]!), Number(new URLSearchParams(location.search).get("missed") ?? 0));
  else if (table) unmount = lobbyScreen(main, ctx, decodeURIComponent(table[1]!), new URLSearchParams(location.search).has("join"));
  else if (path === "/friends") unmount = friendsScreen(main, ctx);
  else if (path === "/account") unmount = accountScreen();
  else if (path === "/rating") unmount = ratingScreen();
  else if (path === "/leaderboard") unmount = leaderboardScreen();
  else unmount = queueScreen();
}

// A session the server refuses (expired early, key rotated) is renewed
// for the same player with its refresh token; only when the server
// refuses that too (or there is none) is it replaced by a new guest
// session, with a message saying so. A refresh that fails for want of a
// network keeps the session for the next try.
async function guard<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (err) {
    if (sessionReasons.has(reason(err))) {
      try {
        await api.refresh();
        route();
      } catch (e2) {
        const lost = !(e2 instanceof ConnectError) || e2.code === Code.Unauthenticated || e2.code === Code.InvalidArgument;
        if (!lost) throw err;
        await api.signOut();
        await api.signIn("");
        setMessage(`${describe(err)} You are signed in as a new guest now.`);
        route();
      }
    }
    throw err;
  }
}

const ctx: Ctx = { api, go, setMessage, guard };

function signIn(): void {
  const name = h("input", { type: "text", maxlength: 32, placeholder: "Your name (optional)", "aria-label": "name", autocomplete: "nickname" });
  const err = h("p", { class: "error", role: "alert" });
  const btn = h("button", { type: "submit", class: "primary" }, "Play as guest");
  replace(main, h("section", { class: "card narrow" },
    h("h1", {}, "Four-player chess"),
    invite ? h("p", { class: "invite-note" }, "You are invited to a private table: sign in as a guest to take your seat.") : null,
    h("p", {}, "Sign in as a guest to play against people and bots. Your session is kept in this browser."),
    h("form", {
      onsubmit: async (e: Event) => {
        e.preventDefault();
        btn.disabled = true;
        try {
          await api.signIn(name.value.trim());
          route();
        } catch (e2) {
          err.textContent = describe(e2);
          btn.disabled = false;
        }
      },
    }, name, btn), err));
  if (expired) {
    // The kept session expired: start a new one at once.
    void api.signIn("").then(() => route(), (e2) => { err.textContent = describe(e2); });
  }
}

function queueScreen(): () => void {
  let stopped = false;
  const list = h("div", { class: "queues" }, h("p", { class: "muted" }, "Loading queues…"));
  const err = h("p", { class: "error", role: "alert" });
  replace(main, h("section", { class: "card" }, h("h1", {}, "Pick a game"), err, list,
    h("h2", {}, "Play with friends"),
    h("div", { class: "row" },
      h("a", { href: "/friends", "data-nav": "", class: "button primary", "data-testid": "friends" }, "Open a private table"),
      joinByCode(ctx))));
  let queues: Queue[] = [];
  const waiting = new Map<string, number>();
  const load = async (): Promise<void> => {
    try {
      queues = (await guard(api.matchmaking.listQueues({}))).queues;
      try {
        const st = await api.matchmaking.getQueueStats({ queues: queues.map((q) => q.name) });
        for (const x of st.stats) waiting.set(x.queue, x.playersWaiting);
      } catch {
        // Counts are a nicety; the queues work without them.
      }
      err.textContent = "";
      draw();
    } catch (e) {
      err.textContent = describe(e);
    }
  };
  const draw = (): void => {
    if (stopped) return;
    replace(list, ...queues.map((q) => h("button", {
      class: "queue", type: "button", "data-queue": q.name, onclick: () => { stopped = true; clearInterval(t); unmount = searchScreen(q.name); },
    },
      h("span", { class: "qname" }, q.timeControl?.name ?? q.name),
      h("span", { class: "qrule" }, q.ruleSet),
      h("span", { class: "qwait" }, `${waiting.get(q.name) ?? 0} waiting`),
      q.botFill && q.botFillAfter ? h("span", { class: "muted" }, `bots join after ${Math.round(durationMs(q.botFillAfter) / 1000)} s`) : null)));
    if (queues.length === 0) replace(list, h("p", {}, "No queues are configured on this server."));
  };
  void load();
  const t = setInterval(() => void load(), 5000);
  return () => { stopped = true; clearInterval(t); };
}

// searchScreen searches in queue: Enqueue, then the ticket's updates. With
// missed (a seat) it is the way back after a game from the queue was
// aborted because that seat missed its first move: Enqueue returns the
// ticket the matchmaker requeued with its original enqueue time.
function searchScreen(queue: string, missed = 0): () => void {
  const abort = new AbortController();
  let ticketId = "";
  let waitedMs = 0, since = Date.now(), low = 0, high = 0;
  const waitedEl = h("span", { class: "waited" }, "0 s");
  const windowEl = h("span", { class: "window" }, "—");
  const err = h("p", { class: "error", role: "alert" });
  const cancel = h("button", { type: "button", onclick: () => void doCancel() }, "Cancel");
  const back = h("p", { "data-testid": "requeued", hidden: missed === 0 });
  replace(main, h("section", { class: "card narrow searching" },
    h("h1", {}, "Looking for players…"),
    back,
    h("p", {}, `Queue ${queue}`),
    h("p", {}, "Waited: ", waitedEl), h("p", {}, "Rating window: ", windowEl),
    err, cancel));
  const t = setInterval(() => { waitedEl.textContent = `${Math.floor((waitedMs + Date.now() - since) / 1000)} s`; }, 250);
  const stop = (): void => { clearInterval(t); abort.abort(); };

  async function doCancel(): Promise<void> {
    cancel.disabled = true;
    try {
      if (ticketId) await api.matchmaking.cancelTicket({ ticketId });
      stop();
      go("/");
    } catch (e) {
      err.textContent = describe(e);
      cancel.disabled = false;
    }
  }

  void (async () => {
    try {
      const r = await guard(api.matchmaking.enqueue({ target: { case: "queue", value: queue } }, { timeoutMs: 10_000 }));
      const tk = r.ticket!;
      ticketId = tk.ticketId;
      if (tk.createdAt) {
        waitedMs = Math.max(0, Date.now() - timestampMs(tk.createdAt));
        since = Date.now();
      }
      if (missed && tk.createdAt) {
        const at = new Date(timestampMs(tk.createdAt)).toLocaleTimeString([], { hour12: false });
        back.textContent = `${seatName[missed] ?? `Seat ${missed}`} missed their first move: the game was aborted; back in the queue (waiting since ${at})`;
      }
      if (tk.matchId) return matched(tk.matchId);
      const bo = new Backoff();
      for (;;) {
        try {
          for await (const u of api.matchmaking.watchTicket({ ticketId }, { signal: abort.signal })) {
            bo.reset();
            err.textContent = "";
            switch (u.update.case) {
              case "searching":
                waitedMs = u.update.value.waited ? durationMs(u.update.value.waited) : 0;
                since = Date.now();
                low = u.update.value.ratingWindowLow;
                high = u.update.value.ratingWindowHigh;
                windowEl.textContent = `${low} – ${high}`;
                break;
              case "matched":
                return matched(u.update.value.matchId);
              case "cancelled":
                stop();
                setMessage("Your search was cancelled.");
                return go("/");
              case "expired":
                stop();
                setMessage("Nobody was found in time; the search expired. Try again or pick another queue.");
                return go("/");
            }
          }
        } catch (e) {
          if (abort.signal.aborted) return;
          if (!retryable(e) && !(e instanceof ConnectError && e.code === Code.Canceled)) throw e;
          err.textContent = "Connection lost; reconnecting…";
        }
        await bo.wait();
      }
    } catch (e) {
      if (!abort.signal.aborted) err.textContent = describe(e);
    }
  })();

  function matched(matchId: string): void {
    rememberQueueOfMatch(matchId, queue);
    stop();
    setMessage("");
    go(`/play/${encodeURIComponent(matchId)}`);
  }
  return stop;
}

// accountScreen shows the guest's name and id, renames (SetDisplayName,
// which rotates the refresh token: the answer's tokens are kept) and signs
// out (RevokeSession; the kept session is removed from this browser).
function accountScreen(): () => void {
  const me = api.session()!;
  const name = h("input", { type: "text", maxlength: 32, value: me.displayName, "aria-label": "new name", autocomplete: "nickname" });
  const err = h("p", { class: "error", role: "alert" });
  const renameBtn = h("button", { type: "submit", class: "primary" }, "Rename");
  const signOutBtn = h("button", { type: "button", class: "danger", "data-testid": "sign-out" }, "Sign out");
  const canRename = !!me.refreshToken;
  replace(main, h("section", { class: "card narrow account" },
    h("h1", {}, "Your account"),
    h("p", {}, "Signed in as ", h("strong", { "data-testid": "display-name" }, me.displayName || "Guest"), " (guest)."),
    h("p", { class: "muted" }, "Player id: ", h("code", {}, me.playerId)),
    h("h2", {}, "Rename"),
    canRename
      ? h("form", {
        class: "rename",
        onsubmit: async (e: Event) => {
          e.preventDefault();
          const v = name.value.trim();
          if (!v) { err.textContent = "Type a name of 1 to 32 characters."; return; }
          renameBtn.disabled = true;
          try {
            const s = await api.rename(v);
            setMessage(`You are now called ${s.displayName}. Games already started keep the old name.`);
            route();
          } catch (e2) {
            err.textContent = describe(e2);
            renameBtn.disabled = false;
          }
        },
      }, name, renameBtn)
      : h("p", { class: "muted" }, "This session cannot be renamed: sign out and in again."),
    err,
    h("h2", {}, "Sign out"),
    h("p", { class: "muted" }, "Signing out ends this guest session for good: the same player (and its rating) cannot come back."),
    signOutBtn));
  signOutBtn.onclick = async () => {
    signOutBtn.disabled = true;
    await api.signOut();
    setMessage("You are signed out.");
    go("/");
  };
  return () => {};
}

const pools = async (a: Api): Promise<string[]> => {
  try {
    const qs = (await a.matchmaking.listQueues({})).queues;
    const set = [...new Set(qs.map((q) => q.ruleSet))];
    return set.length ? set : ["fourkingdoms"];
  } catch {
    return ["fourkingdoms"];
  }
};

function ratingScreen(): () => void {
  const me = api.session()!;
  const body = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  replace(main, h("section", { class: "card" }, h("h1", {}, "Your rating"), body));
  let stopped = false;
  void (async () => {
    const parts: Node[] = [];
    for (const pool of await pools(api)) {
      try {
        const r = (await guard(api.rating.getRating({ playerId: me.playerId, ruleSet: pool }))).rating!;
        const hist = await api.rating.getRatingHistory({ playerId: me.playerId, ruleSet: pool, pageSize: 50 });
        parts.push(h("h2", {}, pool),
          h("p", { class: "big", "data-rating": r.displayRating }, String(r.displayRating)),
          h("p", { class: "muted" }, `${r.gamesPlayed} games${r.provisional ? ` · provisional until ${r.gamesToEstablish} games` : ""}`),
          h("table", { class: "grid" },
            h("thead", {}, h("tr", {}, h("th", {}, "When"), h("th", {}, "Rank"), h("th", {}, "Rating"), h("th", {}, "Change"), h("th", {}, "Game"))),
            h("tbody", {}, ...hist.entries.map((e) => h("tr", {},
              h("td", {}, e.finishedAt ? new Date(Number(e.finishedAt.seconds) * 1000).toLocaleString() : ""),
              h("td", {}, e.rank), h("td", {}, `${e.ratingBefore} → ${e.ratingAfter}`),
              h("td", { class: e.change >= 0 ? "up" : "down" }, `${e.change >= 0 ? "+" : ""}${e.change}`),
              h("td", {}, h("a", { href: `/watch/${encodeURIComponent(e.matchId)}`, "data-nav": "" }, "watch")))))));
      } catch (e) {
        if (reason(e) === "PLAYER_NOT_FOUND") parts.push(h("h2", {}, pool), h("p", {}, "No rated game yet: play one to get a rating."));
        else parts.push(h("h2", {}, pool), h("p", { class: "error" }, describe(e)));
      }
    }
    if (!stopped) replace(body, ...parts);
  })();
  return () => { stopped = true; };
}

function leaderboardScreen(): () => void {
  const body = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  const sel = h("select", { "aria-label": "rule set" });
  const sectionSel = h("select", { "aria-label": "section" },
    h("option", { value: String(LeaderboardSection.RANKED) }, "Ranked players"),
    h("option", { value: String(LeaderboardSection.PROVISIONAL) }, "Provisional players"));
  replace(main, h("section", { class: "card" }, h("h1", {}, "Leaderboard"), h("div", { class: "row" }, sel, sectionSel), body));
  let token = "";
  const tokens: string[] = [];
  const load = async (pageToken: string): Promise<void> => {
    try {
      const section = Number(sectionSel.value) as LeaderboardSection;
      const r = await guard(api.rating.getLeaderboard({ ruleSet: sel.value || "fourkingdoms", pageSize: 25, pageToken, section }));
      token = r.nextPageToken;
      const me = api.session()?.playerId;
      replace(body,
        h("p", { class: "muted" }, section === LeaderboardSection.PROVISIONAL
          ? `${r.sectionSize} players whose rating is still settling; a player joins the ranked list with the game that establishes their rating.`
          : `${r.sectionSize} ranked players.`),
        r.entries.length === 0 ? h("p", {}, "Nobody here yet.") : null,
        h("table", { class: "grid" },
          h("thead", {}, h("tr", {}, h("th", {}, "#"), h("th", {}, "Player"), h("th", {}, "Rating"), h("th", {}, "Games"))),
          h("tbody", {}, ...r.entries.map((e) => h("tr", { class: e.player?.playerId === me ? "me" : "" },
            h("td", {}, e.rank), h("td", {}, e.player?.displayName ?? "", e.player?.isBot ? h("span", { class: "tag" }, "bot") : null),
            h("td", {}, e.displayRating), h("td", {}, e.gamesPlayed))))),
        h("div", { class: "row" },
          tokens.length ? h("button", { type: "button", onclick: () => { tokens.pop(); void load(tokens.at(-1) ?? ""); } }, "Previous") : null,
          token ? h("button", { type: "button", onclick: () => { tokens.push(token); void load(token); } }, "Next") : null));
    } catch (e) {
      replace(body, h("p", { class: "error" }, describe(e)));
    }
  };
  void pools(api).then((ps) => {
    replace(sel, ...ps.map((p) => h("option", { value: p }, p)));
    sel.onchange = () => { tokens.length = 0; void load(""); };
    sectionSel.onchange = () => { tokens.length = 0; void load(""); };
    void load("");
  });
  return () => {};
}

// A kept session whose token expired (or soon will) is renewed first, so
// a returning guest is the same player.
void api.resume().finally(route);
