import { test } from "node:test";
import assert from "node:assert/strict";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { RematchSchema, RematchState, type Rematch } from "../src/gen/fourkingdoms/matchmaking/v1/matchmaking_pb";
import { RematchFollower, rematchView } from "../src/rematch";
import { FakeServer, eventually } from "./fakeserver";

const names = (id: string): string => ({ a: "Ann", b: "Ben", c: "Cid" })[id] ?? id;
const now = 1_000_000;
const offer = (accepted: string[], over: { state?: RematchState; declinedBy?: string; newMatchId?: string } = {}): Rematch => create(RematchSchema, {
  matchId: "m1", state: RematchState.OFFERED, playerIds: ["a", "b", "c"], acceptedPlayerIds: accepted,
  expiresAt: timestampFromMs(now + 42_500), ...over,
});

test("the panel says who offered, who is awaited and the time left, and which buttons apply", () => {
  const none = rematchView(undefined, "a", names, now);
  assert.deepEqual([none.canOffer, none.canDecline, none.text], [true, false, ""]);

  const invited = rematchView(offer(["b"]), "a", names, now);
  assert.equal(invited.text, "Ben offered a rematch (43 s left).");
  assert.deepEqual([invited.canOffer, invited.canDecline, invited.accepted], [true, true, false]);

  const waiting = rematchView(offer(["a", "b"]), "a", names, now);
  assert.equal(waiting.text, "Rematch offered: waiting for Cid (43 s left).");
  assert.deepEqual(waiting.waitingFor, ["c"]);
  assert.deepEqual([waiting.canOffer, waiting.canDecline], [false, true]);

  const late = rematchView(offer(["b"]), "a", names, now + 60_000);
  assert.deepEqual([late.leftMs, late.canOffer, late.canDecline], [0, false, false]);

  assert.equal(rematchView(offer(["b"], { state: RematchState.DECLINED, declinedBy: "c" }), "a", names, now).text, "Cid declined the rematch.");
  assert.equal(rematchView(offer(["b"], { state: RematchState.DECLINED, declinedBy: "a" }), "a", names, now).text, "You declined the rematch.");
  assert.equal(rematchView(offer(["b"], { state: RematchState.EXPIRED }), "a", names, now).text, "Nobody accepted the rematch in time.");
  const started = rematchView(offer(["a", "b", "c"], { state: RematchState.STARTED, newMatchId: "m2" }), "a", names, now);
  assert.deepEqual([started.canOffer, started.canDecline], [false, false]);
});

function follower(srv: FakeServer, player: string) {
  const got = { states: [] as (RematchState | undefined)[], problems: [] as string[], started: [] as string[] };
  const f = new RematchFollower(srv.api(player), "m1", (r, p) => { got.states.push(r?.state); if (p) got.problems.push(p); },
    (id) => got.started.push(id), 10);
  f.start();
  return { f, got };
}

test("an offer reaches the others (they poll while there is none); when all accept both go to the same new match once", async () => {
  const srv = new FakeServer();
  srv.finished.set("m1", ["a", "b"]);
  const A = follower(srv, "a");
  const B = follower(srv, "b");
  // Nobody offered: WatchRematch answers NOT_FOUND and is asked again.
  await eventually(() => srv.calls.filter((c) => c === "WatchRematch b").length >= 2, "B to poll");
  await A.f.offer();
  await eventually(() => B.f.rematch?.acceptedPlayerIds.includes("a") ?? false, "B to see A's offer");
  assert.equal(rematchView(B.f.rematch, "b", names).canOffer, true);
  await B.f.offer();
  await eventually(() => A.got.started.length === 1 && B.got.started.length === 1, "both to start");
  assert.deepEqual(A.got.started, ["m1-again"]);
  assert.deepEqual(B.got.started, ["m1-again"]);
  // Final: no more polling or watching.
  const calls = srv.calls.length;
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(srv.calls.length, calls);
  A.f.stop();
  B.f.stop();
});

test("a decline ends the offer for everyone; offering after it is refused in a sentence", async () => {
  const srv = new FakeServer();
  srv.finished.set("m1", ["a", "b"]);
  const A = follower(srv, "a");
  const B = follower(srv, "b");
  await A.f.offer();
  await eventually(() => !!B.f.rematch, "B to see the offer");
  await B.f.decline();
  await eventually(() => A.f.rematch?.state === RematchState.DECLINED, "A to see the decline");
  assert.equal(rematchView(A.f.rematch, "a", names).text, "Ben declined the rematch.");
  await A.f.offer();
  assert.deepEqual(A.got.problems, ["A player declined the rematch."]);
  assert.equal(A.f.rematch?.state, RematchState.DECLINED, "a refusal keeps the state");
  assert.deepEqual([A.got.started, B.got.started], [[], []]);
  A.f.stop();
  B.f.stop();
});

test("an offer that expires says so and starts nothing", async () => {
  const srv = new FakeServer();
  srv.finished.set("m1", ["a", "b"]);
  const A = follower(srv, "a");
  await A.f.offer();
  await eventually(() => srv.calls.includes("WatchRematch a") && A.f.rematch?.state === RematchState.OFFERED, "A to watch");
  srv.expire("m1");
  await eventually(() => A.f.rematch?.state === RematchState.EXPIRED, "the expiry");
  assert.equal(rematchView(A.f.rematch, "a", names).text, "Nobody accepted the rematch in time.");
  assert.deepEqual(A.got.started, []);
  A.f.stop();
});

test("someone who did not play cannot offer", async () => {
  const srv = new FakeServer();
  srv.finished.set("m1", ["a", "b"]);
  const C = follower(srv, "c");
  await C.f.offer();
  assert.deepEqual(C.got.problems, ["You are not playing in this game, so you can only watch it."]);
  C.f.stop();
});
