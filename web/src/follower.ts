// Following a match as cmd/internal/client.Follow does: a WatchMatch
// stream folded into a state, reopened after any drop from the last
// version seen, so no event is missed or applied twice; a version gap
// reconnects; OUT_OF_RANGE starts over from a snapshot. Beyond the Go
// client it keeps the move list (loading the moves before the first
// snapshot with a second, short stream), refreshes the pieces with
// GetMatch after moves (events carry no position), folds the events of the
// caller's own MakeMove at once, and estimates the clock skew between this
// machine and the server for the countdowns.

import { timestampMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Api } from "./api";
import type { MatchEvent } from "./gen/fourkingdoms/events/v1/events_pb";
import { create } from "@bufbuild/protobuf";
import { MatchSchema, type Match, type WatchMatchResponse } from "./gen/fourkingdoms/match/v1/match_pb";
import { describe, retryable } from "./errors";
import { copy, eventNote, fold, moveRecord, over, type EventNote, type MoveRecord } from "./match";
import { Backoff } from "./backoff";
import { debug } from "./game";

/** The connection as the player sees it. */
export type ConnState = "connecting" | "live" | "reconnecting" | "offline" | "ended" | "failed";

/** What the screen shows; rebuilt after every change. */
export interface FollowView {
  match: Match;
  /** Moves in ply order, each once. */
  moves: MoveRecord[];
  /** False while (or if) moves before the first snapshot are not loaded. */
  historyComplete: boolean;
  /** The caller's legal moves at match.version (empty when not their turn). */
  legal: string[];
  conn: ConnState;
  reconnects: number;
  /** Local clock minus server clock, ms. */
  skewMs: number;
  /** The last error, as a sentence, while it matters. */
  problem: string;
  /** Outage credits, disconnected timeouts, a first-move abort, in version order. */
  notes: EventNote[];
  /** The last event folded (undefined after a snapshot). */
  lastEvent?: MatchEvent;
}

export class Follower {
  private m?: Match;
  private readonly moves = new Map<number, MoveRecord>();
  private readonly notes = new Map<bigint, EventNote>();
  private legal: string[] = [];
  private conn: ConnState = "connecting";
  private reconnects = 0;
  private skew?: number;
  private problem = "";
  private historyComplete = true;
  private lastEvent?: MatchEvent;
  private stopped = false;
  private abort?: AbortController;
  private refreshing = false;
  private refreshAgain = false;
  private pending?: Match;
  private readonly backoff = new Backoff();
  private readonly onOnline = (): void => this.wake();
  private readonly onOffline = (): void => this.setConn("offline");

  constructor(
    private readonly api: Api,
    readonly matchId: string,
    private readonly onChange: (v: FollowView) => void,
  ) {}

  start(): void {
    addEventListener("online", this.onOnline);
    addEventListener("offline", this.onOffline);
    void this.run();
  }

  stop(): void {
    this.stopped = true;
    removeEventListener("online", this.onOnline);
    removeEventListener("offline", this.onOffline);
    this.abort?.abort();
    this.backoff.wake();
  }

  /** version is the last version folded (0n before the first snapshot). */
  get version(): bigint {
    return this.m?.version ?? 0n;
  }

  view(): FollowView | undefined {
    if (!this.m) return undefined;
    return {
      match: this.m,
      moves: [...this.moves.values()].sort((a, b) => a.ply - b.ply),
      historyComplete: this.historyComplete,
      legal: this.legal,
      conn: this.conn,
      reconnects: this.reconnects,
      skewMs: this.skew ?? 0,
      problem: this.problem,
      notes: [...this.notes.values()].sort((a, b) => (a.version < b.version ? -1 : a.version > b.version ? 1 : 0)),
      lastEvent: this.lastEvent,
    };
  }

  /**
   * applyEvents folds the events a MakeMove or Resign answered with, so
   * the caller sees their move before the stream brings it; the stream
   * then skips them by version.
   */
  applyEvents(events: readonly MatchEvent[]): void {
    let changed = false;
    for (const ev of events) {
      if (!this.m || ev.version !== this.m.version + 1n) continue;
      this.foldEvent(ev, false);
      this.legal = [];
      changed = true;
    }
    if (changed) {
      this.refresh();
      this.emit();
    }
  }

  /** refresh reloads the pieces (and legal moves) with GetMatch, coalescing calls. */
  refresh(): void {
    if (this.refreshing) {
      this.refreshAgain = true;
      return;
    }
    this.refreshing = true;
    void (async () => {
      try {
        do {
          this.refreshAgain = false;
          const r = await this.api.match.getMatch({ matchId: this.matchId }, { timeoutMs: 5_000 });
          if (this.stopped || !r.match || !this.m) return;
          if (r.match.version === this.m.version) {
            this.adoptPosition(r.match);
            this.emit();
          } else if (r.match.version > this.m.version) {
            // The stream is behind: use the position when it gets there.
            this.pending = r.match;
          }
        } while (this.refreshAgain && !this.stopped);
      } catch {
        // The fold stays right; only the pieces lag until the next refresh.
      } finally {
        this.refreshing = false;
      }
    })();
  }

  private adoptPosition(s: Match): void {
    if (!this.m) return;
    this.m.pieces = copy(s).pieces;
    this.m.fen4 = s.fen4;
    this.legal = [...s.legalMoves];
  }

  private setConn(c: ConnState): void {
    if (this.conn === c || this.conn === "ended") return;
    this.conn = c;
    this.emit();
  }

