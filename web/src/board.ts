// Board geometry: the 160 squares of the 14x14 board without its 3x3
// corners, which edge each army sits on, and the rotation that puts the
// viewer's edge at the bottom of the screen (docs/rules.md sections 1-2).

/** Board width and height in squares. */
export const SIZE = 14;

/** An edge of the board, where an army stands. */
export type Edge = "south" | "east" | "north" | "west";

/** A square by file (1 = a, west) and rank (1 = south), both 1..14. */
export interface Coord {
  file: number;
  rank: number;
}

/** isPlayable reports whether (file, rank) is one of the 160 squares. */
export function isPlayable(file: number, rank: number): boolean {
  if (file < 1 || file > SIZE || rank < 1 || rank > SIZE) return false;
  const cornerFile = file <= 3 || file >= 12;
  const cornerRank = rank <= 3 || rank >= 12;
  return !(cornerFile && cornerRank);
}

/** allSquares lists the playable squares, rank by rank from a1. */
export function allSquares(): Coord[] {
  const out: Coord[] = [];
  for (let rank = 1; rank <= SIZE; rank++) {
    for (let file = 1; file <= SIZE; file++) {
      if (isPlayable(file, rank)) out.push({ file, rank });
    }
  }
  return out;
}

/** squareName writes a square as the server does: "a4", "n11". */
export function squareName(c: Coord): string {
  return String.fromCharCode(96 + c.file) + String(c.rank);
}

/** parseSquare reads "a4" .. "n14"; undefined for anything else or a corner. */
export function parseSquare(name: string): Coord | undefined {
  const m = /^([a-n])(\d{1,2})$/.exec(name);
  if (!m) return undefined;
  const file = m[1]!.charCodeAt(0) - 96;
  const rank = Number(m[2]);
  return isPlayable(file, rank) ? { file, rank } : undefined;
}

// Seat enum values (fourkingdoms.game.v1.Seat): 1 Red .. 4 Green.
const RED = 1, BLUE = 2, YELLOW = 3, GREEN = 4;

/**
 * edgeOf is the edge seat sits on under ruleSet: Red south and Yellow north
 * always; Blue east and Green west under "fourkingdoms", the other way
 * round under "chesscom-ffa".
 */
export function edgeOf(ruleSet: string, seat: number): Edge {
  const clockwise = ruleSet === "chesscom-ffa";
  switch (seat) {
    case RED: return "south";
    case YELLOW: return "north";
    case BLUE: return clockwise ? "west" : "east";
    case GREEN: return clockwise ? "east" : "west";
    default: return "south";
  }
}

/**
 * toScreen maps a square to its screen cell (x from the left, y from the
 * top, both 0..13) for a viewer sitting at edge `bottom`: that edge is
 * drawn at the bottom and the viewer's left hand is the screen's left.
 */
export function toScreen(c: Coord, bottom: Edge): { x: number; y: number } {
  switch (bottom) {
    case "south": return { x: c.file - 1, y: SIZE - c.rank };
    case "north": return { x: SIZE - c.file, y: c.rank - 1 };
    case "east": return { x: c.rank - 1, y: c.file - 1 };
    case "west": return { x: SIZE - c.rank, y: SIZE - c.file };
  }
}

/** fromScreen is the inverse of toScreen; undefined outside the board. */
export function fromScreen(x: number, y: number, bottom: Edge): Coord | undefined {
  if (x < 0 || y < 0 || x >= SIZE || y >= SIZE) return undefined;
  let c: Coord;
  switch (bottom) {
    case "south": c = { file: x + 1, rank: SIZE - y }; break;
    case "north": c = { file: SIZE - x, rank: y + 1 }; break;
    case "east": c = { file: y + 1, rank: x + 1 }; break;
    case "west": c = { file: SIZE - y, rank: SIZE - x }; break;
  }
  return isPlayable(c.file, c.rank) ? c : undefined;
}

/** isLight reports the square colour (a1 is dark, as on an ordinary board). */
export function isLight(c: Coord): boolean {
  return (c.file + c.rank) % 2 === 1;
}
