// Sending one move as cmd/internal/client.Turn does: one client move id
// for every attempt, so a retry after a network drop is applied at most
// once (MakeMove is idempotent by client_move_id); retryable failures are
// sent again with backoff until the network is back, refusals are final.

import { Code, ConnectError, type CallOptions } from "@connectrpc/connect";
import type { MakeMoveResponse, MakeMoveRequestSchema } from "./gen/fourkingdoms/match/v1/match_pb";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { reason, retryable } from "./errors";
import { Backoff } from "./backoff";

/** What sendMove needs; the app passes the match client and the page's state. */
export interface MoveSender {
  makeMove(req: MessageInitShape<typeof MakeMoveRequestSchema>, opts?: CallOptions): Promise<MakeMoveResponse>;
  /** stillWanted reports whether to keep retrying (the match goes on). */
  stillWanted(): boolean;
  /** retrying is told before each wait, with the failure. */
  retrying?(err: unknown): void;
  backoff?: Backoff;
  /** Give up retrying after this long (ms); default 90 s. */
  patienceMs?: number;
  /**
   * turnSeenAt is when (performance.now()) the update that gave the
   * player the turn arrived: the time from it to the first send is claimed
   * as the player's think time (client_think_time), so that the server
   * gives the network lag back (docs/match.md "Lag compensation").
   */
  turnSeenAt?: number;
}

/** The outcome of sendMove. */
export type MoveOutcome =
  | { ok: true; response: MakeMoveResponse; attempts: number; ms: number }
  | { ok: false; error: unknown; attempts: number; refresh: boolean };

/** newMoveId returns a random client move id (24 hex digits). */
export function newMoveId(): string {
  const b = new Uint8Array(12);
  crypto.getRandomValues(b);
  return [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
}

/**
 * sendMove plays move at ply (sent as expected_ply). On failure, refresh
 * says the position changed under the move (PLY_MISMATCH, or a race lost
 * with ABORTED): reload the board and let the player choose again.
 */
export async function sendMove(s: MoveSender, matchId: string, move: string, ply: number, id = newMoveId()): Promise<MoveOutcome> {
  const req: MessageInitShape<typeof MakeMoveRequestSchema> = { matchId, move, clientMoveId: id, expectedPly: ply };
  if (s.turnSeenAt !== undefined) {
    // Retries claim the same: their extra wait was the network's.
    req.clientThinkTime = durationFromMs(Math.max(0, Math.round(performance.now() - s.turnSeenAt)));
  }
  const bo = s.backoff ?? new Backoff();
  const started = performance.now();
  const patience = s.patienceMs ?? 90_000;
  for (let attempts = 1; ; attempts++) {
    try {
      const response = await s.makeMove(req, { timeoutMs: 8_000 });
      return { ok: true, response, attempts, ms: performance.now() - started };
    } catch (err) {
      if (retryable(err) && s.stillWanted() && performance.now() - started < patience) {
        s.retrying?.(err);
        await bo.wait();
        continue;
      }
      const refresh = reason(err) === "PLY_MISMATCH" || (err instanceof ConnectError && err.code === Code.Aborted);
      return { ok: false, error: err, attempts, refresh };
    }
  }
}
