import { test } from "node:test";
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { MatchEventSchema, type MatchEvent } from "../src/gen/fourkingdoms/events/v1/events_pb";
import { SeatStatus } from "../src/gen/fourkingdoms/game/v1/game_pb";
import { MatchSchema, MatchStatus, WatchMatchResponseSchema, type WatchMatchResponse } from "../src/gen/fourkingdoms/match/v1/match_pb";
import type { Api } from "../src/api";
import { Follower, type FollowView } from "../src/follower";

// The browser globals the follower touches.
const g = globalThis as Record<string, unknown>;
g.addEventListener ??= () => {};
g.removeEventListener ??= () => {};
if (!("navigator" in g) || !(g.navigator as { onLine?: boolean }).onLine) {
  Object.defineProperty(g, "navigator", { value: { onLine: true }, configurable: true });
}
g.localStorage ??= { getItem: () => null };

function moveEvent(version: bigint, ply: number): MatchEvent {
  const seat = ((ply - 1) % 4) + 1;
  return create(MatchEventSchema, {
    version, ply,
    event: { case: "moveApplied", value: { effects: { seat, move: `m${ply}`, from: { name: "a4" }, to: { name: "a5" } }, toMove: (seat % 4) + 1 } },
  });
}

function gameOver(version: bigint, ply: number): MatchEvent {
  return create(MatchEventSchema, { version, ply, event: { case: "gameOver", value: { result: { ranking: [1, 2, 3, 4] } } } });
}

const ev = (e: MatchEvent): WatchMatchResponse => create(WatchMatchResponseSchema, { version: e.version, item: { case: "event", value: e } });

// history: the whole match as the server has it, version 1..7: created,
// then moves at versions 2..6 (plies 1..5), then GameOver.
const events = [2n, 3n, 4n, 5n, 6n].map((v) => moveEvent(v, Number(v) - 1));
const snapshotAt3 = create(MatchSchema, {
  matchId: "m1", status: MatchStatus.ACTIVE, ruleSet: "fourkingdoms", version: 3n, ply: 2, toMove: 3,
  seats: [1, 2, 3, 4].map((seat) => ({ seat, status: SeatStatus.LIVE })),
});

test("a dropped stream resumes from the last version: no gap, no duplicate, earlier moves loaded", async () => {
  const calls: bigint[] = [];
  let mainCalls = 0;
  const api = {
    match: {
      async *watchMatch(req: { fromVersion: bigint }) {
        calls.push(req.fromVersion);
        if (req.fromVersion === 1n) {
          // The history loader: the events after version 1, up to the snapshot.
          for (const e of events) yield ev(e);
          return;
        }
        mainCalls++;
        if (mainCalls === 1) {
          yield create(WatchMatchResponseSchema, { version: 3n, item: { case: "snapshot", value: snapshotAt3 } });
          yield ev(events[2]!); // version 4
          throw new ConnectError("connection reset", Code.Unavailable);
        }
        if (mainCalls === 2) {
          // The server may repeat what the client has (skipped) ...
          yield ev(events[2]!);
          yield ev(events[3]!); // version 5
          // ... and a gap makes the client reconnect.
          yield ev(events[4]!); // version 6: fine
          yield ev(gameOver(8n, 5)); // version 8: a gap (7 missing)
          return;
        }
        yield ev(gameOver(7n, 5));
      },
      async getMatch() {
        throw new ConnectError("not in this test", Code.Unavailable);
      },
    },
  } as unknown as Api;

  const views: FollowView[] = [];
  const done = new Promise<FollowView>((resolve) => {
    const f = new Follower(api, "m1", (v) => {
      views.push(v);
      if (v.conn === "ended") resolve(v);
    });
    f.start();
  });
  const last = await done;
  assert.equal(last.match.status, MatchStatus.FINISHED);
  assert.equal(last.match.version, 7n);
  assert.deepEqual(last.moves.map((m) => m.ply), [1, 2, 3, 4, 5]);
  assert.deepEqual(last.moves.map((m) => m.text), ["m1", "m2", "m3", "m4", "m5"]);
  assert.ok(last.reconnects >= 2, `reconnects ${last.reconnects}`);
  // Main stream: from 0, then from 4 (after the drop), then from 6 (after the gap);
  // the history loader once from 1.
  assert.deepEqual(calls.filter((v) => v !== 1n), [0n, 4n, 6n]);
  assert.equal(calls.filter((v) => v === 1n).length, 1);
  // The list never had a hole or a repeat at any moment.
  for (const v of views) {
    const plies = v.moves.map((m) => m.ply);
    assert.equal(new Set(plies).size, plies.length, `duplicate in ${plies}`);
  }
});
