// Measuring the seat's round trip as cmd/internal/client.PingLoop does
// (docs/match.md "Lag compensation"): every next_ping_in while seated in a
// running match, a Ping without a token and at once a Ping with the token
// it returned; the server takes the time between as the round trip, and
// compensates by it the moves that reach it without a think time (a move
// retried after a reload). Refusals that mean "nothing to measure" (the
// match is over, the caller holds no seat, the match is gone, an older
// server) stop it; any other failure waits for the next round.

import { Code, ConnectError, type CallOptions } from "@connectrpc/connect";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { Duration } from "@bufbuild/protobuf/wkt";
import type { PingRequestSchema, PingResponse } from "./gen/fourkingdoms/match/v1/match_pb";

/** What a Pinger needs: the match client's ping, and a timer (tests pass their own). */
export interface PingApi {
  ping(req: MessageInitShape<typeof PingRequestSchema>, opts?: CallOptions): Promise<PingResponse>;
}

/** A timer: setTimeout and clearTimeout, or a test's. */
export interface PingTimer {
  set(fn: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

const browserTimer: PingTimer = {
  set: (fn, ms) => setTimeout(fn, ms),
  clear: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
};

/** The wait between measurements until the server names its own. */
export const defaultPingIntervalMs = 5_000;

/** ms converts a Duration to milliseconds. */
export function ms(d: Duration | undefined): number | undefined {
  return d ? Number(d.seconds) * 1000 + d.nanos / 1e6 : undefined;
}

/** Pinger measures one match's round trip until stopped. */
export class Pinger {
  /** estimateMs is the server's estimate of the seat's round trip, once measured. */
  estimateMs?: number;
  private stopped = false;
  private handle: unknown;

  constructor(
    private readonly api: PingApi,
    private readonly matchId: string,
    private readonly onMeasure?: (r: PingResponse) => void,
    private readonly timer: PingTimer = browserTimer,
  ) {}

  /** start measures at once, then every next_ping_in. */
  start(): void {
    void this.round();
  }

  /** stop ends the measurements (a call in flight is ignored). */
  stop(): void {
    this.stopped = true;
    this.timer.clear(this.handle);
  }

  /** running reports whether measurements go on. */
  get running(): boolean {
    return !this.stopped;
  }

  private async round(): Promise<void> {
    let next = defaultPingIntervalMs;
    try {
      const first = await this.api.ping({ matchId: this.matchId }, { timeoutMs: 10_000 });
      if (this.stopped) return;
      const r = await this.api.ping({ matchId: this.matchId, token: first.token }, { timeoutMs: 10_000 });
      if (this.stopped) return;
      this.estimateMs = ms(r.roundTripEstimate) ?? this.estimateMs;
      next = ms(r.nextPingIn) || next;
      this.onMeasure?.(r);
    } catch (err) {
      if (err instanceof ConnectError && [Code.FailedPrecondition, Code.PermissionDenied, Code.NotFound, Code.Unimplemented].includes(err.code)) {
        this.stopped = true;
      }
    }
    if (!this.stopped) this.handle = this.timer.set(() => void this.round(), next);
  }
}
