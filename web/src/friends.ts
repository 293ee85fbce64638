// The "Play with friends" screens: the form that opens a private table
// (/friends) and the table's lobby (/table/<CODE>), which an invite link
// ("/#table=<CODE>") leads to after joining. The calls and what the lobby
// shows of a table are in tables.ts.

import { durationMs } from "@bufbuild/protobuf/wkt";
import type { Api } from "./api";
import { seatClass, seatName } from "./boardview";
import { h, replace } from "./dom";
import { describe, reason } from "./errors";
import { Seat, type TimeControl } from "./gen/fourkingdoms/game/v1/game_pb";
import { SeatMode, type Table } from "./gen/fourkingdoms/matchmaking/v1/matchmaking_pb";
import {
  botLevels, createTableRequest, expiresInMs, followTable, formProblem, formatCode, inviteLink, joinTable, lobbyView,
  normalizeCode, seats, startTable, type SeatChoice,
} from "./tables";

/** What the screens need of main.ts. */
export interface Ctx {
  api: Api;
  go(path: string): void;
  setMessage(m: string): void;
  guard<T>(p: Promise<T>): Promise<T>;
}

/** tablePath is the lobby's route for code. */
export const tablePath = (code: string): string => `/table/${normalizeCode(code) || encodeURIComponent(code)}`;

/** friendsScreen is the form that opens a private table. */
export function friendsScreen(root: HTMLElement, ctx: Ctx): () => void {
  let stopped = false;
  const err = h("p", { class: "error", role: "alert" });
  const ruleSel = h("select", { "aria-label": "rule set", name: "rule-set" });
  const tcSel = h("select", { "aria-label": "time control", name: "time-control" });
  const rated = h("input", { type: "checkbox", name: "rated" });
  const hostSel = h("select", { "aria-label": "your seat", name: "host-seat" },
    ...seats.map((s) => h("option", { value: s }, seatName[s])));
  const seatSels = seats.map((s) => h("select", { "aria-label": `${seatName[s]} seat`, "data-seat": s },
    h("option", { value: "open" }, "Open: a friend joins"),
    ...botLevels.map((l) => h("option", { value: `bot:${l}` }, `Bot (${l})`))));
  const create = h("button", { type: "submit", class: "primary" }, "Create table");
  const tcs = new Map<string, TimeControl[]>();
  const syncHost = (): void => {
    // The host's own seat is always open.
    for (const [i, sel] of seatSels.entries()) {
      const own = seats[i] === Number(hostSel.value);
      if (own) sel.value = "open";
      sel.disabled = own;
    }
  };
  hostSel.onchange = syncHost;
  const fillTcs = (): void => {
    replace(tcSel, ...(tcs.get(ruleSel.value) ?? []).map((tc, i) => h("option", { value: i }, tc.name)));
  };
  ruleSel.onchange = fillTcs;

  replace(root, h("section", { class: "card narrow friends" },
    h("h1", {}, "Play with friends"),
    h("p", {}, "Open a private table, send the link to your friends, and start when they are seated. Seats you give to bots are filled when the game starts."),
    h("form", {
      class: "table-form",
      onsubmit: async (e: Event) => {
        e.preventDefault();
        const seatChoices: SeatChoice[] = seatSels.map((sel) => {
          const [mode, level] = sel.value.split(":");
          return { mode: mode === "bot" ? "bot" : "open", botLevel: level ?? "" };
        });
        const form = {
          ruleSet: ruleSel.value, timeControl: tcs.get(ruleSel.value)?.[Number(tcSel.value)], rated: rated.checked,
          hostSeat: Number(hostSel.value) as Seat, seats: seatChoices,
        };
        const problem = formProblem(form);
        if (problem) {
          err.textContent = problem;
          return;
        }
        create.disabled = true;
        err.textContent = "";
        try {
          const r = await ctx.guard(ctx.api.matchmaking.createTable(createTableRequest(form), { timeoutMs: 10_000 }));
          if (!stopped) ctx.go(tablePath(r.table!.code));
        } catch (e2) {
          err.textContent = describe(e2);
          create.disabled = false;
        }
      },
    },
    h("label", {}, "Rule set ", ruleSel), h("label", {}, "Time control ", tcSel),
    h("label", {}, rated, " Rated (counts for ratings)"),
    h("label", {}, "Your seat ", hostSel),
    h("fieldset", { class: "seats" }, h("legend", {}, "Seats"),
      ...seats.map((s, i) => h("label", { class: `seat-choice ${seatClass[s]}` }, h("span", { class: "swatch" }), seatName[s], " ", seatSels[i]))),
    create), err,
  h("h2", {}, "Join with a code"),
  joinByCode(ctx)));
  syncHost();

  void (async () => {
    try {
      const qs = (await ctx.guard(ctx.api.matchmaking.listQueues({}))).queues;
      for (const q of qs) {
        if (!q.timeControl) continue;
        const list = tcs.get(q.ruleSet) ?? [];
        if (!list.some((tc) => tc.name === q.timeControl!.name)) list.push(q.timeControl);
        tcs.set(q.ruleSet, list);
      }
      if (stopped) return;
      replace(ruleSel, ...[...tcs.keys()].map((r) => h("option", { value: r }, r)));
      fillTcs();
      if (tcs.size === 0) err.textContent = "This server has no time controls configured, so no table can be opened.";
    } catch (e) {
      err.textContent = describe(e);
    }
  })();
  return () => { stopped = true; };
}

