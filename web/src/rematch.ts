// Rematch after a finished match: the offer's state (who accepted, who is
// still to answer, the time left), offering or accepting (the same call,
// OfferRematch), declining, and following the offer with WatchRematch
// until the new match starts, someone declines or the window passes.
// No DOM here (the summary panel is in game.ts), so the flow is
// unit-tested against an in-memory transport (test/rematch.test.ts).

import { timestampMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Api } from "./api";
import { describe } from "./errors";
import { RematchState, type Rematch } from "./gen/fourkingdoms/matchmaking/v1/matchmaking_pb";
import { watchStream } from "./watch";

/** What the panel shows. */
export interface RematchView {
  /** The offer; undefined while nobody offered. */
  rematch?: Rematch;
  /** Whether the caller has offered or accepted. */
  accepted: boolean;
  /** The humans still to accept. */
  waitingFor: string[];
  /** Milliseconds left until the offer expires (an open offer only). */
  leftMs?: number;
  /** A sentence for the panel ("" when the buttons say it all). */
  text: string;
  /** Whether the Rematch (offer or accept) and Decline buttons apply. */
  canOffer: boolean;
  canDecline: boolean;
}

/** rematchView describes r for the player me; name gives a player's display name. */
export function rematchView(r: Rematch | undefined, me: string, name: (id: string) => string, now = Date.now()): RematchView {
  if (!r) return { accepted: false, waitingFor: [], text: "", canOffer: true, canDecline: false };
  const accepted = r.acceptedPlayerIds.includes(me);
  const waitingFor = r.playerIds.filter((p) => !r.acceptedPlayerIds.includes(p));
  const leftMs = r.expiresAt ? Math.max(0, timestampMs(r.expiresAt) - now) : undefined;
  const v: RematchView = { rematch: r, accepted, waitingFor, leftMs, text: "", canOffer: false, canDecline: false };
  switch (r.state) {
    case RematchState.OFFERED: {
      const secs = leftMs === undefined ? "" : ` (${Math.ceil(leftMs / 1000)} s left)`;
      const others = waitingFor.filter((p) => p !== me).map(name);
      if (accepted) v.text = others.length ? `Rematch offered: waiting for ${others.join(", ")}${secs}.` : `Rematch accepted by everyone: starting${secs}.`;
      else v.text = `${r.acceptedPlayerIds.map(name).join(", ") || "A player"} offered a rematch${secs}.`;
      v.canOffer = !accepted && leftMs !== 0;
      v.canDecline = leftMs !== 0;
      break;
    }
    case RematchState.STARTED:
      v.text = "Rematch accepted by everyone: the new game is starting.";
      break;
    case RematchState.DECLINED:
      v.text = r.declinedBy === me ? "You declined the rematch." : `${r.declinedBy ? name(r.declinedBy) : "A player"} declined the rematch.`;
      break;
    case RematchState.EXPIRED:
      v.text = "Nobody accepted the rematch in time.";
      break;
  }
  return v;
}

/** final reports whether r will not change any more. */
export function rematchOver(r: Rematch): boolean {
  return r.state === RematchState.DECLINED || r.state === RematchState.EXPIRED || (r.state === RematchState.STARTED && !!r.newMatchId);
}

/**
 * RematchFollower keeps a finished match's rematch offer up to date. While
 * nobody has offered, WatchRematch answers NOT_FOUND: it asks again every
 * pollMs (until pollUntil), so an offer made by another player shows
 * within that time. Once
 * there is an offer it follows the stream to its end, and calls onStarted
 * once with the new match id.
 */
export class RematchFollower {
  private r?: Rematch;
  private problem = "";
  private stopWatch?: () => void;
  private poll?: ReturnType<typeof setTimeout>;
  private stopped = false;
  private startedSent = false;

  constructor(
    private readonly api: Api,
    readonly matchId: string,
    private readonly onChange: (r: Rematch | undefined, problem: string) => void,
    private readonly onStarted: (newMatchId: string) => void,
    private readonly pollMs = 3_000,
    private readonly pollUntil = Date.now() + 15 * 60_000,
  ) {}

  get rematch(): Rematch | undefined {
    return this.r;
  }

  start(): void {
    this.watch();
  }

  stop(): void {
    this.stopped = true;
    this.stopWatch?.();
    clearTimeout(this.poll);
  }

  /** offer offers a rematch, or accepts the one offered. */
  async offer(): Promise<void> {
    await this.call(() => this.api.matchmaking.offerRematch({ matchId: this.matchId }, { timeoutMs: 10_000 }));
  }

  /** decline ends the offer for everyone. */
  async decline(): Promise<void> {
    await this.call(() => this.api.matchmaking.declineRematch({ matchId: this.matchId }, { timeoutMs: 10_000 }));
  }

  private async call(f: () => Promise<{ rematch?: Rematch }>): Promise<void> {
    try {
      const r = await f();
      this.problem = "";
      if (r.rematch) this.apply(r.rematch);
      // An offer now exists: follow it at once rather than at the next poll.
      if (!this.stopWatch && !this.stopped && this.r && !rematchOver(this.r)) {
        clearTimeout(this.poll);
        this.watch();
      }
    } catch (err) {
      // REMATCH_DECLINED / REMATCH_EXPIRED: the offer ended meanwhile;
      // the stream (or the next poll) shows how.
      this.problem = describe(err);
      this.onChange(this.r, this.problem);
    }
  }

  private apply(r: Rematch): void {
    // A newer answer is never replaced by an older one: the accepted list
    // only grows and a final state stays.
    if (this.r && rematchOver(this.r) && !rematchOver(r)) return;
    this.r = r;
    this.onChange(r, this.problem);
    if (r.state === RematchState.STARTED && r.newMatchId && !this.startedSent) {
      this.startedSent = true;
      this.onStarted(r.newMatchId);
    }
    if (rematchOver(r)) this.stop();
  }

  private watch(): void {
    if (this.stopped) return;
    this.stopWatch = watchStream((signal) => this.api.matchmaking.watchRematch({ matchId: this.matchId }, { signal }), {
      item: (x) => { if (x.rematch) this.apply(x.rematch); },
      final: (x) => !!x.rematch && rematchOver(x.rematch),
      fail: (err) => {
        this.stopWatch = undefined;
        if (this.stopped) return;
        if (err instanceof ConnectError && err.code === Code.NotFound) {
          // No offer yet: ask again later, for as long as an offer could
          // still come (a page left open does not ask forever).
          if (Date.now() < this.pollUntil) this.poll = setTimeout(() => this.watch(), this.pollMs);
          return;
        }
        this.problem = describe(err);
        this.onChange(this.r, this.problem);
      },
    });
  }
}
