import { test } from "node:test";
import assert from "node:assert/strict";
import { describe, retryDelayMs, reason } from "../src/errors";
import { Seat } from "../src/gen/fourkingdoms/game/v1/game_pb";
import { SeatMode, TableState, type Table } from "../src/gen/fourkingdoms/matchmaking/v1/matchmaking_pb";
import {
  codeFromHash, createTableRequest, followTable, formProblem, formatCode, inviteLink, joinTable, lobbyView, normalizeCode,
  startTable, type LobbyEnd, type TableForm,
} from "../src/tables";
import { FakeServer, eventually } from "./fakeserver";

test("codes are read as typed or pasted, and typos are caught before they cost a guess", () => {
  for (const [typed, want] of [
    ["7KQ2-M9XD-4TBA", "7KQ2M9XD4TBA"],
    ["7kq2 m9xd 4tba", "7KQ2M9XD4TBA"],
    ["7KQ2M9XD4TBO", "7KQ2M9XD4TB0"], // O read as zero, I and L as one (Crockford)
    ["iKQ2M9XD4TBl", "1KQ2M9XD4TB1"],
    ["7KQ2-M9XD-4TB", ""], // too short
    ["7KQ2-M9XD-4TBAX", ""], // too long
    ["7KQ2-M9XD-4TBU", ""], // U is not in the alphabet
    ["", ""],
  ] as const) {
    assert.equal(normalizeCode(typed), want, typed);
  }
  assert.equal(formatCode("7kq2m9xd4tba"), "7KQ2-M9XD-4TBA");
});

test("an invite link's fragment gives its code; other fragments give none", () => {
  assert.equal(codeFromHash("#table=7KQ2M9XD4TBA"), "7KQ2M9XD4TBA");
  assert.equal(codeFromHash("#table=7kq2-m9xd-4tba"), "7KQ2M9XD4TBA");
  assert.equal(codeFromHash("table=7KQ2M9XD4TBA&x=1"), "7KQ2M9XD4TBA");
  assert.equal(codeFromHash("#table=nope"), "");
  assert.equal(codeFromHash("#moves"), "");
  assert.equal(codeFromHash(""), "");
});

test("the invite link is the deployment's when it has one, else this origin's with the code in the fragment", () => {
  assert.equal(inviteLink("http://localhost:8080", { code: "7KQ2-M9XD-4TBA", link: "" }), "http://localhost:8080/#table=7KQ2M9XD4TBA");
  assert.equal(inviteLink("http://localhost:8080", { code: "7KQ2M9XD4TBA", link: "https://example.org/#table=7KQ2M9XD4TBA" }), "https://example.org/#table=7KQ2M9XD4TBA");
  // The link leads back to the code.
  assert.equal(codeFromHash(new URL(inviteLink("http://x", { code: "7KQ2M9XD4TBA", link: "" })).hash), "7KQ2M9XD4TBA");
});

const form = (over: Partial<TableForm> = {}): TableForm => ({
  ruleSet: "fourkingdoms", timeControl: { $typeName: "fourkingdoms.game.v1.TimeControl", name: "5+5", mode: 0 } as TableForm["timeControl"],
  rated: false, hostSeat: Seat.BLUE,
  seats: [{ mode: "open", botLevel: "" }, { mode: "open", botLevel: "" }, { mode: "bot", botLevel: "random" }, { mode: "bot", botLevel: "greedy" }],
  ...over,
});

test("the form's problems are said before anything is sent", () => {
  assert.equal(formProblem(form()), "");
  assert.match(formProblem(form({ timeControl: undefined })), /time control/);
  assert.match(formProblem(form({ hostSeat: Seat.YELLOW })), /own seat must be open/);
  assert.match(formProblem(form({ seats: [...form().seats.slice(0, 3), { mode: "bot", botLevel: "" }] })), /level for every bot/);
});

test("the CreateTable request lists every seat with its mode and bot level, and the host's seat", () => {
  const r = createTableRequest(form({ rated: true }));
  assert.equal(r.ruleSet, "fourkingdoms");
  assert.equal(r.timeControl?.name, "5+5");
  assert.equal(r.rated, true);
  assert.equal(r.hostSeat, Seat.BLUE);
  assert.deepEqual(r.seats?.map((s) => [s.seat, s.mode, s.botLevel]), [
    [Seat.RED, SeatMode.OPEN, ""], [Seat.BLUE, SeatMode.OPEN, ""], [Seat.YELLOW, SeatMode.BOT, "random"], [Seat.GREEN, SeatMode.BOT, "greedy"],
  ]);
});

test("a friend joins by the link, both lobbies follow the table, the host starts with bots and both go to the same match", async () => {
  const srv = new FakeServer();
  const host = srv.api("alice");
  const friend = srv.api("bob");
  const created = (await host.matchmaking.createTable(createTableRequest(form()))).table!;
  const link = inviteLink("http://localhost:8080", created);
  const code = codeFromHash(new URL(link).hash);
  assert.equal(code, created.code);

  const seen = { alice: [] as Table[], bob: [] as Table[] };
  const ends: Record<string, LobbyEnd> = {};
  const stopA = followTable(host, code, (t) => seen.alice.push(t), (e) => { ends.alice = e; });
  await eventually(() => seen.alice.length === 1, "the host's first state");
  assert.ok(lobbyView(seen.alice[0]!, "alice").isHost);
  assert.deepEqual(lobbyView(seen.alice[0]!, "alice").freeOpen, [Seat.RED]);

  const j = await joinTable(friend, code);
  assert.equal(j.seat, Seat.RED);
  const stopB = followTable(friend, code, (t) => seen.bob.push(t), (e) => { ends.bob = e; });
  // The host's lobby shows the friend without reloading.
  await eventually(() => seen.alice.some((t) => lobbyView(t, "bob").mySeat === Seat.RED), "the friend in the host's lobby");
  const v = lobbyView(seen.alice.at(-1)!, "bob");
  assert.equal(v.isHost, false);
  assert.equal(v.needsBots, false);

  // Only the host may start.
  await assert.rejects(startTable(friend, code, true, "greedy"), (e) => reason(e) === "NOT_HOST" && describe(e) === "Only the host can start the table.");
  const t = await startTable(host, code, true, "greedy");
  assert.equal(t.state, TableState.STARTED);
  await eventually(() => !!ends.alice && !!ends.bob, "both lobbies to end");
  for (const who of ["alice", "bob"]) {
    const e = ends[who]!;
    assert.equal(e.kind, "started", who);
    assert.equal(e.kind === "started" && e.matchId, t.matchId, who);
  }
  stopA();
  stopB();
});

