// An in-memory AuthService and MatchmakingService for the unit tests of
// the session, private tables and rematch flows: the page's own Api,
// built by newApi, calls it through createRouterTransport, so requests and
// answers pass the Connect protocol (binary messages, error details) as
// they do in a browser. It keeps the contract of proto/ (the comments are
// the spec) only as far as the flows need; the real services are tested
// in Go.

import { clone, create } from "@bufbuild/protobuf";
import { BinaryWriter } from "@bufbuild/protobuf/wire";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createRouterTransport, type HandlerContext } from "@connectrpc/connect";
import { newApi, type Api, type Session } from "../src/api";
import { AuthService } from "../src/gen/fourkingdoms/auth/v1/auth_pb";
import { PlayerSchema, Seat } from "../src/gen/fourkingdoms/game/v1/game_pb";
import {
  MatchmakingService, RematchSchema, RematchState, SeatMode, TableSchema, TableState, type Rematch, type Table,
} from "../src/gen/fourkingdoms/matchmaking/v1/matchmaking_pb";

/** memoryStorage is the part of the browser's Storage the session uses. */
export function memoryStorage(init?: Session): Storage {
  const m = new Map<string, string>();
  if (init) m.set("fk.session", JSON.stringify(init));
  return {
    getItem: (k: string) => m.get(k) ?? null,
    setItem: (k: string, v: string) => void m.set(k, v),
    removeItem: (k: string) => void m.delete(k),
    clear: () => m.clear(),
    key: () => null,
    get length() { return m.size; },
  };
}

/** refusal is a ConnectError carrying a google.rpc.ErrorInfo (and a RetryInfo when retryS is set), as the services send. */
export function refusal(code: Code, reason: string, retryS?: number, message = reason.toLowerCase()): ConnectError {
  const err = new ConnectError(message, code);
  const info = new BinaryWriter().uint32(10).string(reason).uint32(18).string("fourkingdoms.matchmaking.v1").finish();
  err.details.push({ type: "google.rpc.ErrorInfo", value: info, debug: undefined });
  if (retryS !== undefined) {
    const dur = new BinaryWriter().uint32(8).int64(retryS).finish();
    err.details.push({ type: "google.rpc.RetryInfo", value: new BinaryWriter().uint32(10).bytes(dur).finish(), debug: undefined });
  }
  return err;
}

const seatsInOrder = [Seat.RED, Seat.BLUE, Seat.YELLOW, Seat.GREEN];

/** FakeServer holds the tables, rematch offers and sessions of one test. */
export class FakeServer {
  readonly tables = new Map<string, Table>();
  readonly rematches = new Map<string, Rematch>();
  /** The players of each finished match (for OfferRematch). */
  readonly finished = new Map<string, string[]>();
  /** Every call, "Method player". */
  readonly calls: string[] = [];
  /** Refresh tokens revoked. */
  readonly revoked: string[] = [];
  /** Unknown codes tried, by player. */
  private readonly guesses = new Map<string, number>();
  /** Streams to end with UNAVAILABLE at their next change (a dropped connection). */
  dropStreams = 0;
  /** Set to make the auth RPCs fail as an unreachable server. */
  down = false;
  private seq = 0;
  private waiters: (() => void)[] = [];

  /** api is a page's Api signed in as player (token "tok-<player>"). */
  api(player: string, storage = memoryStorage(this.session(player))): Api {
    return newApi("http://fake.test", storage, (auth) => createRouterTransport((r) => {
      r.service(AuthService, this.auth());
      r.service(MatchmakingService, this.matchmaking());
    }, { transport: { interceptors: [auth] } }));
  }

  session(player: string): Session {
    return {
      token: `tok-${player}`, playerId: player, displayName: player, expiresAt: Date.now() + 3_600_000,
      refreshToken: `r1-${player}`, refreshExpiresAt: Date.now() + 86_400_000,
    };
  }

