import { test } from "node:test";
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { TimestampSchema } from "@bufbuild/protobuf/wkt";
import { MatchEventSchema } from "../src/gen/fourkingdoms/events/v1/events_pb";
import { CastlingSide, ClockSchema, PieceKind, SeatStatus, Termination } from "../src/gen/fourkingdoms/game/v1/game_pb";
import { MatchSchema, MatchStatus } from "../src/gen/fourkingdoms/match/v1/match_pb";
import { claimPossible, claimRule, eventNote, fold, moveRecord, noteText, rounds, type MoveRecord } from "../src/match";
import { decodeErrorInfo } from "../src/errors";

function match() {
  return create(MatchSchema, {
    status: MatchStatus.ACTIVE, ruleSet: "fourkingdoms", version: 5n, ply: 3,
    seats: [1, 2, 3, 4].map((seat) => ({ seat, status: SeatStatus.LIVE })),
    pieces: [
      { square: "h1", seat: 1, kind: PieceKind.KING }, { square: "k1", seat: 1, kind: PieceKind.ROOK },
      { square: "e2", seat: 1, kind: PieceKind.PAWN }, { square: "f3", seat: 2, kind: PieceKind.KNIGHT },
      { square: "n8", seat: 2, kind: PieceKind.KING },
    ],
  });
}

function move(version: bigint, ply: number, seat: number, from: string, to: string, extra: object = {}) {
  return create(MatchEventSchema, {
    version, ply,
    event: { case: "moveApplied", value: { effects: { seat, move: `${from}-${to}`, from: { name: from }, to: { name: to }, ...extra }, toMove: seat % 4 + 1 } },
  });
}

test("a capture removes the captured piece and moves the mover", () => {
  const m = match();
  fold(m, move(6n, 4, 1, "e2", "f3", { captured: { kind: PieceKind.KNIGHT, owner: 2 } }));
  assert.equal(m.version, 6n);
  assert.equal(m.ply, 4);
  assert.equal(m.toMove, 2);
  assert.deepEqual(m.pieces.filter((p) => p.square === "f3").map((p) => p.seat), [1]);
  assert.equal(m.pieces.length, 4);
});

test("castling moves the rook over the king", () => {
  const m = match();
  fold(m, move(6n, 4, 1, "h1", "j1", { castling: CastlingSide.SHORT, piece: PieceKind.KING }));
  assert.equal(m.pieces.find((p) => p.kind === PieceKind.ROOK)?.square, "i1");
  assert.equal(m.pieces.find((p) => p.kind === PieceKind.KING && p.seat === 1)?.square, "j1");
});

test("a resignation makes a zombie; an elimination kills the army", () => {
  const m = match();
  fold(m, create(MatchEventSchema, { version: 6n, ply: 3, event: { case: "playerResigned", value: { seat: 2, frozenPoints: 7 } } }));
  assert.equal(m.seats[1]!.status, SeatStatus.ZOMBIE);
  assert.equal(m.seats[1]!.resultPoints, 7);
  assert.ok(m.pieces.filter((p) => p.seat === 2).every((p) => p.zombie));
  fold(m, create(MatchEventSchema, { version: 7n, ply: 3, event: { case: "playerEliminated", value: { elimination: { seat: 2 }, resultPoints: 7 } } }));
  assert.equal(m.seats[1]!.status, SeatStatus.OUT);
  assert.ok(m.pieces.filter((p) => p.seat === 2).every((p) => p.dead && !p.zombie));
});

test("rounds start anew when the seat order wraps, skipping seats that are out", () => {
  const mv = (ply: number, seat: number): MoveRecord => ({ ply, seat, text: "", zombie: false, points: 0, from: "", to: "" });
  const r = rounds([mv(1, 1), mv(2, 2), mv(3, 3), mv(4, 4), mv(5, 1), mv(6, 3), mv(7, 1)]);
  assert.deepEqual(r.map((x) => [...x.keys()]), [[1, 2, 3, 4], [1, 3], [1]]);
  assert.equal(moveRecord(move(9n, 7, 2, "a4", "a5"))?.ply, 7);
});

test("decodeErrorInfo reads reason, domain and metadata", () => {
  // ErrorInfo{reason: "PLY_MISMATCH", domain: "d", metadata: {current_ply: "12"}}
  const enc = new TextEncoder();
  const str = (field: number, s: string) => { const b = enc.encode(s); return [field << 3 | 2, b.length, ...b]; };
  const entry = [...str(1, "current_ply"), ...str(2, "12")];
  const bytes = new Uint8Array([...str(1, "PLY_MISMATCH"), ...str(2, "d"), 3 << 3 | 2, entry.length, ...entry]);
  assert.deepEqual(decodeErrorInfo(bytes), { reason: "PLY_MISMATCH", domain: "d", metadata: { current_ply: "12" } });
});

function endgame(red: number, green: number, live = [1, 4]) {
  const m = match();
  for (const s of m.seats) {
    s.status = live.includes(s.seat) ? SeatStatus.LIVE : SeatStatus.ZOMBIE;
    s.points = s.seat === 1 ? red : s.seat === 4 ? green : 0;
  }
  return m;
}

