// The game screen: the board, the four players (name, rating, points,
// state, clock), the move list in rounds, typed moves, resignation, the
// connection state and, at the end, the summary with the rating change
// and the rematch offer (rematch.ts).
// Players and spectators share it; a spectator picks the side to view from.

import type { Api } from "./api";
import { edgeOf, type Edge } from "./board";
import { BoardView, seatClass, seatName } from "./boardview";
import { awaitingFirstMove, disconnectedText, formatClock, timeLeft } from "./clock";
import { h, replace, setText } from "./dom";
import { describe, reason, retryable } from "./errors";
import { Follower, type FollowView } from "./follower";
import { SeatStatus, Termination } from "./gen/fourkingdoms/game/v1/game_pb";
import { MatchStatus } from "./gen/fourkingdoms/match/v1/match_pb";
import { forgetQueueOfMatch, queueOfMatch } from "./queueof";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { checkedSeats, claimPossible, claimRule, clockState, noteText, rounds, seatState } from "./match";
import { LegalMoves } from "./notation";
import { Backoff } from "./backoff";
import { sendMove } from "./mover";
import { ms, Pinger } from "./pinger";
import { RematchFollower, rematchView } from "./rematch";

/** Browser-side measurements the tests read (window.__fk). */
export interface Stats {
  moveRttMs: number[];
  moveRetries: number;
  /** The server's round-trip estimates of this player's seat, as its Pings answered them. */
  pingEstimatesMs?: number[];
}

/** debug logs to the console when localStorage "fk.debug" is set. */
export function debug(msg: string): void {
  if (localStorage.getItem("fk.debug")) console.log(`[fk ${new Date().toISOString().slice(11, 23)}] ${msg}`);
}

export function stats(): Stats {
  const w = window as unknown as { __fk?: Stats };
  return (w.__fk ??= { moveRttMs: [], moveRetries: 0 });
}

const statusText: Record<number, string> = {
  [SeatStatus.LIVE]: "live", [SeatStatus.ZOMBIE]: "zombie", [SeatStatus.OUT]: "out",
};

const terminationText: Record<number, string> = {
  [Termination.LAST_PLAYER_STANDING]: "one player was left standing",
  [Termination.ALL_OPPONENTS_OUT]: "all other players were out",
  [Termination.NO_LIVE_PLAYER]: "no live player was left",
  [Termination.FIFTY_MOVE]: "100 plies passed without a capture or a pawn move",
  [Termination.THREEFOLD_REPETITION]: "the same position occurred three times",
  [Termination.INSUFFICIENT_MATERIAL]: "no live player had enough material",
  [Termination.ABORTED]: "an operator aborted it",
  [Termination.CLAIMED_WIN]: "the leader of the last two players claimed the win",
};

const connText: Record<string, string> = {
  connecting: "Connecting…", live: "Live", reconnecting: "Reconnecting…",
  offline: "Offline — will catch up when the connection is back", ended: "Game over", failed: "Disconnected",
};

/**
 * mountGame shows match id in root; it returns a function that stops it.
 * go navigates within the app (to the rematch's new match).
 */
