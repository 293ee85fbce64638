// The board as SVG: 160 squares rotated so the viewer's edge is at the
// bottom, coordinates, the four armies (zombie and dead pieces drawn
// apart), every seat's last move, kings in check, and moves by click or
// drag among the server's legal moves.

import { allSquares, isLight, parseSquare, SIZE, squareName, toScreen, fromScreen, type Edge } from "./board";
import { s } from "./dom";
import type { PlacedPiece } from "./gen/fourkingdoms/match/v1/match_pb";
import { PieceKind } from "./gen/fourkingdoms/game/v1/game_pb";
import type { LegalMoves } from "./notation";

const U = 100; // SVG units per square

/** Seat colours and names, by seat value (1..4). */
export const seatName = ["", "Red", "Blue", "Yellow", "Green"] as const;
export const seatClass = ["", "red", "blue", "yellow", "green"] as const;

const letter: Record<number, string> = {
  [PieceKind.KING]: "K", [PieceKind.QUEEN]: "Q", [PieceKind.ROOK]: "R",
  [PieceKind.BISHOP]: "B", [PieceKind.KNIGHT]: "N", [PieceKind.PAWN]: "",
};

/** What the board shows. */
export interface BoardState {
  bottom: Edge;
  pieces: readonly PlacedPiece[];
  /** Each seat's last move (from, to), by seat. */
  lastMoves: ReadonlyMap<number, { from: string; to: string }>;
  /** Seats whose kings are in check. */
  checked: readonly number[];
  /** The viewer's legal moves; undefined when they may not move. */
  legal?: LegalMoves;
}

/**
 * BoardView draws a board into an <svg> and reports moves the viewer
 * makes by click or drag.
 */
export class BoardView {
  readonly el: SVGSVGElement;
  private state?: BoardState;
  private selected?: string;
  private drag?: { from: string; ghost: SVGElement; moved: boolean };

  constructor(private readonly onMove: (from: string, to: string) => void) {
    this.el = s("svg", {
      viewBox: `-40 0 ${SIZE * U + 40} ${SIZE * U + 40}`, class: "board", role: "img", "aria-label": "board",
    }) as SVGSVGElement;
    this.el.addEventListener("pointerdown", (e) => this.down(e));
    this.el.addEventListener("pointermove", (e) => this.move(e));
    this.el.addEventListener("pointerup", (e) => this.up(e));
    this.el.addEventListener("pointercancel", () => this.cancelDrag());
  }

  render(st: BoardState): void {
    this.state = st;
    if (this.selected && !st.legal?.targets(this.selected).length) this.selected = undefined;
    const layers: SVGElement[] = [];
    const squares = s("g", { class: "squares" });
    const marks = s("g", { class: "marks" });
    const pieces = s("g", { class: "pieces" });
    const labels = s("g", { class: "coords" });
    const sources = new Set(st.legal?.sources() ?? []);
    const targets = new Set(this.selected ? st.legal?.targets(this.selected) ?? [] : []);
    const lastBy = new Map<string, number>();
    for (const [seat, mv] of st.lastMoves) {
      lastBy.set(mv.from, seat);
      lastBy.set(mv.to, seat);
    }
    for (const c of allSquares()) {
      const name = squareName(c);
      const { x, y } = toScreen(c, st.bottom);
      const cls = ["sq", isLight(c) ? "light" : "dark"];
      const last = lastBy.get(name);
      if (last) cls.push("last", "last-" + seatClass[last]);
      if (sources.has(name)) cls.push("source");
      if (name === this.selected) cls.push("selected");
      if (targets.has(name)) cls.push("target");
      squares.append(s("rect", {
        x: x * U, y: y * U, width: U, height: U, class: cls.join(" "), "data-sq": name,
        "data-source": sources.has(name) ? "1" : undefined, "data-target": targets.has(name) ? "1" : undefined,
      }));
      if (targets.has(name)) {
        const occupied = st.pieces.some((p) => p.square === name);
        marks.append(occupied
          ? s("circle", { cx: x * U + U / 2, cy: y * U + U / 2, r: U * 0.46, class: "hint capture" })
          : s("circle", { cx: x * U + U / 2, cy: y * U + U / 2, r: U * 0.14, class: "hint" }));
      }
    }
    // Coordinates: along the bottom, what is constant in each screen
    // column; along the left, what is constant in each row.
    const vertical = st.bottom === "south" || st.bottom === "north";
    for (let i = 0; i < SIZE; i++) {
      const col = firstPlayable(i, st.bottom, "col");
      const row = firstPlayable(i, st.bottom, "row");
      if (col) labels.append(s("text", { x: i * U + U / 2, y: SIZE * U + 30, class: "coord" }, vertical ? fileLetter(col.file) : String(col.rank)));
      if (row) labels.append(s("text", { x: -20, y: i * U + U / 2 + 9, class: "coord" }, vertical ? String(row.rank) : fileLetter(row.file)));
    }
    for (const p of st.pieces) {
      const c = parseSquare(p.square);
      if (!c) continue;
      const { x, y } = toScreen(c, st.bottom);
      const inCheck = p.kind === PieceKind.KING && !p.dead && st.checked.includes(p.seat);
      if (inCheck) marks.append(s("circle", { cx: x * U + U / 2, cy: y * U + U / 2, r: U * 0.48, class: "check", "data-check": p.square }));
      const g = pieceShape(p, x * U, y * U);
      if (this.drag?.from === p.square) g.setAttribute("opacity", "0.3");
      pieces.append(g);
    }
    layers.push(squares, marks, pieces, labels);
    if (this.drag) layers.push(this.drag.ghost);
    this.el.replaceChildren(...layers);
  }