/** joinByCode is the small form that opens a table's lobby from a typed code. */
export function joinByCode(ctx: Ctx): HTMLElement {
  const input = h("input", { type: "text", placeholder: "Table code, e.g. 7KQ2-M9XD-4TBA", "aria-label": "table code", autocomplete: "off", spellcheck: "false" });
  const err = h("span", { class: "error", role: "alert" });
  return h("form", {
    class: "join-code",
    onsubmit: (e: Event) => {
      e.preventDefault();
      const code = normalizeCode(input.value);
      if (!code) {
        err.textContent = "A table code has 12 letters and digits, like 7KQ2-M9XD-4TBA.";
        return;
      }
      ctx.go(`${tablePath(code)}?join=1`);
    },
  }, input, h("button", { type: "submit" }, "Join"), err);
}

/**
 * lobbyScreen follows code's table. With join set (an invite link, a
 * typed code) it first takes a seat; a player who opens the lobby's path
 * without a seat sees the table and a Join button.
 */
export function lobbyScreen(root: HTMLElement, ctx: Ctx, code: string, join: boolean): () => void {
  const me = ctx.api.session()?.playerId ?? "";
  let table: Table | undefined;
  let stopFollow: (() => void) | undefined;
  let stopped = false;
  let busy = false;
  const status = h("p", { class: "muted", role: "status" });
  const err = h("p", { class: "error", role: "alert" });
  const seatList = h("ol", { class: "table-seats", "data-testid": "table-seats" });
  const link = h("input", { type: "text", readonly: true, "aria-label": "invite link", class: "invite-link" });
  const copyBtn = h("button", { type: "button", onclick: () => void copy() }, "Copy link");
  const fill = h("input", { type: "checkbox", name: "fill-with-bots", checked: true });
  const level = h("select", { "aria-label": "bot level" }, ...botLevels.map((l) => h("option", { value: l, selected: l === "greedy" }, l)));
  const startBtn = h("button", { type: "button", class: "primary", "data-testid": "start-table", onclick: () => void start() }, "Start");
  const leaveBtn = h("button", { type: "button", class: "danger", "data-testid": "leave-table", onclick: () => void leave() }, "Leave table");
  const joinBtn = h("button", { type: "button", class: "primary", "data-testid": "join-table", onclick: () => void doJoin() }, "Join this table");
  const hostBox = h("div", { class: "row host-controls" }, h("label", {}, fill, " Fill free seats with bots "), level, startBtn);
  const actions = h("div", { class: "row" });
  const title = h("h1", {}, `Table ${formatCode(code)}`);
  const info = h("p", { class: "muted" });
  replace(root, h("section", { class: "card lobby", "data-code": code },
    title, info,
    h("div", { class: "row invite" }, link, copyBtn),
    h("p", { class: "muted" }, "Send this link to your friends: opening it seats them at this table."),
    seatList, status, err, actions));
  link.value = inviteLink(location.origin, { code, link: "" });
  const tick = setInterval(() => drawExpiry(), 1000);

  const draw = (): void => {
    if (stopped || !table) return;
    const v = lobbyView(table, me);
    link.value = inviteLink(location.origin, table);
    const tc = table.timeControl;
    info.textContent = `${table.ruleSet} · ${tc?.name ?? ""}${tc?.initial ? ` (${Math.round(durationMs(tc.initial) / 60_000)} min)` : ""} · ${table.rated ? "rated" : "unrated"}`;
    replace(seatList, ...table.seats.map((s) => {
      const who = s.player
        ? h("span", { class: "pname" }, s.player.displayName || s.player.playerId,
          s.player.playerId === table!.hostPlayerId ? h("span", { class: "tag" }, "host") : null,
          s.player.playerId === me ? h("span", { class: "tag you" }, "you") : null,
          s.player.isBot ? h("span", { class: "tag" }, "bot") : null)
        : s.mode === SeatMode.BOT
          ? h("span", { class: "muted" }, `Bot (${s.botLevel || "greedy"}) joins at the start`)
          : h("span", { class: "muted" }, "Open: waiting for a friend");
      return h("li", { class: seatClass[s.seat], "data-seat": s.seat, "data-taken": s.player ? "1" : "" }, h("span", { class: "swatch" }), `${seatName[s.seat]}: `, who);
    }));
    fill.disabled = !v.needsBots;
    level.disabled = !v.needsBots || !fill.checked;
    startBtn.disabled = busy || !v.open || (v.needsBots && !fill.checked);
    startBtn.textContent = v.needsBots ? (fill.checked ? `Start with ${v.freeOpen.length} bot${v.freeOpen.length > 1 ? "s" : ""} for the free seats` : "Start (waiting for friends)") : "Start";
    replace(actions,
      v.mySeat && v.isHost && v.open ? hostBox : null,
      v.mySeat && !v.isHost && v.open ? h("span", { class: "muted" }, "Waiting for the host to start…") : null,
      !v.mySeat && v.open ? joinBtn : null,
      v.mySeat && v.open ? leaveBtn : null);
    drawExpiry();
  };
  fill.onchange = draw;

  function drawExpiry(): void {
    if (!table || stopped) return;
    const left = expiresInMs(table);
    status.textContent = lobbyView(table, me).open && left !== undefined
      ? `The table closes in ${Math.ceil(left / 60_000)} min if nothing happens at it.` : "";
  }

  const follow = (): void => {
    stopFollow?.();
    stopFollow = followTable(ctx.api, code, (t) => {
      table = t;
      err.textContent = "";
      draw();
    }, (end) => {
      if (stopped) return;
      switch (end.kind) {
        case "started":
          if (lobbyView(end.table, me).mySeat) {
            ctx.setMessage("");
            ctx.go(`/play/${encodeURIComponent(end.matchId)}`);
          } else {
            replace(actions, h("p", {}, "The game has started. ", h("a", { href: `/watch/${encodeURIComponent(end.matchId)}`, "data-nav": "" }, "Watch it")));
          }
          return;
        case "closed":
          ctx.setMessage("The table closed: its last player left, or it stayed idle too long.");
          ctx.go("/friends");
          return;
        case "failed":
          err.textContent = describe(end.err);
          replace(actions, h("a", { href: "/friends", "data-nav": "" }, "Back to Play with friends"));
      }
    }, () => { err.textContent = "Connection lost; reconnecting…"; });
  };

  async function doJoin(): Promise<void> {
    busy = true;
    joinBtn.disabled = true;
    try {
      const r = await ctx.guard(joinTable(ctx.api, code));
      // Seated: a reload shows the lobby without joining again.
      if (location.search) history.replaceState(null, "", tablePath(code));
      table = r.table;
      err.textContent = "";
      draw();
      follow();
    } catch (e) {
      err.textContent = describe(e);
      // A code that will never work: nothing to follow.
      if (["TABLE_NOT_FOUND", "TOO_MANY_GUESSES", "INVALID_ARGUMENT"].includes(reason(e))) replace(actions, h("a", { href: "/friends", "data-nav": "" }, "Back to Play with friends"));
      else if (!stopFollow) follow();
    } finally {
      busy = false;
      joinBtn.disabled = false;
    }
  }

  async function start(): Promise<void> {
    busy = true;
    draw();
    try {
      const t = await ctx.guard(startTable(ctx.api, code, fill.checked, level.value));
      // The stream brings the same state; go at once rather than wait for it.
      if (t.matchId && !stopped) {
        ctx.go(`/play/${encodeURIComponent(t.matchId)}`);
        return;
      }
    } catch (e) {
      err.textContent = describe(e);
    }
    busy = false;
    draw();
  }

  async function leave(): Promise<void> {
    leaveBtn.disabled = true;
    try {
      await ctx.guard(ctx.api.matchmaking.leaveTable({ code }, { timeoutMs: 10_000 }));
      ctx.setMessage("You left the table.");
      ctx.go("/friends");
    } catch (e) {
      err.textContent = describe(e);
      leaveBtn.disabled = false;
    }
  }

  async function copy(): Promise<void> {
    try {
      await navigator.clipboard.writeText(link.value);
      copyBtn.textContent = "Copied";
    } catch {
      // No clipboard permission (an insecure origin, an old browser):
      // select the text so that the player copies it by hand.
      link.select();
      copyBtn.textContent = "Press Ctrl+C";
    }
    setTimeout(() => { copyBtn.textContent = "Copy link"; }, 2000);
  }

  if (join) void doJoin();
  else follow();
  return () => {
    stopped = true;
    clearInterval(tick);
    stopFollow?.();
  };
}
