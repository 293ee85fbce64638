import { test } from "node:test";
import assert from "node:assert/strict";
import { awaitingFirstMove, disconnectedText, formatClock, timeLeft } from "../src/clock";

test("formatClock writes minutes, tenths below ten seconds, hours", () => {
  const cases: Array<[number, string]> = [
    [0, "0.0"], [-5, "0.0"], [NaN, "0.0"], [99, "0.0"], [100, "0.1"], [9_999, "9.9"], [10_000, "0:10"],
    [59_999, "0:59"], [60_000, "1:00"], [305_000, "5:05"], [3_599_999, "59:59"], [3_600_000, "1:00:00"], [3_725_000, "1:02:05"],
  ];
  for (const [ms, want] of cases) assert.equal(formatClock(ms), want, String(ms));
});

test("a running clock counts down to the server's deadline, corrected by the skew", () => {
  const c = { remainingMs: 60_000, running: true, deadlineMs: 1_000_000 };
  assert.equal(timeLeft(c, 990_000), 10_000);
  assert.equal(timeLeft(c, 1_005_000), 0, "never negative");
  // This machine's clock runs 2 s ahead of the server's.
  assert.equal(timeLeft(c, 992_000, 2_000), 10_000);
});

test("a stopped clock shows its remaining time", () => {
  assert.equal(timeLeft({ remainingMs: 42_000, running: false, deadlineMs: 0 }, 5), 42_000);
  assert.equal(timeLeft({ remainingMs: 42_000, running: true, deadlineMs: 0 }, 5), 42_000);
});

test("the first-move limit applies until each seat has moved once", () => {
  assert.equal(awaitingFirstMove(1, 0), true);
  assert.equal(awaitingFirstMove(1, 1), false);
  assert.equal(awaitingFirstMove(4, 3), true);
  assert.equal(awaitingFirstMove(4, 4), false);
});

test("a disconnected player's countdown shows m:ss to the grace end, rounded down", () => {
  const end = 1_000_000;
  const cases: Array<[number, string]> = [
    [end - 60_000, "disconnected — 1:00"], [end - 59_999, "disconnected — 0:59"], [end - 9_500, "disconnected — 0:09"],
    [end - 999, "disconnected — 0:00"], [end, "disconnected — 0:00"], [end + 5_000, "disconnected — 0:00"], [end - 125_000, "disconnected — 2:05"],
  ];
  for (const [now, want] of cases) assert.equal(disconnectedText(end, now), want, String(now));
  // This machine's clock runs 2 s ahead of the server's.
  assert.equal(disconnectedText(end, end - 8_000, 2_000), "disconnected — 0:10");
});
