import { test } from "node:test";
import assert from "node:assert/strict";
import { allSquares, edgeOf, fromScreen, isPlayable, parseSquare, squareName, toScreen, type Edge } from "../src/board";

test("the board has 160 playable squares and no corner square", () => {
  assert.equal(allSquares().length, 160);
  for (const [f, r] of [[1, 1], [3, 3], [12, 1], [14, 14], [1, 12], [3, 14]] as const) {
    assert.equal(isPlayable(f, r), false, `${f},${r}`);
  }
  for (const [f, r] of [[4, 1], [1, 4], [14, 11], [11, 14], [7, 7]] as const) {
    assert.equal(isPlayable(f, r), true, `${f},${r}`);
  }
});

test("square names round-trip and corners are refused", () => {
  for (const c of allSquares()) assert.deepEqual(parseSquare(squareName(c)), c);
  for (const bad of ["a1", "c3", "n14", "o5", "a15", "h0", "", "h2h"]) assert.equal(parseSquare(bad), undefined, bad);
});

test("seats sit on their edges in both rule sets", () => {
  const cases: Array<[string, number, Edge]> = [
    ["fourkingdoms", 1, "south"], ["fourkingdoms", 2, "east"], ["fourkingdoms", 3, "north"], ["fourkingdoms", 4, "west"],
    ["chesscom-ffa", 1, "south"], ["chesscom-ffa", 2, "west"], ["chesscom-ffa", 3, "north"], ["chesscom-ffa", 4, "east"],
  ];
  for (const [rs, seat, want] of cases) assert.equal(edgeOf(rs, seat), want, `${rs} seat ${seat}`);
});

test("each viewer's own back rank is drawn along the bottom row", () => {
  // The home squares of each edge's king (docs/rules.md section 3).
  const kings: Record<Edge, string> = { south: "h1", east: "n8", north: "g14", west: "a7" };
  for (const [edge, sq] of Object.entries(kings) as Array<[Edge, string]>) {
    assert.equal(toScreen(parseSquare(sq)!, edge).y, 13, `${edge} king ${sq}`);
  }
});

test("the viewer's left hand is the screen's left", () => {
  // South sees file a on the left; north sees file n there; east
  // (facing west) has south on the left; west (facing east) has north.
  assert.equal(toScreen(parseSquare("a4")!, "south").x, 0);
  assert.equal(toScreen(parseSquare("n4")!, "north").x, 0);
  assert.equal(toScreen(parseSquare("d1")!, "east").x, 0);
  assert.equal(toScreen(parseSquare("d14")!, "west").x, 0);
});

test("fromScreen inverts toScreen for every square and edge", () => {
  for (const edge of ["south", "east", "north", "west"] as Edge[]) {
    const seen = new Set<string>();
    for (const c of allSquares()) {
      const { x, y } = toScreen(c, edge);
      assert.ok(x >= 0 && x < 14 && y >= 0 && y < 14);
      seen.add(`${x},${y}`);
      assert.deepEqual(fromScreen(x, y, edge), c);
    }
    assert.equal(seen.size, 160, `${edge}: two squares on one cell`);
    assert.equal(fromScreen(0, 0, edge), undefined, `${edge}: corner`);
    assert.equal(fromScreen(14, 5, edge), undefined);
  }
});

test("rotating by a quarter turn four times is the identity", () => {
  // south -> east -> north -> west are quarter turns of the same picture.
  const order: Edge[] = ["south", "east", "north", "west"];
  for (const c of allSquares()) {
    const pts = order.map((e) => toScreen(c, e));
    for (let i = 0; i < 4; i++) {
      const a = pts[i]!, b = pts[(i + 1) % 4]!;
      // Turning the picture a quarter: (x, y) -> (13 - y, x) or its inverse; check consistency.
      const cw = { x: 13 - a.y, y: a.x };
      const ccw = { x: a.y, y: 13 - a.x };
      assert.ok((b.x === cw.x && b.y === cw.y) || (b.x === ccw.x && b.y === ccw.y), `${squareName(c)} ${order[i]}->${order[(i + 1) % 4]}`);
    }
  }
});
