import { test } from "node:test";
import assert from "node:assert/strict";
import { LegalMoves, parseMove } from "../src/notation";

test("parseMove reads long algebraic text tolerantly", () => {
  const cases: Array<[string, string, string, string]> = [
    ["h2-h4", "h2", "h4", ""],
    ["h2h4", "h2", "h4", ""],
    ["Nj1-i3", "j1", "i3", ""],
    ["Qg1xQh14", "g1", "h14", ""],
    ["Qg1xh14+", "g1", "h14", ""],
    ["d4xe3", "d4", "e3", ""],
    ["k7-k8=Q", "k7", "k8", "Q"],
    ["k7-k8=D#", "k7", "k8", "D"],
    ["b7:c8", "b7", "c8", ""],
  ];
  for (const [text, from, to, promo] of cases) {
    assert.deepEqual(parseMove(text, "fourkingdoms", 1), { from, to, promotion: promo }, text);
  }
});

test("castling names the king's squares of the mover's edge", () => {
  const cases: Array<[string, number, string, string, string]> = [
    ["fourkingdoms", 1, "O-O", "h1", "j1"], ["fourkingdoms", 1, "O-O-O", "h1", "f1"],
    ["fourkingdoms", 2, "O-O", "n8", "n10"], ["fourkingdoms", 2, "0-0-0", "n8", "n6"],
    ["fourkingdoms", 3, "O-O", "g14", "e14"], ["fourkingdoms", 3, "O-O-O", "g14", "i14"],
    ["fourkingdoms", 4, "O-O+", "a7", "a5"], ["fourkingdoms", 4, "O-O-O", "a7", "a9"],
    // chesscom-ffa: Blue sits west, Green east.
    ["chesscom-ffa", 2, "O-O", "a7", "a5"], ["chesscom-ffa", 4, "O-O-O", "n8", "n6"],
  ];
  for (const [rs, seat, text, from, to] of cases) {
    assert.deepEqual(parseMove(text, rs, seat), { from, to, promotion: "" }, `${rs} ${seat} ${text}`);
  }
});

test("parseMove refuses text that names no squares", () => {
  for (const bad of ["", "hello", "a1-a2", "h2-", "z2-z4", "O-O-O-O", "h2-h44"]) {
    assert.equal(parseMove(bad, "fourkingdoms", 1), undefined, bad);
  }
});

test("LegalMoves indexes by square and matches typed text", () => {
  const lm = new LegalMoves(["h2-h3", "h2-h4", "Nj1-i3", "Nj1-k3", "O-O"], "fourkingdoms", 1);
  assert.deepEqual(lm.sources().sort(), ["h1", "h2", "j1"]);
  assert.deepEqual(lm.targets("h2").sort(), ["h3", "h4"]);
  assert.equal(lm.text("j1", "i3"), "Nj1-i3");
  assert.equal(lm.text("h1", "j1"), "O-O");
  assert.equal(lm.text("h2", "h5"), undefined);
  assert.equal(lm.match("j1i3", "fourkingdoms", 1), "Nj1-i3");
  assert.equal(lm.match("0-0", "fourkingdoms", 1), "O-O");
  assert.equal(lm.match("h2-h5", "fourkingdoms", 1), undefined);
  assert.equal(lm.size, 5);
});