test("a claim is possible for the leader of the last two live players by more than 20", () => {
  assert.equal(claimPossible(endgame(50, 29), 1), true);
  assert.equal(claimPossible(endgame(49, 29), 1), false, "a lead of exactly 20");
  assert.equal(claimPossible(endgame(50, 29), 4), false, "the trailing player");
  assert.equal(claimPossible(endgame(50, 29), 2), false, "a seat that is not live");
  assert.equal(claimPossible(endgame(50, 29, [1, 3, 4]), 1), false, "three live players");
  const done = endgame(50, 29);
  done.status = MatchStatus.FINISHED;
  assert.equal(claimPossible(done, 1), false, "a finished match");
});

test("the server's answer settles whether the match allows claims", () => {
  const yes = endgame(50, 29);
  yes.canClaimWin = true;
  assert.equal(claimRule(yes, 1), true);
  assert.equal(claimRule(endgame(50, 29), 1), false, "possible, yet refused: the rule set has no claims");
  assert.equal(claimRule(endgame(40, 29), 1), undefined, "not possible at that version: says nothing");
});

test("a claimed win ends the folded match", () => {
  const m = endgame(50, 29);
  fold(m, create(MatchEventSchema, { version: 6n, ply: 3, event: { case: "winClaimed", value: { seat: 1 } } }));
  fold(m, create(MatchEventSchema, { version: 7n, ply: 3, event: { case: "gameOver", value: { result: { termination: Termination.CLAIMED_WIN, points: [{ seat: 1, points: 110 }] } } } }));
  assert.equal(m.status, MatchStatus.FINISHED);
  assert.equal(m.version, 7n);
  assert.equal(claimPossible(m, 1), false);
});

const ev = (version: bigint, event: object) => create(MatchEventSchema, { version, ply: 3, event: event as never });
const grace = (s: bigint) => ({ seconds: s, nanos: 0 });
const names = (s: number) => ["", "Red", "Blue", "Yellow", "Green"][s]!;

test("a disconnected seat's grace end is set, then cleared when the player comes back", () => {
  const m = match();
  fold(m, ev(6n, { case: "playerDisconnected", value: { seat: 2, graceEndsAt: grace(1000n) } }));
  assert.equal(m.version, 6n);
  assert.equal(m.seats[1]!.disconnectGraceEndsAt?.seconds, 1000n);
  assert.equal(m.seats[0]!.disconnectGraceEndsAt, undefined, "other seats untouched");
  fold(m, ev(7n, { case: "playerReconnected", value: { seat: 2 } }));
  assert.equal(m.seats[1]!.disconnectGraceEndsAt, undefined);
});

test("a disconnected seat's grace end is cleared when the seat leaves play or the match ends", () => {
  const cases: Array<[string, object]> = [
    ["timed out", { case: "playerTimedOut", value: { seat: 2, disconnected: true } }],
    ["resigned", { case: "playerResigned", value: { seat: 2 } }],
    ["eliminated", { case: "playerEliminated", value: { elimination: { seat: 2 } } }],
    ["game over", { case: "gameOver", value: { result: { termination: Termination.LAST_PLAYER_STANDING } } }],
    ["aborted", { case: "matchAborted", value: { firstMoveMissed: 3 } }],
  ];
  for (const [name, e] of cases) {
    const m = match();
    m.seats[1]!.disconnectGraceEndsAt = create(TimestampSchema, grace(1000n)); // as a snapshot carries it
    fold(m, ev(6n, e));
    assert.equal(m.seats[1]!.disconnectGraceEndsAt, undefined, name);
  }
});

test("a clock credit replaces the clocks and makes a note", () => {
  const m = match();
  m.clocks = [1, 2, 3, 4].map((seat) => create(ClockSchema, { seat, remaining: { seconds: 10n, nanos: 0 }, running: seat === 2 }));
  const credit = ev(6n, {
    case: "clockCredited",
    value: { seat: 2, credited: { seconds: 5n, nanos: 240_000_000 }, clocks: [1, 2, 3, 4].map((seat) => ({ seat, remaining: { seconds: seat === 2 ? 15n : 10n, nanos: 0 }, running: seat === 2, turnDeadline: { seconds: 2000n, nanos: 0 } })) },
  });
  fold(m, credit);
  assert.equal(m.clocks.find((c) => c.seat === 2)?.remaining?.seconds, 15n);
  assert.equal(m.clocks.find((c) => c.seat === 2)?.turnDeadline?.seconds, 2000n);
  const n = eventNote(credit);
  assert.deepEqual(n, { version: 6n, kind: "credit", seat: 2, creditedMs: 5240 });
  assert.equal(noteText(n!, names), "Blue got 5.2 s back for a server outage");
});

test("notes for a disconnected timeout and a first-move abort; none for an ordinary time loss", () => {
  const out = eventNote(ev(8n, { case: "playerTimedOut", value: { seat: 3, disconnected: true } }));
  assert.equal(out && noteText(out, names), "Yellow timed out (disconnected)");
  assert.equal(eventNote(ev(8n, { case: "playerTimedOut", value: { seat: 3 } })), undefined);
  const ab = eventNote(ev(9n, { case: "matchAborted", value: { firstMoveMissed: 2 } }));
  assert.equal(ab && noteText(ab, names), "aborted: Blue did not make a first move");
  assert.equal(eventNote(ev(9n, { case: "matchAborted", value: { reason: "operator" } })), undefined);
  assert.equal(eventNote(move(6n, 4, 1, "e2", "e4")), undefined);
});
