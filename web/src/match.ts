// The client's view of a match: a snapshot folded forward with events, as
// cmd/internal/client.Fold does for the terminal client, plus what the
// screen needs and the server does not send per event: the pieces after
// each move (moved locally, then replaced by the next GetMatch snapshot)
// and the move list.

import { clone } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { MatchEvent } from "./gen/fourkingdoms/events/v1/events_pb";
import {
  CastlingSide, ExitReason, PieceKind, SeatStatus,
  type Clock, type MoveEffects, type SeatPoints,
} from "./gen/fourkingdoms/game/v1/game_pb";
import { MatchSchema, MatchStatus, type Match, type SeatState } from "./gen/fourkingdoms/match/v1/match_pb";
import { edgeOf } from "./board";
import { castlingRook } from "./notation";
import type { ClockState } from "./clock";

/** One move of the move list. */
export interface MoveRecord {
  ply: number;
  seat: number;
  text: string;
  zombie: boolean;
  points: number;
  /** The squares the piece left and reached (the king's for castling). */
  from: string;
  to: string;
}

/** over reports whether m has ended (finished or aborted). */
export function over(m: Match): boolean {
  return m.status === MatchStatus.FINISHED || m.status === MatchStatus.ABORTED;
}

/** seatState finds seat s of m. */
export function seatState(m: Match, s: number): SeatState | undefined {
  return m.seats.find((x) => x.seat === s);
}

/** clockState turns a server clock into plain milliseconds. */
export function clockState(c: Clock | undefined): ClockState {
  if (!c) return { remainingMs: 0, running: false, deadlineMs: 0 };
  const r = c.remaining;
  return {
    remainingMs: r ? Number(r.seconds) * 1000 + Math.floor(r.nanos / 1e6) : 0,
    running: c.running,
    deadlineMs: c.turnDeadline ? timestampMs(c.turnDeadline) : 0,
  };
}

/**
 * fold applies ev (the next version) to m in place: statuses, points,
 * clocks, the seat to move, the last move, disconnected players' grace
 * ends, the result, and the pieces a move displaces.
 */
export function fold(m: Match, ev: MatchEvent): void {
  m.version = ev.version;
  m.ply = ev.ply;
  const seat = (s: number): SeatState => seatState(m, s) ?? ({} as SeatState);
  const setPoints = (ps: SeatPoints[]): void => {
    for (const p of ps) {
      const st = seat(p.seat);
      st.points = p.points;
      if (st.status === SeatStatus.LIVE) st.resultPoints = p.points;
    }
  };
  const markPieces = (s: number, status: SeatStatus): void => {
    for (const p of m.pieces) {
      if (p.seat !== s) continue;
      if (status === SeatStatus.OUT) { p.dead = true; p.zombie = false; }
      if (status === SeatStatus.ZOMBIE) p.zombie = true;
    }
  };
  const e = ev.event;
  switch (e.case) {
    case "moveApplied": {
      const fx = e.value.effects;
      if (fx) {
        m.lastMove = fx;
        movePieces(m, fx);
      }
      m.toMove = e.value.toMove;
      if (e.value.clocks.length > 0) m.clocks = e.value.clocks;
      setPoints(e.value.points);
      break;
    }
    case "playerResigned": {
      const st = seat(e.value.seat);
      st.disconnectGraceEndsAt = undefined;
      st.status = SeatStatus.ZOMBIE;
      st.exitReason = ExitReason.RESIGNED;
      st.resultPoints = e.value.frozenPoints;
      markPieces(e.value.seat, SeatStatus.ZOMBIE);
      break;
    }
    case "playerTimedOut": {
      const st = seat(e.value.seat);
      st.disconnectGraceEndsAt = undefined;
      st.status = SeatStatus.ZOMBIE;
      st.exitReason = ExitReason.TIMED_OUT;
      st.resultPoints = e.value.frozenPoints;
      markPieces(e.value.seat, SeatStatus.ZOMBIE);
      break;
    }
    case "playerEliminated": {
      const el = e.value.elimination;
      if (!el) break;
      const st = seat(el.seat);
      st.disconnectGraceEndsAt = undefined;
      st.status = SeatStatus.OUT;
      st.exitReason = el.reason;
      setPoints(e.value.points);
      st.resultPoints = e.value.resultPoints;
      markPieces(el.seat, SeatStatus.OUT);
      break;
    }
    case "gameOver": {
      m.status = MatchStatus.FINISHED;
      m.result = e.value.result;
      m.toMove = 0;
      for (const p of m.result?.points ?? []) seat(p.seat).resultPoints = p.points;
      for (const c of m.clocks) { c.running = false; c.turnDeadline = undefined; }
      m.finishedAt = ev.occurredAt;
      for (const st of m.seats) st.disconnectGraceEndsAt = undefined;
      break;
    }
    case "matchAborted":
      m.status = MatchStatus.ABORTED;
      m.toMove = 0;
      for (const c of m.clocks) { c.running = false; c.turnDeadline = undefined; }
      m.finishedAt = ev.occurredAt;
      for (const st of m.seats) st.disconnectGraceEndsAt = undefined;
      break;
    // Presence and outages (docs/match.md "Disconnects", "Outages"): the
    // grace end is what the countdown counts to; a credit moves the clocks.
    case "playerDisconnected":
      seat(e.value.seat).disconnectGraceEndsAt = e.value.graceEndsAt;
      break;
    case "playerReconnected":
      seat(e.value.seat).disconnectGraceEndsAt = undefined;
      break;
    case "clockCredited":
      if (e.value.clocks.length > 0) m.clocks = e.value.clocks;
      break;
    default:
      // An event kind this client does not know: only its version counts.
      break;
  }
}