export function mountGame(root: HTMLElement, api: Api, matchId: string, spectator: boolean, go: (path: string) => void = () => {}): () => void {
  const me = api.session()?.playerId ?? "";
  let v: FollowView | undefined;
  let mySeat = 0;
  let viewSeat = 0;
  let notice = "";
  let sending = false;
  // The ply at which the player last got the turn, and when (performance.now()).
  let turnPly = -1;
  let turnSeenAt = 0;
  const ratings = new Map<string, number>();
  let ratingsAsked = false;
  let summaryAsked = false;
  let requeued = false;
  const gained = new Map<number, { pts: number; at: number }>();
  // Whether this match allows claims (claimRule): learned from the server,
  // asked once the folded state makes a claim possible.
  let claimsAllowed: boolean | undefined;
  let claimAsking = false;
  let claiming = false;

  const board = new BoardView((from, to) => {
    const legal = v && mySeat ? new LegalMoves(v.legal, v.match.ruleSet, mySeat) : undefined;
    const text = legal?.text(from, to);
    if (text) void send(text);
  });

  const status = h("div", { class: "conn", "data-conn": "connecting" }, "Connecting…");
  const noticeEl = h("div", { class: "notice", role: "status", "aria-live": "polite" });
  const players = h("div", { class: "players" });
  // Outage credits, disconnected timeouts, a first-move abort (EventNote).
  const notesEl = h("ul", { class: "notes", "data-testid": "notes" });
  const turn = h("div", { class: "turn" });
  const moveList = h("div", { class: "moves", "data-testid": "moves" });
  const summary = h("div", { class: "summary" });
  const input = h("input", { type: "text", placeholder: "Type a move: h2-h4, O-O", "aria-label": "move", autocomplete: "off", spellcheck: "false", class: "move-input" });
  const moveForm = h("form", { class: "move-form", onsubmit: (e: Event) => { e.preventDefault(); typed(); } },
    input, h("button", { type: "submit" }, "Move"));
  const resignBtn = h("button", { class: "danger", type: "button", onclick: () => confirmResign() }, "Resign");
  const claimBtn = h("button", { type: "button", "data-testid": "claim-win", onclick: () => void claimWin() }, "Claim win");
  // The rematch offer, shown under the summary of a finished game to its
  // players; followed from the moment the game is over.
  // Its elements are made once and only updated in place (drawRematch runs
  // every second for the countdown): a button taken out of the page and put
  // back between a press and its release loses the click or tap.
  let rematch: RematchFollower | undefined;
  let rematchProblem = "";
  let rematchTick: ReturnType<typeof setInterval> | undefined;
  const offerBtn = h("button", { type: "button", class: "primary", "data-testid": "offer-rematch", onclick: () => void rematchCall("offer") }, "Rematch");
  const declineBtn = h("button", { type: "button", "data-testid": "decline-rematch", onclick: () => void rematchCall("decline") }, "Decline");
  const rematchText = h("p", { class: "rematch-state" });
  const rematchError = h("p", { class: "error" });
  const rematchRow = h("div", { class: "row" }, offerBtn, declineBtn);
  const rematchEl = h("div", { class: "rematch", "data-testid": "rematch", hidden: true }, rematchText, rematchError, rematchRow);
  const dialog = h("dialog", { class: "confirm" },
    h("p", {}, "Resign this game? Your points are frozen and the server plays on for your army."),
    h("div", { class: "row" },
      h("button", { type: "button", onclick: () => dialog.close() }, "Keep playing"),
      h("button", { type: "button", class: "danger", "data-testid": "confirm-resign", onclick: () => { dialog.close(); void resign(); } }, "Resign")));
  const sideSel = h("select", { "aria-label": "view from", onchange: () => { viewSeat = Number(sideSel.value); render(); } },
    ...[1, 2, 3, 4].map((x) => h("option", { value: x }, `View from ${seatName[x]}`)));
  const pgnBtn = h("button", { type: "button", onclick: () => void downloadPgn() }, "Download PGN4");
  const controls = h("div", { class: "controls" });
  const boardWrap = h("div", { class: "board-wrap" }, board.el);

  replace(root, h("div", { class: "game" },
    h("div", { class: "game-main" }, h("div", { class: "game-head" }, turn, status), boardWrap),
    h("aside", { class: "game-side" }, noticeEl, players, notesEl, controls, summary, h("h3", {}, "Moves"), moveList)), dialog);

  // The seat's round trip, measured while seated in the running match
  // (pinger.ts); moves still claim their think time, which wins.
  let pinger: Pinger | undefined;
  const follower = new Follower(api, matchId, (nv) => {
    v = nv;
    if (!mySeat && !spectator) mySeat = v.match.seats.find((x) => x.player?.playerId === me)?.seat ?? 0;
    if (mySeat && !pinger && v.match.status === MatchStatus.ACTIVE) {
      pinger = new Pinger(api.match, matchId, (r) => {
        const est = ms(r.roundTripEstimate) ?? 0;
        debug(`round trip ${ms(r.roundTrip)} ms, estimate ${est} ms`);
        (stats().pingEstimatesMs ??= []).push(est);
      });
      pinger.start();
    }
    if (pinger && v.match.status !== MatchStatus.ACTIVE) pinger.stop();
    if (mySeat && v.match.toMove === mySeat && v.match.ply !== turnPly) {
      // The update that gave us the turn: the think time starts now.
      turnPly = v.match.ply;
      turnSeenAt = performance.now();
    }
    if (!viewSeat) viewSeat = mySeat || 1;
    const ev = v.lastEvent;
    if (ev?.event.case === "moveApplied" && ev.event.value.effects && ev.event.value.effects.pointsGained > 0) {
      gained.set(ev.event.value.effects.seat, { pts: ev.event.value.effects.pointsGained, at: Date.now() });
    }
    if (!ratingsAsked && v.match.seats.length) void loadRatings();
    if (mySeat && claimsAllowed === undefined) {
      // The state may be a snapshot folded forward: its can_claim_win
      // proves that claims are allowed, but a false is stale. Ask.
      if (v.match.canClaimWin) claimsAllowed = true;
      else if (claimPossible(v.match, mySeat)) void askClaim();
    }
    render();
  });
  follower.start();
  const tick = setInterval(() => renderClocks(), 100);

  async function loadRatings(): Promise<void> {
    if (!v) return;
    ratingsAsked = true;
    try {
      const r = await api.rating.batchGetRatings({ ruleSet: v.match.ruleSet, playerIds: v.match.seats.map((x) => x.player?.playerId ?? "") });
      for (const x of r.ratings) ratings.set(x.playerId, x.displayRating);
      render();
    } catch {
      ratingsAsked = false; // try again at the next change
    }
  }

  function bottomEdge(): Edge {
    return edgeOf(v?.match.ruleSet ?? "", viewSeat || 1);
  }

  // render draws at most once per frame: bots can play dozens of moves a
  // second (zombies too), and drawing each would starve the page.
  let pending = false;
  function render(): void {
    if (pending) return;
    pending = true;
    const run = (): void => {
      if (!pending) return;
      pending = false;
      draw();
    };
    requestAnimationFrame(run);
    setTimeout(run, 100); // hidden tabs get no animation frames
  }

  function draw(): void {
    if (!v) return;
    const m = v.match;
    status.textContent = connText[v.conn] ?? v.conn;
    status.dataset.conn = v.conn;
    if (v.problem && v.conn !== "live") noticeEl.textContent = v.problem;
    else noticeEl.textContent = notice;
    const myTurn = mySeat !== 0 && m.toMove === mySeat && v.legal.length > 0 && !sending;
    const legal = myTurn ? new LegalMoves(v.legal, m.ruleSet, mySeat) : undefined;
    const lastMoves = new Map<number, { from: string; to: string }>();
    for (const mv of v.moves) lastMoves.set(mv.seat, { from: mv.from, to: mv.to });
    if (m.lastMove?.from && m.lastMove.to) lastMoves.set(m.lastMove.seat, { from: m.lastMove.from.name, to: m.lastMove.to.name });
    board.render({ bottom: bottomEdge(), pieces: m.pieces, lastMoves, checked: checkedSeats(m), legal });
    boardWrap.dataset.ply = String(m.ply);
    boardWrap.dataset.myTurn = myTurn ? "1" : "0";

    if (m.status === MatchStatus.ACTIVE) {
      const who = seatState(m, m.toMove);
      turn.textContent = m.toMove === mySeat ? (sending ? "Sending your move…" : "Your move") : `${seatName[m.toMove]} to move${who?.player ? ` (${who.player.displayName})` : ""}`;
      turn.className = "turn " + (seatClass[m.toMove] ?? "");
    } else {
      turn.textContent = m.status === MatchStatus.ABORTED ? "Game aborted" : "Game over";
      turn.className = "turn";
    }

    replace(players, ...[1, 2, 3, 4].map((seat) => playerCard(seat)));
    renderClocks();
    replace(notesEl, ...v.notes.map((n) => h("li", { class: seatClass[n.seat] ?? "", "data-note": n.kind, "data-seat": n.seat }, noteText(n, (x) => seatName[x] ?? `seat ${x}`))));

    const ctl: Node[] = [];
    if (mySeat && m.status === MatchStatus.ACTIVE && seatState(m, mySeat)?.status === SeatStatus.LIVE) {
      input.disabled = !myTurn;
      ctl.push(moveForm, resignBtn);
      if (claimsAllowed && claimPossible(m, mySeat) && !claiming) ctl.push(claimBtn);
    }
    if (spectator || !mySeat) ctl.push(sideSel);
    ctl.push(pgnBtn);
    replace(controls, ...ctl);
    sideSel.value = String(viewSeat);

    renderMoves();
    if (m.status !== MatchStatus.ACTIVE) renderSummary();
  }

  function playerCard(seat: number): HTMLElement {
    const m = v!.match;
    const st = seatState(m, seat);
    const pid = st?.player?.playerId ?? "";
    const rating = ratings.get(pid);
    const g = gained.get(seat);
    const showGain = g && Date.now() - g.at < 4000;
    const checked = checkedSeats(m).includes(seat);
    return h("div", {
      class: `player ${seatClass[seat]} ${m.toMove === seat ? "to-move" : ""} ${st?.status === SeatStatus.LIVE ? "" : "gone"}`,
      "data-seat": seat, "data-state": statusText[st?.status ?? 0] ?? "",
    },
      h("div", { class: "pname" }, h("span", { class: "swatch" }), st?.player?.displayName ?? seatName[seat],
        st?.player?.isBot ? h("span", { class: "tag" }, "bot") : null, seat === mySeat ? h("span", { class: "tag you" }, "you") : null),
      h("div", { class: "pinfo" },
        h("span", { class: "rating", title: "rating" }, rating !== undefined ? String(rating) : "…"),
        h("span", { class: "points", "data-points": st?.points ?? 0 }, `${st?.points ?? 0} pts`),
        showGain ? h("span", { class: "gain" }, `+${g!.pts}`) : null,
        h("span", { class: "state" }, statusText[st?.status ?? 0] ?? ""),
        checked ? h("span", { class: "tag check" }, "check") : null),
      h("div", { class: "clock", "data-clock": seat }, ""),
      h("div", { class: "disconnected", "data-grace": seat }, ""));
  }

  function renderClocks(): void {
    if (!v) return;
    const m = v.match;
    for (const el of players.querySelectorAll<HTMLElement>("[data-clock]")) {
      const seat = Number(el.dataset.clock);
      const c = clockState(m.clocks.find((x) => x.seat === seat));
      const left = timeLeft(c, Date.now(), v.skewMs);
      const first = c.running && awaitingFirstMove(seat, m.ply) && m.status === MatchStatus.ACTIVE;
      replace(el, formatClock(left), first ? h("span", { class: "first-move" }, "first move: 30 s limit") : null);
      el.title = first ? "The first move must be made within 30 seconds" : "";
      el.classList.toggle("running", c.running);
      el.classList.toggle("low", c.running && left < 10_000);
    }
    // A disconnected player's countdown to the end of their grace, when
    // their seat runs out of time (docs/match.md "Disconnects").
    for (const el of players.querySelectorAll<HTMLElement>("[data-grace]")) {
      const st = seatState(m, Number(el.dataset.grace));
      const g = st?.disconnectGraceEndsAt;
      el.textContent = g && st.status === SeatStatus.LIVE && m.status === MatchStatus.ACTIVE ? disconnectedText(timestampMs(g), Date.now(), v.skewMs) : "";
    }
  }

  function renderMoves(): void {
    if (!v) return;
    const rows = rounds(v.moves);
    const table = h("table", { class: "movelist" },
      h("thead", {}, h("tr", {}, h("th", {}, "#"), ...[1, 2, 3, 4].map((x) => h("th", { class: seatClass[x] }, seatName[x])))),
      h("tbody", {}, ...rows.map((r, i) => h("tr", {}, h("td", { class: "num" }, i + 1),
        ...[1, 2, 3, 4].map((seat) => {
          const mv = r.get(seat);
          return h("td", {}, mv ? h("span", {
            class: "mv" + (mv.zombie ? " zombie" : ""), "data-ply": mv.ply, "data-seat": mv.seat,
            title: mv.points ? `+${mv.points} points` : "",
          }, mv.text) : "");
        })))));
    const stick = moveList.scrollHeight - moveList.scrollTop - moveList.clientHeight < 40;
    replace(moveList, v.historyComplete ? null : h("p", { class: "muted" }, "Loading earlier moves…"), table);
    if (stick) moveList.scrollTop = moveList.scrollHeight;
  }

  function renderSummary(): void {
    if (!v) return;
    const m = v.match;
    if (m.status === MatchStatus.ABORTED) {
      const missed = v.notes.find((n) => n.kind === "firstMoveMissed");
      const mine = !!missed && mySeat !== 0 && missed.seat === mySeat;
      replace(summary, h("h2", {}, "Game aborted"), missed
        ? h("p", { "data-testid": "first-move-missed" }, mine
          ? "You did not make your first move in time: the game was aborted. No result, no rating change."
          : `${capitalize(noteText(missed, (x) => seatName[x] ?? `seat ${x}`))}. No result, no rating change.`)
        : h("p", {}, "An operator aborted this game: no result, no rating change."));
      // A game from the queue aborted for someone else's first move: the
      // matchmaker put this player back in the queue with the original
      // ticket; the search screen picks it up (docs/web.md).
      const queue = queueOfMatch(matchId);
      if (missed && mySeat && !mine && !spectator && queue && !requeued) {
        requeued = true;
        forgetQueueOfMatch(matchId);
        go(`/queue/${encodeURIComponent(queue)}?missed=${missed.seat}`);
      }
      return;
    }
    const res = m.result;
    if (!res) return;
    const pts = new Map(res.points.map((p) => [p.seat, p.points]));
    const myRank = res.ranking.indexOf(mySeat) + 1;
    const existing = summary.querySelector(".rating-change");
    replace(summary,
      h("h2", {}, mySeat ? `You finished ${ordinal(myRank)}` : "Final ranking"),
      h("p", { class: "muted" }, `The game ended because ${terminationText[res.termination] ?? "it ended"}.`),
      h("ol", { class: "ranking", "data-testid": "ranking" }, ...res.ranking.map((seat) => {
        const st = seatState(m, seat);
        const gone = v!.notes.some((n) => n.kind === "timedOutDisconnected" && n.seat === seat);
        return h("li", { class: seatClass[seat], "data-seat": seat },
          h("span", { class: "swatch" }), `${st?.player?.displayName ?? seatName[seat]} — ${pts.get(seat) ?? 0} points${gone ? " — timed out (disconnected)" : ""}`);
      })),
      existing ?? (mySeat && !m.unrated ? h("p", { class: "rating-change" }, "Rating change: waiting for the rating service…") : null),
      mySeat && m.unrated ? h("p", { class: "muted" }, "An unrated game: ratings do not change.") : null,
      mySeat ? rematchEl : null,
      mySeat ? h("p", {}, h("a", { href: "/", "data-nav": "" }, "Play again"), " · ", h("a", { href: "/rating", "data-nav": "" }, "Your rating")) : null);
    if (mySeat && !summaryAsked) {
      summaryAsked = true;
      if (!m.unrated) void ratingChange();
    }
    if (mySeat && !spectator && !rematch && m.status === MatchStatus.FINISHED) {
      rematch = new RematchFollower(api, matchId, (_r, problem) => { rematchProblem = problem; drawRematch(); },
        (newMatchId) => go(`/play/${encodeURIComponent(newMatchId)}`));
      rematch.start();
      rematchTick = setInterval(drawRematch, 1000);
      drawRematch();
    }
  }

  function drawRematch(): void {
    if (!rematch) return;
    const names = new Map(v?.match.seats.map((x) => [x.player?.playerId ?? "", x.player?.displayName ?? ""]) ?? []);
    const rv = rematchView(rematch.rematch, me, (id) => names.get(id) || id);
    setText(offerBtn, rv.rematch ? "Accept rematch" : "Rematch");
    rematchEl.dataset.state = rv.rematch ? String(rv.rematch.state) : "";
    setText(rematchText, rv.text);
    setText(rematchError, rematchProblem);
    rematchText.hidden = !rv.text;
    rematchError.hidden = !rematchProblem;
    offerBtn.hidden = !rv.canOffer;
    declineBtn.hidden = !rv.canDecline;
    rematchRow.hidden = !rv.canOffer && !rv.canDecline;
    rematchEl.hidden = rematchText.hidden && rematchError.hidden && rematchRow.hidden;
  }

  async function rematchCall(what: "offer" | "decline"): Promise<void> {
    if (!rematch) return;
    offerBtn.disabled = declineBtn.disabled = true;
    try {
      await (what === "offer" ? rematch.offer() : rematch.decline());
    } finally {
      offerBtn.disabled = declineBtn.disabled = false;
      drawRematch();
    }
  }

  async function ratingChange(): Promise<void> {
    // The rating service rates finished games asynchronously: ask until
    // this game is in the player's history.
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline && v) {
      try {
        const r = await api.rating.getRatingHistory({ playerId: me, ruleSet: v.match.ruleSet, pageSize: 10 });
        const e = r.entries.find((x) => x.matchId === matchId);
        if (e) {
          const el = summary.querySelector<HTMLElement>(".rating-change");
          if (el) {
            el.textContent = `Your rating: ${e.ratingBefore} → ${e.ratingAfter} (${e.change >= 0 ? "+" : ""}${e.change})`;
            el.dataset.before = String(e.ratingBefore);
            el.dataset.after = String(e.ratingAfter);
            el.dataset.change = String(e.change);
          }
          return;
        }
      } catch (err) {
        if (!retryable(err) && reason(err) !== "PLAYER_NOT_FOUND") {
          const el = summary.querySelector(".rating-change");
          if (el) el.textContent = describe(err);
          return;
        }
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  }

  function typed(): void {
    if (!v || !mySeat) return;
    const text = input.value.trim();
    if (!text) return;
    const legal = new LegalMoves(v.legal, v.match.ruleSet, mySeat);
    // A text naming a legal move is sent as the server wrote it; anything
    // else goes as typed, and the server's answer explains.
    void send(legal.match(text, v.match.ruleSet, mySeat) ?? text).then((ok) => { if (ok) input.value = ""; });
  }

  // send plays move text with one client move id for all its attempts:
  // a retry after a network drop is applied once at most (MakeMove is
  // idempotent by client_move_id).
  async function send(text: string): Promise<boolean> {
    if (!v || sending) return false;
    sending = true;
    notice = "";
    draw(); // at once: the board takes no second move meanwhile
    const bo = new Backoff();
    const onOnline = (): void => bo.wake();
    addEventListener("online", onOnline);
    debug(`move ${text} at ply ${v.match.ply}`);
    try {
      const out = await sendMove({
        makeMove: (req, opts) => api.match.makeMove(req, opts),
        stillWanted: () => v?.match.status === MatchStatus.ACTIVE,
        retrying: (err) => {
          debug(`move ${text} failed, retrying: ${String(err)}`);
          notice = navigator.onLine ? "Sending your move again…" : "You are offline: your move will be sent when the connection is back.";
          render();
        },
        backoff: bo,
        turnSeenAt: turnPly === v.match.ply ? turnSeenAt : undefined,
      }, matchId, text, v.match.ply);
      if (!out.ok) {
        debug(`move ${text} failed: ${String(out.error)}`);
        notice = describe(out.error);
        if (out.refresh) follower.refresh();
        return false;
      }
      debug(`move ${text} done in ${Math.round(out.ms)} ms after ${out.attempts} attempt(s)`);
      if (out.attempts === 1) stats().moveRttMs.push(out.ms);
      else stats().moveRetries += out.attempts - 1;
      notice = "";
      sending = false;
      follower.applyEvents(out.response.events);
      return true;
    } finally {
      removeEventListener("online", onOnline);
      sending = false;
      render();
    }
  }

  // askClaim asks the server whether this player may claim the win
  // (Match.can_claim_win): the answer settles whether the match allows
  // claims (claimRule), or, when the game moved on meanwhile, is asked
  // again at the next change.
  async function askClaim(): Promise<void> {
    if (claimAsking) return;
    claimAsking = true;
    try {
      const r = await api.match.getMatch({ matchId }, { timeoutMs: 8_000 });
      if (r.match && claimsAllowed === undefined) claimsAllowed = claimRule(r.match, mySeat);
    } catch {
      // asked again at the next change
    } finally {
      claimAsking = false;
      render();
    }
  }

  async function claimWin(): Promise<void> {
    claiming = true;
    render();
    try {
      const r = await api.match.claimWin({ matchId }, { timeoutMs: 8_000 });
      follower.applyEvents(r.events);
      notice = "You claimed the win.";
    } catch (err) {
      notice = describe(err);
    } finally {
      claiming = false;
      render();
    }
  }

  function confirmResign(): void {
    if (typeof dialog.showModal === "function") dialog.showModal();
    else if (confirm("Resign this game?")) void resign();
  }

  async function resign(): Promise<void> {
    const bo = new Backoff();
    for (let attempt = 0; attempt < 10; attempt++) {
      try {
        const r = await api.match.resign({ matchId }, { timeoutMs: 8_000 });
        follower.applyEvents(r.events);
        notice = "You resigned. The server plays on for your army.";
        render();
        return;
      } catch (err) {
        if (reason(err) === "SEAT_NOT_LIVE") return; // a retried resignation that succeeded
        if (!retryable(err)) {
          notice = describe(err);
          render();
          return;
        }
        await bo.wait();
      }
    }
  }

  async function downloadPgn(): Promise<void> {
    try {
      const r = await api.match.exportGame({ matchId });
      const url = URL.createObjectURL(new Blob([r.pgn4], { type: "application/x-chess-pgn" }));
      const a = h("a", { href: url, download: `fourkingdoms-${matchId}.pgn4` });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (err) {
      notice = describe(err);
      render();
    }
  }

  return () => {
    pinger?.stop();
    clearInterval(tick);
    clearInterval(rematchTick);
    rematch?.stop();
    follower.stop();
  };
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

function ordinal(n: number): string {
  return ["", "first", "second", "third", "fourth"][n] ?? `#${n}`;
}