test("a host with free open seats starts only with fill with bots (SEATS_OPEN otherwise), and the bots get the bot level asked", async () => {
  const srv = new FakeServer();
  const host = srv.api("alice");
  const { code } = (await host.matchmaking.createTable(createTableRequest(form()))).table!;
  await assert.rejects(startTable(host, code, false, ""), (e) => reason(e) === "SEATS_OPEN" && /fill the free seats with bots/.test(describe(e)));
  assert.equal(srv.tables.get(code)!.state, TableState.OPEN, "a refused start changes nothing");
  await startTable(host, code, true, "random");
  assert.ok(srv.calls.includes("StartTable alice"));
  assert.equal(srv.tables.get(code)!.seats.filter((s) => s.player?.isBot).length, 3);
});

test("refusals of a join are plain sentences: unknown code, full table, and a guesser is told to wait", async () => {
  const srv = new FakeServer();
  const host = srv.api("alice");
  const full = (await host.matchmaking.createTable(createTableRequest(form({
    hostSeat: Seat.RED, seats: [{ mode: "open", botLevel: "" }, { mode: "bot", botLevel: "greedy" }, { mode: "bot", botLevel: "greedy" }, { mode: "bot", botLevel: "greedy" }],
  })))).table!;
  const guest = srv.api("mallory");
  await assert.rejects(joinTable(guest, full.code), (e) => reason(e) === "TABLE_FULL" && describe(e) === "That table is full: every open seat is taken.");
  for (let i = 0; i < 3; i++) {
    await assert.rejects(joinTable(guest, "ZZZZZZZZZZZZ"), (e) => reason(e) === "TABLE_NOT_FOUND" && /no table with that code/.test(describe(e)));
  }
  await assert.rejects(joinTable(guest, "ZZZZZZZZZZZZ"), (e) => {
    assert.equal(reason(e), "TOO_MANY_GUESSES");
    assert.equal(retryDelayMs(e), 30_000);
    assert.match(describe(e), /Too many wrong table codes.*try again in 30 s/);
    return true;
  });
  // Joining a table one sits at returns it unchanged.
  const again = await joinTable(host, full.code);
  assert.equal(again.seat, Seat.RED);
});

test("the lobby's stream is reopened after a drop and still sees the start", async () => {
  const srv = new FakeServer();
  const host = srv.api("alice");
  const friend = srv.api("bob");
  const { code } = (await host.matchmaking.createTable(createTableRequest(form()))).table!;
  const seen: Table[] = [];
  let end: LobbyEnd | undefined;
  let drops = 0;
  const stop = followTable(friend, code, (t) => seen.push(t), (e) => { end = e; }, () => drops++);
  await eventually(() => seen.length === 1, "the first state");
  srv.dropStreams = 1;
  await joinTable(friend, code); // a change: the stream drops instead of sending it
  await eventually(() => drops === 1, "the drop");
  await eventually(() => seen.some((t) => lobbyView(t, "bob").mySeat !== Seat.UNSPECIFIED), "the join after reconnecting");
  await startTable(host, code, true, "greedy");
  await eventually(() => !!end, "the end");
  assert.equal(end?.kind, "started");
  assert.equal(srv.calls.filter((c) => c === "WatchTable bob").length, 2);
  stop();
});

test("the last player leaving closes the table; the host leaving passes it on", async () => {
  const srv = new FakeServer();
  const host = srv.api("alice");
  const friend = srv.api("bob");
  const { code } = (await host.matchmaking.createTable(createTableRequest(form()))).table!;
  await joinTable(friend, code);
  let end: LobbyEnd | undefined;
  const seen: Table[] = [];
  const stop = followTable(friend, code, (t) => seen.push(t), (e) => { end = e; });
  await host.matchmaking.leaveTable({ code });
  await eventually(() => seen.some((t) => lobbyView(t, "bob").isHost), "bob to be host");
  await friend.matchmaking.leaveTable({ code });
  await eventually(() => !!end, "the end");
  assert.equal(end?.kind, "closed");
  stop();
  // A closed table's code is unknown from then on.
  await assert.rejects(joinTable(srv.api("carol"), code), (e) => reason(e) === "TABLE_NOT_FOUND");
});

test("watching an unknown code ends with the refusal, not a retry loop", async () => {
  const srv = new FakeServer();
  let end: LobbyEnd | undefined;
  followTable(srv.api("bob"), "ZZZZZZZZZZZZ", () => {}, (e) => { end = e; });
  await eventually(() => !!end, "the end");
  assert.equal(end?.kind, "failed");
  assert.equal(end?.kind === "failed" && reason(end.err), "TABLE_NOT_FOUND");
  assert.equal(srv.calls.length, 1);
});
