// Private tables ("Play with friends"): invite codes and links, the
// CreateTable request built from the form, what the lobby shows of a
// Table, and the lobby's calls (WatchTable followed until the table starts
// or closes, JoinTable, StartTable, LeaveTable). No DOM here: the screens
// are in friends.ts, so that this module's behaviour is unit-tested
// against an in-memory transport (test/tables.test.ts).

import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { Api } from "./api";
import { Seat, type TimeControl } from "./gen/fourkingdoms/game/v1/game_pb";
import {
  CreateTableRequestSchema, SeatMode, TableState, type Table,
} from "./gen/fourkingdoms/matchmaking/v1/matchmaking_pb";
import { watchStream } from "./watch";

/** The seats in table order (Table.seats: Red, Blue, Yellow, Green). */
export const seats = [Seat.RED, Seat.BLUE, Seat.YELLOW, Seat.GREEN] as const;

/** The bot levels a bot seat may have (cmd/internal/brain.Levels, weakest first). */
export const botLevels = ["random", "greedy"] as const;

// An invite code: 12 characters of Crockford base32 (the proto's Table.code).
const codeChars = /^[0-9A-HJKMNP-TV-Z]{12}$/;

/**
 * normalizeCode reads a code as a player may type or paste it: dashes and
 * spaces dropped, upper case, and the letters Crockford base32 reads as
 * digits (I and L as 1, O as 0). It returns "" when the result is not a
 * code, so a typo is caught before it costs a guess (the server limits
 * unknown codes per player: TOO_MANY_GUESSES).
 */
export function normalizeCode(s: string): string {
  const c = s.replace(/[\s-]/g, "").toUpperCase().replace(/[IL]/g, "1").replace(/O/g, "0");
  return codeChars.test(c) ? c : "";
}

/** formatCode shows a code in groups of four: "7KQ2-M9XD-4TBA". */
export function formatCode(code: string): string {
  const c = normalizeCode(code) || code;
  return c.match(/.{1,4}/g)?.join("-") ?? c;
}

/**
 * codeFromHash returns the code of an invite link's fragment
 * ("#table=7KQ2M9XD4TBA", dashes and case as typed), or "" when the
 * fragment is no invite or its code cannot be one.
 */
export function codeFromHash(hash: string): string {
  const m = /^#?table=([^&]*)/.exec(hash);
  return m ? normalizeCode(decodeURIComponent(m[1]!)) : "";
}

/**
 * inviteLink is the link friends open to join: the deployment's own
 * (Table.link, when it has a public address configured), else this page's
 * origin with the fragment "#table=<CODE>". A fragment, not a path or a
 * query: it never reaches a server's logs or a Referer header.
 */
export function inviteLink(origin: string, t: Pick<Table, "code" | "link">): string {
  return t.link || `${origin}/#table=${normalizeCode(t.code) || t.code}`;
}

/** How the form fills one seat. */
export interface SeatChoice {
  mode: "open" | "bot";
  botLevel: string;
}

/** The "Play with friends" form. */
export interface TableForm {
  ruleSet: string;
  timeControl: TimeControl | undefined;
  rated: boolean;
  /** The host's own seat; it must be open. */
  hostSeat: Seat;
  /** By seat, Red first. */
  seats: SeatChoice[];
}

/** formProblem returns why the form cannot be sent, or "". */
export function formProblem(f: TableForm): string {
  if (!f.timeControl) return "Pick a time control.";
  const host = f.seats[seats.indexOf(f.hostSeat as (typeof seats)[number])];
  if (!host) return "Pick your seat.";
  if (host.mode !== "open") return "Your own seat must be open, not a bot's.";
  for (const s of f.seats) {
    if (s.mode === "bot" && !botLevels.includes(s.botLevel as (typeof botLevels)[number])) return "Pick a level for every bot.";
  }
  return "";
}

/** createTableRequest is the CreateTable request for a valid form. */
export function createTableRequest(f: TableForm): MessageInitShape<typeof CreateTableRequestSchema> {
  return create(CreateTableRequestSchema, {
    ruleSet: f.ruleSet,
    timeControl: f.timeControl,
    rated: f.rated,
    hostSeat: f.hostSeat,
    seats: f.seats.map((s, i) => ({
      seat: seats[i],
      mode: s.mode === "bot" ? SeatMode.BOT : SeatMode.OPEN,
      botLevel: s.mode === "bot" ? s.botLevel : "",
    })),
  });
}

/** What the lobby shows of a table for the player me. */
export interface LobbyView {
  table: Table;
  /** The caller's seat, or Seat.UNSPECIFIED when not seated. */
  mySeat: Seat;
  isHost: boolean;
  /** Open seats nobody has taken yet. */
  freeOpen: Seat[];
  /** True when StartTable would need fill_with_bots. */
  needsBots: boolean;
  open: boolean;
}

export function lobbyView(t: Table, me: string): LobbyView {
  const mine = t.seats.find((s) => s.player?.playerId === me);
  const freeOpen = t.seats.filter((s) => s.mode !== SeatMode.BOT && !s.player).map((s) => s.seat);
  return {
    table: t,
    mySeat: mine?.seat ?? Seat.UNSPECIFIED,
    isHost: t.hostPlayerId === me,
    freeOpen,
    needsBots: freeOpen.length > 0,
    open: t.state === TableState.OPEN,
  };
}

/** expiresInMs is how long an idle table stays open, from now. */
export function expiresInMs(t: Table, now = Date.now()): number | undefined {
  return t.expiresAt ? Math.max(0, timestampMs(t.expiresAt) - now) : undefined;
}

/** How a lobby ended. */
export type LobbyEnd =
  | { kind: "started"; matchId: string; table: Table }
  | { kind: "closed"; table: Table }
  | { kind: "failed"; err: unknown };

/**
 * followTable follows code's table with WatchTable until it starts or
 * closes: onTable gets every state, onEnd the end once. It returns a
 * function that stops following.
 */
export function followTable(api: Api, code: string, onTable: (t: Table) => void, onEnd: (e: LobbyEnd) => void, onDrop?: () => void): () => void {
  return watchStream((signal) => api.matchmaking.watchTable({ code }, { signal }), {
    item: (r) => {
      const t = r.table;
      if (!t) return;
      onTable(t);
      if (t.state === TableState.STARTED && t.matchId) onEnd({ kind: "started", matchId: t.matchId, table: t });
      else if (t.state === TableState.CLOSED) onEnd({ kind: "closed", table: t });
    },
    final: (r) => r.table?.state === TableState.CLOSED || (r.table?.state === TableState.STARTED && !!r.table.matchId),
    fail: (err) => onEnd({ kind: "failed", err }),
    reconnecting: () => onDrop?.(),
  });
}

/** joinTable seats the caller at code's table (the first free open seat, or seat). */
export async function joinTable(api: Api, code: string, seat: Seat = Seat.UNSPECIFIED): Promise<{ table: Table; seat: Seat }> {
  const r = await api.matchmaking.joinTable({ code, seat }, { timeoutMs: 10_000 });
  return { table: r.table!, seat: r.seat };
}

/** startTable starts the caller's table, filling free open seats with bots of level when fill is set. */
export async function startTable(api: Api, code: string, fill: boolean, level: string): Promise<Table> {
  const r = await api.matchmaking.startTable({ code, fillWithBots: fill, fillBotLevel: fill ? level : "" }, { timeoutMs: 20_000 });
  return r.table!;
}