// movePieces moves the pieces of one move: the captured piece leaves, the
// mover lands (as a queen when promoted), a castling rook follows its
// king. En passant captures a pawn off the target square; that pawn stays
// until the next snapshot replaces the pieces.
function movePieces(m: Match, fx: MoveEffects): void {
  const from = fx.from?.name, to = fx.to?.name;
  if (!from || !to) return;
  const mover = m.pieces.find((p) => p.square === from);
  m.pieces = m.pieces.filter((p) => p.square !== to || p === mover);
  if (mover) {
    mover.square = to;
    if (fx.promotion !== PieceKind.UNSPECIFIED) {
      mover.kind = fx.promotion;
      mover.promoted = true;
    }
  }
  if (fx.castling !== CastlingSide.UNSPECIFIED) {
    const r = castlingRook(edgeOf(m.ruleSet, fx.seat), fx.castling === CastlingSide.SHORT ? "short" : "long");
    const rook = m.pieces.find((p) => p.square === r.from && p.seat === fx.seat);
    if (rook) rook.square = r.to;
  }
}

/** moveRecord is the move list's entry for a MoveApplied event, if ev is one. */
export function moveRecord(ev: MatchEvent): MoveRecord | undefined {
  if (ev.event.case !== "moveApplied") return undefined;
  const fx = ev.event.value.effects;
  if (!fx) return undefined;
  return {
    ply: ev.ply, seat: fx.seat, text: fx.move, zombie: fx.isZombieMove, points: fx.pointsGained,
    from: fx.from?.name ?? "", to: fx.to?.name ?? "",
  };
}

/**
 * An event worth a line of its own beyond the move list: time given back
 * after a server outage, a seat timed out because its player stayed
 * disconnected, a match aborted because a seat missed its first move. The
 * Match message does not keep these, so the follower keeps them beside it
 * (by version, like the moves).
 */
export type EventNote =
  | { version: bigint; kind: "credit"; seat: number; creditedMs: number }
  | { version: bigint; kind: "timedOutDisconnected"; seat: number }
  | { version: bigint; kind: "firstMoveMissed"; seat: number };

/** eventNote is the note for ev, if ev is worth one. */
export function eventNote(ev: MatchEvent): EventNote | undefined {
  const e = ev.event;
  switch (e.case) {
    case "clockCredited": {
      const d = e.value.credited;
      const creditedMs = d ? Number(d.seconds) * 1000 + Math.floor(d.nanos / 1e6) : 0;
      return { version: ev.version, kind: "credit", seat: e.value.seat, creditedMs };
    }
    case "playerTimedOut":
      return e.value.disconnected ? { version: ev.version, kind: "timedOutDisconnected", seat: e.value.seat } : undefined;
    case "matchAborted":
      return e.value.firstMoveMissed ? { version: ev.version, kind: "firstMoveMissed", seat: e.value.firstMoveMissed } : undefined;
    default:
      return undefined;
  }
}

/** noteText writes a note as a line; name names a seat ("Blue"). */
export function noteText(n: EventNote, name: (seat: number) => string): string {
  switch (n.kind) {
    case "credit":
      return `${name(n.seat)} got ${(n.creditedMs / 1000).toFixed(1)} s back for a server outage`;
    case "timedOutDisconnected":
      return `${name(n.seat)} timed out (disconnected)`;
    case "firstMoveMissed":
      return `aborted: ${name(n.seat)} did not make a first move`;
  }
}

/**
 * rounds groups a move list into rounds of play: a new round starts when a
 * seat moves that does not come after the previous mover in seat order
 * (seats that are out are skipped, so a round can have fewer than four).
 * Each round is indexed by seat (1..4).
 */
export function rounds(moves: readonly MoveRecord[]): Array<Map<number, MoveRecord>> {
  const out: Array<Map<number, MoveRecord>> = [];
  let cur: Map<number, MoveRecord> | undefined;
  let last = 0;
  for (const mv of moves) {
    if (!cur || mv.seat <= last) {
      cur = new Map();
      out.push(cur);
    }
    cur.set(mv.seat, mv);
    last = mv.seat;
  }
  return out;
}

/** copy returns a deep copy of m (the follower's state is never shared). */
export function copy(m: Match): Match {
  return clone(MatchSchema, m);
}

/** checkedSeats lists the seats whose kings the last move left in check. */
export function checkedSeats(m: Match): number[] {
  return m.status === MatchStatus.ACTIVE ? (m.lastMove?.checkedSeats ?? []) : [];
}

/**
 * claimPossible reports whether seat may claim the win in m as far as the
 * client can tell from the folded state (docs/rules.md 8.3): the match is
 * active, exactly two seats are live, seat is one of them and leads the
 * other by more than 20 (a king's worth). Whether the rule set allows
 * claims only the server knows: see claimRule.
 */
export function claimPossible(m: Match, seat: number): boolean {
  if (m.status !== MatchStatus.ACTIVE) return false;
  const live = m.seats.filter((s) => s.status === SeatStatus.LIVE);
  if (live.length !== 2) return false;
  const mine = live.find((s) => s.seat === seat);
  const other = live.find((s) => s.seat !== seat);
  return !!mine && !!other && mine.points - other.points > 20;
}

/**
 * claimRule reads the server's answer (a snapshot of the match for the
 * caller holding seat) for what the client cannot see: whether the match
 * allows claims. Match.can_claim_win is the engine's whole answer; where
 * the snapshot itself meets every other condition (claimPossible), a
 * false can only mean the rule set has no claims, which never changes.
 * Otherwise the answer says nothing about the rule: undefined.
 */
export function claimRule(answer: Match, seat: number): boolean | undefined {
  if (answer.canClaimWin) return true;
  return claimPossible(answer, seat) ? false : undefined;
}