  private emit(): void {
    const v = this.view();
    if (v) this.onChange(v);
  }

  // wake reconnects at once (the browser is online again): a stream that
  // stalled during the drop is replaced by one from the last version.
  private wake(): void {
    if (this.stopped || this.conn === "ended") return;
    this.setConn("reconnecting");
    this.abort?.abort();
    this.backoff.wake();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const abort = new AbortController();
      this.abort = abort;
      let err: unknown;
      try {
        debug(`watch from version ${this.version}`);
        const stream = this.api.match.watchMatch({ matchId: this.matchId, fromVersion: this.version }, { signal: abort.signal });
        let first = true;
        for await (const item of stream) {
          if (first) {
            first = false;
            this.problem = "";
            this.setConn("live");
            this.backoff.reset();
          }
          this.handle(item);
          if (this.m && over(this.m)) {
            this.conn = "ended";
            this.emit();
            this.stop();
            return;
          }
        }
      } catch (e) {
        err = e;
      }
      debug(`watch ended: ${String(err)}`);
      if (this.stopped) return;
      if (this.m && over(this.m)) return;
      if (err instanceof ConnectError && err.code === Code.OutOfRange) {
        // The server has less history than this page saw: start over.
        this.m = undefined;
        this.moves.clear();
        this.notes.clear();
      } else if (err && !retryable(err) && !(err instanceof ConnectError && err.code === Code.Canceled) && !abort.signal.aborted) {
        this.problem = describe(err);
        if (err instanceof ConnectError && (err.code === Code.NotFound || err.code === Code.Unauthenticated || err.code === Code.PermissionDenied)) {
          this.conn = "failed";
          this.onChange(this.view() ?? this.failedView());
          return;
        }
      }
      this.reconnects++;
      this.setConn(navigator.onLine ? "reconnecting" : "offline");
      await this.backoff.wait();
    }
  }

  private failedView(): FollowView {
    return {
      match: create(MatchSchema, { matchId: this.matchId }), moves: [], historyComplete: false, legal: [],
      conn: "failed", reconnects: this.reconnects, skewMs: 0, problem: this.problem, notes: [],
    };
  }

  private handle(item: WatchMatchResponse): void {
    switch (item.item.case) {
      case "snapshot": {
        const s = item.item.value;
        if (this.m && s.version < this.m.version) return;
        const prev = this.m?.version ?? 0n;
        const hadState = this.m !== undefined;
        this.m = copy(s);
        this.legal = [...s.legalMoves];
        this.lastEvent = undefined;
        if (s.version > prev + (hadState ? 0n : 1n) && s.version > 1n) {
          // Moves between what we had and the snapshot: load them.
          void this.loadHistory(hadState ? prev : 1n, s.version);
        }
        break;
      }
      case "event": {
        const ev = item.item.value;
        if (!this.m) throw new ConnectError("event before snapshot", Code.Unavailable);
        if (ev.version <= this.m.version) return; // folded already (from MakeMove)
        if (ev.version !== this.m.version + 1n) {
          // A gap: reconnect from the last version seen.
          throw new ConnectError(`version gap: have ${this.m.version}, got ${ev.version}`, Code.Unavailable);
        }
        this.foldEvent(ev, true);
        this.legal = item.version === this.m.version ? [...item.legalMoves] : [];
        if (ev.event.case === "moveApplied" && !over(this.m)) this.refresh();
        break;
      }
      default:
        return;
    }
    this.emit();
  }

  private foldEvent(ev: MatchEvent, fromStream: boolean): void {
    if (!this.m) return;
    fold(this.m, ev);
    this.lastEvent = ev;
    const rec = moveRecord(ev);
    if (rec) this.moves.set(rec.ply, rec);
    const note = eventNote(ev);
    if (note) this.notes.set(note.version, note);
    if (fromStream && ev.occurredAt) {
      const sample = Date.now() - timestampMs(ev.occurredAt);
      this.skew = this.skew === undefined ? sample : Math.min(this.skew, sample);
    }
    if (this.pending && this.pending.version === this.m.version) {
      this.adoptPosition(this.pending);
      this.pending = undefined;
    } else if (this.pending && this.pending.version < this.m.version) {
      this.pending = undefined;
    }
  }

  // loadHistory reads the moves of versions (from, to] with a second
  // stream that it closes once it reaches to. If the server trimmed them
  // it answers with a snapshot: the list then starts later.
  private async loadHistory(from: bigint, to: bigint): Promise<void> {
    this.historyComplete = false;
    const abort = new AbortController();
    for (let attempt = 0; attempt < 5 && !this.stopped; attempt++) {
      try {
        for await (const item of this.api.match.watchMatch({ matchId: this.matchId, fromVersion: from }, { signal: abort.signal })) {
          if (item.item.case === "snapshot") break;
          if (item.item.case !== "event") continue;
          const ev = item.item.value;
          if (ev.version > to) break;
          const rec = moveRecord(ev);
          if (rec) this.moves.set(rec.ply, rec);
          const note = eventNote(ev);
          if (note) this.notes.set(note.version, note);
          from = ev.version;
          if (ev.version === to) break;
        }
        abort.abort();
        this.historyComplete = from >= to;
        this.emit();
        return;
      } catch (e) {
        if (!retryable(e)) break;
        await new Promise((r) => setTimeout(r, 500 * (attempt + 1)));
      }
    }
    this.emit();
  }
}
