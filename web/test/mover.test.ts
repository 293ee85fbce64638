import { test } from "node:test";
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { MakeMoveResponseSchema } from "../src/gen/fourkingdoms/match/v1/match_pb";
import { sendMove, type MoveSender } from "../src/mover";
import { Backoff } from "../src/backoff";

class NoWait extends Backoff {
  override wait(): Promise<void> {
    return Promise.resolve();
  }
}

// refusal builds a ConnectError carrying an ErrorInfo detail, as the services send.
function refusal(code: Code, reason: string): ConnectError {
  const enc = new TextEncoder().encode(reason);
  const info = new Uint8Array([1 << 3 | 2, enc.length, ...enc]);
  // As the transport hands them over: a type name and the raw bytes.
  return new ConnectError(reason, code, undefined, [{ type: "google.rpc.ErrorInfo", value: info, debug: undefined } as never]);
}

function sender(answers: Array<Error | "ok">, log: Array<{ id: string; ply?: number }>, stillWanted = () => true): MoveSender {
  let i = 0;
  return {
    async makeMove(req) {
      log.push({ id: req.clientMoveId ?? "", ply: req.expectedPly });
      const a = answers[Math.min(i++, answers.length - 1)]!;
      if (a === "ok") return create(MakeMoveResponseSchema, { version: 9n });
      throw a;
    },
    stillWanted,
    backoff: new NoWait(),
  };
}

test("a move lost to the network is sent again with the same client move id", async () => {
  const log: Array<{ id: string; ply?: number }> = [];
  const out = await sendMove(sender([new TypeError("Failed to fetch"), new ConnectError("x", Code.Unavailable), new ConnectError("y", Code.DeadlineExceeded), "ok"], log), "m", "h2-h4", 7);
  assert.equal(out.ok, true);
  assert.equal(out.attempts, 4);
  assert.equal(log.length, 4);
  assert.ok(log.every((x) => x.id === log[0]!.id && x.id.length === 24), JSON.stringify(log));
  assert.ok(log.every((x) => x.ply === 7));
});

test("refusals are final; a stale ply asks for a refresh", async () => {
  const cases: Array<[ConnectError, boolean]> = [
    [refusal(Code.FailedPrecondition, "PLY_MISMATCH"), true],
    [refusal(Code.Aborted, "CONFLICT"), true],
    [refusal(Code.FailedPrecondition, "ILLEGAL_MOVE"), false],
    [refusal(Code.FailedPrecondition, "NOT_YOUR_TURN"), false],
    [refusal(Code.InvalidArgument, "BAD_MOVE_TEXT"), false],
  ];
  for (const [err, refresh] of cases) {
    const log: Array<{ id: string }> = [];
    // CONFLICT is retryable: with the match no longer wanting the move it stops at once.
    const out = await sendMove(sender([err], log, () => false), "m", "h2-h4", 3);
    assert.equal(out.ok, false, err.message);
    if (!out.ok) assert.equal(out.refresh, refresh, err.message);
    assert.equal(log.length, 1, err.message);
  }
});

test("retrying stops when the move is no longer wanted", async () => {
  const log: Array<{ id: string }> = [];
  let n = 0;
  const out = await sendMove(sender([new ConnectError("down", Code.Unavailable)], log, () => ++n < 3), "m", "h2-h4", 3);
  assert.equal(out.ok, false);
  assert.equal(log.length, 3);
});

test("a move claims the time since its turn was seen as think time, the same on every attempt", async () => {
  const claims: Array<bigint | undefined> = [];
  const answers: Array<Error | "ok"> = [new ConnectError("x", Code.Unavailable), "ok"];
  let i = 0;
  const s: MoveSender = {
    async makeMove(req) {
      claims.push(req.clientThinkTime?.seconds);
      const a = answers[i++]!;
      if (a === "ok") return create(MakeMoveResponseSchema, { version: 9n });
      throw a;
    },
    stillWanted: () => true,
    backoff: new NoWait(),
    turnSeenAt: performance.now() - 2500,
  };
  const out = await sendMove(s, "m", "h2-h4", 3);
  assert.equal(out.ok, true);
  assert.equal(claims.length, 2);
  assert.ok(claims[0] !== undefined && claims[0] >= 2n, `claimed ${claims[0]} s`);
  assert.equal(claims[1], claims[0]);
});

test("a move without a known turn start claims no think time", async () => {
  let claimed = true;
  const s: MoveSender = {
    async makeMove(req) {
      claimed = req.clientThinkTime !== undefined;
      return create(MakeMoveResponseSchema, { version: 9n });
    },
    stillWanted: () => true,
  };
  await sendMove(s, "m", "h2-h4", 3);
  assert.equal(claimed, false);
});
