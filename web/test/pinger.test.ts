import { test } from "node:test";
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import { PingResponseSchema, type PingResponse } from "../src/gen/fourkingdoms/match/v1/match_pb";
import { Pinger, type PingApi, type PingTimer } from "../src/pinger";

// manualTimer runs the next round when the test says so.
class ManualTimer implements PingTimer {
  pending?: { fn: () => void; ms: number };
  set(fn: () => void, ms: number): unknown {
    this.pending = { fn, ms };
    return this.pending;
  }
  clear(): void {
    this.pending = undefined;
  }
}

const settle = () => new Promise((r) => setTimeout(r, 0));

// server answers like the match service: a token for a Ping without one,
// a measurement for a Ping with the last token it issued; then fails as told.
function server(calls: Array<{ token: number }>, failAfter = Infinity, failure?: Error): PingApi {
  let issued = 0;
  return {
    async ping(req) {
      const tok = req.token?.[0] ?? 0;
      calls.push({ token: tok });
      if (calls.length > failAfter) throw failure;
      if (tok !== 0) assert.equal(tok, issued, "the token sent back is the last one issued");
      issued++;
      const r: PingResponse = create(PingResponseSchema, { token: new Uint8Array([issued]), nextPingIn: durationFromMs(3_000) });
      if (tok !== 0) {
        r.roundTrip = durationFromMs(150);
        r.roundTripEstimate = durationFromMs(150);
      }
      return r;
    },
  };
}

test("a round is a Ping without a token and at once one with it, every next_ping_in", async () => {
  const calls: Array<{ token: number }> = [];
  const timer = new ManualTimer();
  const seen: number[] = [];
  const p = new Pinger(server(calls), "m", (r) => seen.push(Number(r.roundTrip?.nanos) / 1e6), timer);
  p.start();
  await settle();
  assert.deepEqual(calls, [{ token: 0 }, { token: 1 }]);
  assert.equal(p.estimateMs, 150);
  assert.equal(timer.pending?.ms, 3_000, "the server's next_ping_in");
  timer.pending!.fn();
  await settle();
  assert.deepEqual(calls.map((c) => c.token), [0, 1, 0, 3]);
  assert.deepEqual(seen, [150, 150]);
  p.stop();
  assert.equal(timer.pending, undefined);
});

test("nothing to measure ends it; other failures wait for the next round", async () => {
  const cases: Array<[Error, boolean]> = [
    [new ConnectError("over", Code.FailedPrecondition), false],
    [new ConnectError("not a player", Code.PermissionDenied), false],
    [new ConnectError("gone", Code.NotFound), false],
    [new ConnectError("old server", Code.Unimplemented), false],
    [new ConnectError("bad token", Code.InvalidArgument), true],
    [new ConnectError("down", Code.Unavailable), true],
    [new TypeError("Failed to fetch"), true],
  ];
  for (const [err, goesOn] of cases) {
    const timer = new ManualTimer();
    const p = new Pinger(server([], 1, err), "m", undefined, timer);
    p.start();
    await settle();
    assert.equal(p.running, goesOn, String(err));
    assert.equal(timer.pending !== undefined, goesOn, String(err));
    p.stop();
  }
});
