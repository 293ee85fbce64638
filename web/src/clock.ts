// Clock display. The server is the only clock authority: a running clock
// counts down to its turn_deadline (docs/api.md "Clocks"); this module
// turns milliseconds into what a player reads.

/**
 * formatClock writes a time left: "m:ss" from ten seconds up, "s.t" (tenths)
 * below, "h:mm:ss" from an hour; never negative.
 */
export function formatClock(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) ms = 0;
  if (ms < 10_000) {
    // Round down: a clock must not show time the player does not have.
    const tenths = Math.floor(ms / 100);
    return `${Math.floor(tenths / 10)}.${tenths % 10}`;
  }
  const total = Math.floor(ms / 1000);
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const ss = String(s).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${ss}` : `${m}:${ss}`;
}

/** A clock as the server reported it, in plain milliseconds. */
export interface ClockState {
  /** Time left when the message was built. */
  remainingMs: number;
  running: boolean;
  /** When a running clock flags, server time in ms since the epoch; 0 if unset. */
  deadlineMs: number;
}

/**
 * timeLeft is what a clock shows at local time nowMs. skewMs is the local
 * clock minus the server's (estimated from events as they arrive), so a
 * deadline in server time is deadline + skew in local time. A stopped
 * clock shows its remaining time.
 */
export function timeLeft(c: ClockState, nowMs: number, skewMs = 0): number {
  if (!c.running || c.deadlineMs === 0) return Math.max(0, c.remainingMs);
  return Math.max(0, c.deadlineMs + skewMs - nowMs);
}

/**
 * awaitingFirstMove reports whether seat (1..4) has not moved yet at ply:
 * in the first round seats move in order, so seat s has moved once s
 * plies are played. The first-move limit (30 s) applies only then.
 */
export function awaitingFirstMove(seat: number, ply: number): boolean {
  return ply < seat;
}

/**
 * disconnectedText is the countdown of a disconnected player at local time
 * nowMs: "disconnected — m:ss" until graceEndMs (server time; skewMs as for
 * timeLeft), when their seat runs out of time (docs/match.md
 * "Disconnects"). Rounded down like a clock, never negative.
 */
export function disconnectedText(graceEndMs: number, nowMs: number, skewMs = 0): string {
  const left = Math.max(0, Math.floor((graceEndMs + skewMs - nowMs) / 1000));
  return `disconnected — ${Math.floor(left / 60)}:${String(left % 60).padStart(2, "0")}`;
}