  /** select is a click on a square (also used by keyboard-free tests). */
  private click(name: string): void {
    const legal = this.state?.legal;
    if (!legal) return;
    if (this.selected && legal.text(this.selected, name)) {
      const from = this.selected;
      this.selected = undefined;
      this.onMove(from, name);
      return;
    }
    this.selected = legal.targets(name).length > 0 && this.selected !== name ? name : undefined;
    if (this.state) this.render(this.state);
  }

  private squareAt(e: PointerEvent): string | undefined {
    const m = this.el.getScreenCTM();
    if (!m || !this.state) return undefined;
    const p = new DOMPoint(e.clientX, e.clientY).matrixTransform(m.inverse());
    const c = fromScreen(Math.floor(p.x / U), Math.floor(p.y / U), this.state.bottom);
    return c ? squareName(c) : undefined;
  }

  private down(e: PointerEvent): void {
    const name = this.squareAt(e);
    if (!name || !this.state?.legal) return;
    if (this.selected && this.state.legal.text(this.selected, name)) {
      this.click(name);
      return;
    }
    const piece = this.state.pieces.find((p) => p.square === name);
    if (piece && this.state.legal.targets(name).length > 0) {
      e.preventDefault();
      this.el.setPointerCapture?.(e.pointerId);
      const ghost = pieceShape(piece, 0, 0);
      ghost.setAttribute("class", (ghost.getAttribute("class") ?? "") + " ghost");
      ghost.style.display = "none";
      this.drag = { from: name, ghost, moved: false };
      this.selected = name;
      this.render(this.state);
      return;
    }
    this.click(name);
  }

  private move(e: PointerEvent): void {
    if (!this.drag) return;
    const m = this.el.getScreenCTM();
    if (!m) return;
    const p = new DOMPoint(e.clientX, e.clientY).matrixTransform(m.inverse());
    this.drag.moved = true;
    this.drag.ghost.style.display = "";
    this.drag.ghost.setAttribute("transform", `translate(${p.x - U / 2} ${p.y - U / 2})`);
  }

  private up(e: PointerEvent): void {
    if (!this.drag) return;
    const { from, moved } = this.drag;
    this.drag = undefined;
    const to = this.squareAt(e);
    if (moved && to && to !== from && this.state?.legal?.text(from, to)) {
      this.selected = undefined;
      this.onMove(from, to);
    } else if (this.state) {
      // A click (no movement): the piece stays selected for a second click.
      this.render(this.state);
    }
  }

  private cancelDrag(): void {
    this.drag = undefined;
    if (this.state) this.render(this.state);
  }
}

function fileLetter(file: number): string {
  return String.fromCharCode(96 + file);
}

// firstPlayable finds the playable square of screen column (or row) i
// nearest the bottom (or the left).
function firstPlayable(i: number, bottom: Edge, dir: "col" | "row"): { file: number; rank: number } | undefined {
  for (let j = 0; j < SIZE; j++) {
    const c = dir === "col" ? fromScreen(i, SIZE - 1 - j, bottom) : fromScreen(j, i, bottom);
    if (c) return c;
  }
  return undefined;
}

function pieceShape(p: PlacedPiece, x: number, y: number): SVGElement {
  const cls = ["piece", seatClass[p.seat] ?? ""];
  if (p.dead) cls.push("dead");
  else if (p.zombie) cls.push("zombie");
  const g = s("g", { class: cls.join(" "), transform: `translate(${x} ${y})`, "data-piece": p.square });
  const l = letter[p.kind] ?? "?";
  if (p.kind === PieceKind.PAWN) {
    g.append(s("circle", { cx: U / 2, cy: U / 2, r: U * 0.24, class: "body" }));
  } else {
    g.append(s("circle", { cx: U / 2, cy: U / 2, r: U * 0.38, class: "body" }));
    g.append(s("text", { x: U / 2, y: U / 2 + 15, class: "glyph" }, l));
    if (p.kind === PieceKind.KING) g.append(s("circle", { cx: U / 2, cy: U / 2, r: U * 0.44, class: "crown" }));
    if (p.promoted) g.append(s("circle", { cx: U * 0.78, cy: U * 0.24, r: 7, class: "promo" }));
  }
  return g;
}