  private changed(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  private next(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      this.waiters.push(resolve);
      signal.addEventListener("abort", () => resolve(), { once: true });
    });
  }

  private caller(ctx: HandlerContext, method: string): string {
    const p = /^Bearer tok-(.+)$/.exec(ctx.requestHeader.get("authorization") ?? "")?.[1];
    if (!p) throw refusal(Code.Unauthenticated, "MISSING_TOKEN");
    this.calls.push(`${method} ${p}`);
    return p;
  }

  private table(code: string, player: string): Table {
    const t = this.tables.get(code.replace(/-/g, "").toUpperCase());
    if (!t || t.state === TableState.CLOSED) {
      const n = (this.guesses.get(player) ?? 0) + 1;
      this.guesses.set(player, n);
      if (n > 3) throw refusal(Code.ResourceExhausted, "TOO_MANY_GUESSES", 30);
      throw refusal(Code.NotFound, "TABLE_NOT_FOUND");
    }
    return t;
  }

  private auth() {
    const rotate = (refreshToken: string, displayName?: string) => {
      if (this.down) throw new ConnectError("unreachable", Code.Unavailable);
      const m = /^r(\d+)-(.+)$/.exec(refreshToken);
      if (!m || this.revoked.includes(refreshToken)) throw refusal(Code.Unauthenticated, "REFRESH_TOKEN_INVALID");
      const player = m[2]!;
      this.revoked.push(refreshToken);
      return {
        playerId: player, displayName: displayName ?? player, token: `tok-${player}`,
        expiresAt: timestampFromMs(Date.now() + 3_600_000),
        refreshToken: `r${Number(m[1]) + 1}-${player}`, refreshExpiresAt: timestampFromMs(Date.now() + 86_400_000),
      };
    };
    return {
      refreshSession: (req: { refreshToken: string }) => rotate(req.refreshToken),
      setDisplayName: (req: { refreshToken: string; displayName: string }) => {
        const name = req.displayName.trim();
        if (!name || name.length > 32 || /^bot[ -]/i.test(name)) {
          throw refusal(Code.InvalidArgument, "INVALID_ARGUMENT", undefined, `display_name: ${name ? "a bot's name is reserved" : "empty"}`);
        }
        return rotate(req.refreshToken, name);
      },
      revokeSession: (req: { refreshToken: string }) => {
        if (this.down) throw new ConnectError("unreachable", Code.Unavailable);
        this.revoked.push(req.refreshToken);
        return {};
      },
      guestLogin: () => {
        throw new ConnectError("not in this fake", Code.Unimplemented);
      },
    };
  }

  private matchmaking() {
    const srv = this;
    return {
      createTable: (req: { ruleSet: string; timeControl?: { name: string }; rated: boolean; hostSeat: Seat; seats: { seat: Seat; mode: SeatMode; botLevel: string }[] }, ctx: HandlerContext) => {
        const me = this.caller(ctx, "CreateTable");
        const code = `7KQ2M9XD${String(++this.seq).padStart(4, "0")}`.replace(/0/g, "A");
        const t = create(TableSchema, {
          code, link: "", hostPlayerId: me, ruleSet: req.ruleSet || "fourkingdoms", timeControl: req.timeControl, rated: req.rated,
          state: TableState.OPEN, version: 1n, expiresAt: timestampFromMs(Date.now() + 600_000),
          seats: seatsInOrder.map((seat) => {
            const s = req.seats.find((x) => x.seat === seat);
            return { seat, mode: s?.mode === SeatMode.BOT ? SeatMode.BOT : SeatMode.OPEN, botLevel: s?.botLevel ?? "" };
          }),
        });
        const host = t.seats.find((s) => s.seat === (req.hostSeat || Seat.RED))!;
        if (host.mode === SeatMode.BOT) throw new ConnectError("host_seat: a bot seat", Code.InvalidArgument);
        host.player = create(PlayerSchema, { playerId: me, displayName: me, isBot: false });
        this.tables.set(code, t);
        return { table: t };
      },
      joinTable: (req: { code: string; seat: Seat }, ctx: HandlerContext) => {
        const me = this.caller(ctx, "JoinTable");
        const t = this.table(req.code, me);
        const mine = t.seats.find((s) => s.player?.playerId === me);
        if (mine) return { table: t, seat: mine.seat };
        if (t.state === TableState.STARTED) throw refusal(Code.FailedPrecondition, "TABLE_STARTED");
        const free = t.seats.find((s) => s.mode !== SeatMode.BOT && !s.player && (!req.seat || s.seat === req.seat));
        if (!free) throw refusal(Code.FailedPrecondition, req.seat ? "SEAT_TAKEN" : "TABLE_FULL");
        free.player = create(PlayerSchema, { playerId: me, displayName: me, isBot: false });
        t.version++;
        this.changed();
        return { table: t, seat: free.seat };
      },
      leaveTable: (req: { code: string }, ctx: HandlerContext) => {
        const me = this.caller(ctx, "LeaveTable");
        const t = this.table(req.code, me);
        const mine = t.seats.find((s) => s.player?.playerId === me);
        if (!mine) return { table: t };
        mine.player = undefined;
        const humans = t.seats.filter((s) => s.player && !s.player.isBot);
        if (humans.length === 0) t.state = TableState.CLOSED;
        else if (t.hostPlayerId === me) t.hostPlayerId = humans[0]!.player!.playerId;
        t.version++;
        this.changed();
        return { table: t };
      },
      startTable: (req: { code: string; fillWithBots: boolean; fillBotLevel: string }, ctx: HandlerContext) => {
        const me = this.caller(ctx, "StartTable");
        const t = this.table(req.code, me);
        if (t.hostPlayerId !== me) throw refusal(Code.PermissionDenied, "NOT_HOST");
        if (t.state === TableState.STARTED) return { table: t };
        for (const s of t.seats) {
          if (s.player) continue;
          if (s.mode !== SeatMode.BOT && !req.fillWithBots) throw refusal(Code.FailedPrecondition, "SEATS_OPEN");
          s.player = create(PlayerSchema, { playerId: `bot-${s.seat}`, displayName: `Bot ${s.seat}`, isBot: true });
        }
        t.state = TableState.STARTED;
        t.matchId = `m-${t.code}`;
        t.version++;
        this.changed();
        return { table: t };
      },
      async *watchTable(req: { code: string }, ctx: HandlerContext) {
        const me = srv.caller(ctx, "WatchTable");
        let t = srv.table(req.code, me);
        let sent = -1n;
        for (;;) {
          if (t.version !== sent) {
            sent = t.version;
            yield { table: clone(TableSchema, t) };
            if (t.state !== TableState.OPEN) return;
          }
          await srv.next(ctx.signal);
          if (ctx.signal.aborted) return;
          if (srv.dropStreams > 0) {
            srv.dropStreams--;
            throw new ConnectError("connection reset", Code.Unavailable);
          }
          t = srv.tables.get(t.code)!;
        }
      },
      offerRematch: (req: { matchId: string }, ctx: HandlerContext) => {
        const me = this.caller(ctx, "OfferRematch");
        const players = this.finished.get(req.matchId);
        if (!players) throw refusal(Code.NotFound, "MATCH_NOT_FOUND");
        if (!players.includes(me)) throw refusal(Code.PermissionDenied, "NOT_A_PLAYER");
        let r = this.rematches.get(req.matchId);
        if (r?.state === RematchState.DECLINED) throw refusal(Code.FailedPrecondition, "REMATCH_DECLINED");
        if (r?.state === RematchState.EXPIRED) throw refusal(Code.FailedPrecondition, "REMATCH_EXPIRED");
        if (!r) {
          r = create(RematchSchema, {
            matchId: req.matchId, state: RematchState.OFFERED, playerIds: players, expiresAt: timestampFromMs(Date.now() + 60_000),
          });
          this.rematches.set(req.matchId, r);
        }
        if (!r.acceptedPlayerIds.includes(me)) r.acceptedPlayerIds.push(me);
        if (r.state === RematchState.OFFERED && players.every((p) => r!.acceptedPlayerIds.includes(p))) {
          r.state = RematchState.STARTED;
          r.newMatchId = `${req.matchId}-again`;
        }
        this.changed();
        return { rematch: r };
      },
      declineRematch: (req: { matchId: string }, ctx: HandlerContext) => {
        const me = this.caller(ctx, "DeclineRematch");
        const r = this.rematches.get(req.matchId);
        if (!r) throw refusal(Code.NotFound, "MATCH_NOT_FOUND");
        if (r.state === RematchState.OFFERED) {
          r.state = RematchState.DECLINED;
          r.declinedBy = me;
          this.changed();
        }
        return { rematch: r };
      },
      async *watchRematch(req: { matchId: string }, ctx: HandlerContext) {
        srv.caller(ctx, "WatchRematch");
        const r = srv.rematches.get(req.matchId);
        if (!r) throw new ConnectError("no rematch offer for this match", Code.NotFound);
        let sent = "";
        for (;;) {
          const now = JSON.stringify([r.state, r.acceptedPlayerIds]);
          if (now !== sent) {
            sent = now;
            yield { rematch: clone(RematchSchema, r) };
            if (r.state !== RematchState.OFFERED) return;
          }
          await srv.next(ctx.signal);
          if (ctx.signal.aborted) return;
        }
      },
    };
  }

  /** expire makes match's rematch offer pass its window. */
  expire(matchId: string): void {
    const r = this.rematches.get(matchId);
    if (r) r.state = RematchState.EXPIRED;
    this.changed();
  }
}

/** eventually waits until cond holds (or fails after ms). */
export async function eventually(cond: () => boolean, what: string, ms = 2_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
