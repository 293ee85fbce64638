// Move text in long algebraic form (docs/rules.md section 11.1): reading
// the server's legal moves into squares for clicks and drags, and reading
// what a keyboard user types.

import { edgeOf, parseSquare, squareName, type Coord, type Edge } from "./board";

/** A move as squares: what a click or a drag produces. */
export interface SquareMove {
  from: string;
  to: string;
  /** The promotion letter ("Q" or "D"), "" when none. */
  promotion: string;
}

// Castling king squares by edge (docs/rules.md section 4.4).
const castling: Record<Edge, { from: string; short: string; long: string }> = {
  south: { from: "h1", short: "j1", long: "f1" },
  east: { from: "n8", short: "n10", long: "n6" },
  north: { from: "g14", short: "e14", long: "i14" },
  west: { from: "a7", short: "a5", long: "a9" },
};

/** castlingRook gives the rook's squares of a castling move, by edge. */
export function castlingRook(edge: Edge, side: "short" | "long"): { from: string; to: string } {
  const rooks: Record<Edge, Record<"short" | "long", [string, string]>> = {
    south: { short: ["k1", "i1"], long: ["d1", "g1"] },
    east: { short: ["n11", "n9"], long: ["n4", "n7"] },
    north: { short: ["d14", "f14"], long: ["k14", "h14"] },
    west: { short: ["a4", "a6"], long: ["a11", "a8"] },
  };
  const [from, to] = rooks[edge][side];
  return { from, to };
}

const moveRe = /^([KQRBN])?([a-n]\d{1,2})\s*[-xX:]?\s*([KQRBND])?([a-n]\d{1,2})(?:=?([QD]))?[+#!?RT]*$/;

/**
 * parseMove reads a move the way the server does, tolerantly ("h2-h4",
 * "h2h4", "Nj1-i3", "Qg1xQh14", "k7-k8=Q", "O-O", "0-0-0", check marks).
 * Castling needs the mover's seat and rule set for its squares. It returns
 * undefined for text that names no squares.
 */
export function parseMove(text: string, ruleSet: string, seat: number): SquareMove | undefined {
  const t = text.trim().replace(/[+#!?]+$/, "");
  const castle = /^([O0])-?\1(-?\1)?[RT]?$/.exec(t);
  if (castle) {
    const c = castling[edgeOf(ruleSet, seat)];
    return { from: c.from, to: castle[2] ? c.long : c.short, promotion: "" };
  }
  const m = moveRe.exec(t);
  if (!m) return undefined;
  const from = parseSquare(m[2]!);
  const to = parseSquare(m[4]!);
  if (!from || !to) return undefined;
  return { from: squareName(from), to: squareName(to), promotion: m[5] ?? "" };
}

/**
 * LegalMoves indexes the server's legal moves of the seat to move by
 * square, for highlighting and for turning a click into the move text.
 */
export class LegalMoves {
  private readonly byFrom = new Map<string, Map<string, string>>();

  constructor(moves: readonly string[], ruleSet: string, seat: number) {
    for (const text of moves) {
      const m = parseMove(text, ruleSet, seat);
      if (!m) continue;
      let targets = this.byFrom.get(m.from);
      if (!targets) this.byFrom.set(m.from, (targets = new Map()));
      // A promotion has one choice (a queen) in both rule sets: keep the
      // first text for the pair of squares.
      if (!targets.has(m.to)) targets.set(m.to, text);
    }
  }

  /** sources lists the squares a piece may move from. */
  sources(): string[] {
    return [...this.byFrom.keys()];
  }

  /** targets lists where the piece on from may go. */
  targets(from: string): string[] {
    return [...(this.byFrom.get(from)?.keys() ?? [])];
  }

  /** text is the server's text for from -> to, undefined if not legal. */
  text(from: string, to: string): string | undefined {
    return this.byFrom.get(from)?.get(to);
  }

  /** match finds the legal move a typed text names, undefined if none. */
  match(typed: string, ruleSet: string, seat: number): string | undefined {
    const m = parseMove(typed, ruleSet, seat);
    return m ? this.text(m.from, m.to) : undefined;
  }

  get size(): number {
    let n = 0;
    for (const t of this.byFrom.values()) n += t.size;
    return n;
  }
}

/** coordOf is parseSquare for squares known to be valid (server data). */
export function coordOf(name: string): Coord | undefined {
  return parseSquare(name);
}
