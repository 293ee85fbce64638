// The connection to the backend: one Connect transport to the page's own
// origin (the one-origin edge of `make run`, or an ingress that routes by
// path prefix), the guest session kept in localStorage, and a client for
// each service.

import { createClient, type Client, type Interceptor, type Transport } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { timestampMs, type Timestamp } from "@bufbuild/protobuf/wkt";
import { AuthService } from "./gen/fourkingdoms/auth/v1/auth_pb";
import { MatchService } from "./gen/fourkingdoms/match/v1/match_pb";
import { MatchmakingService } from "./gen/fourkingdoms/matchmaking/v1/matchmaking_pb";
import { RatingService } from "./gen/fourkingdoms/rating/v1/rating_pb";

/** A guest session as GuestLogin or RefreshSession returned it. */
export interface Session {
  token: string;
  playerId: string;
  displayName: string;
  /** Expiry, ms since the epoch. */
  expiresAt: number;
  /** The refresh token: brings the same player back once the token expired (RefreshSession). */
  refreshToken?: string;
  /** The refresh token's expiry, ms since the epoch. */
  refreshExpiresAt?: number;
}

const sessionKey = "fk.session";

/** renewBefore: a token closer than this to its expiry is renewed when the page starts. */
export const renewBefore = 3_600_000;

/** refreshable reports whether s's refresh token may still work at now. */
export function refreshable(s: Session | undefined, now = Date.now()): s is Session & { refreshToken: string } {
  return !!s?.refreshToken && (s.refreshExpiresAt === undefined || s.refreshExpiresAt > now + 5_000);
}

/** The services and the session they call with. */
export interface Api {
  auth: Client<typeof AuthService>;
  match: Client<typeof MatchService>;
  matchmaking: Client<typeof MatchmakingService>;
  rating: Client<typeof RatingService>;
  session(): Session | undefined;
  /** signIn creates a new guest session and keeps it. */
  signIn(displayName: string): Promise<Session>;
  /**
   * refresh renews the session's token with its refresh token, for the same
   * player, and keeps the result; it rejects when the session cannot be
   * renewed (no refresh token, revoked, expired).
   */
  refresh(): Promise<Session>;
  /** resume renews a kept session whose token expires within renewBefore; failures leave it as it is. */
  resume(): Promise<void>;
  /**
   * rename gives the player a new display name (SetDisplayName) and keeps
   * the tokens of the answer: the refresh token sent is rotated by it.
   */
  rename(displayName: string): Promise<Session>;
  /**
   * signOut forgets the session here at once and ends it on the server
   * (RevokeSession); the promise settles when the server answered, and
   * never rejects: the session is gone from this browser either way.
   */
  signOut(): Promise<void>;
}

/**
 * loadSession reads the kept session. One whose token expired but whose
 * refresh token still works is returned (resume renews it); one that
 * cannot come back is dropped and reported as expired.
 */
export function loadSession(storage: Storage, now = Date.now()): { session?: Session; expired: boolean } {
  const raw = storage.getItem(sessionKey);
  if (!raw) return { expired: false };
  try {
    const s = JSON.parse(raw) as Session;
    if (typeof s.token !== "string" || typeof s.expiresAt !== "number") throw new Error("bad session");
    if (s.expiresAt <= now + 5_000 && !refreshable(s, now)) {
      storage.removeItem(sessionKey);
      return { expired: true };
    }
    return { session: s, expired: false };
  } catch {
    storage.removeItem(sessionKey);
    return { expired: false };
  }
}

/**
 * newApi builds the clients for baseUrl (the page's origin). Tests pass
 * their own transport (an in-memory router); the session's token is added
 * to every call either way.
 */
export function newApi(baseUrl: string, storage: Storage, transportFor?: (auth: Interceptor) => Transport): Api {
  let session = loadSession(storage).session;
  const auth: Interceptor = (next) => async (req) => {
    if (session) req.header.set("authorization", `Bearer ${session.token}`);
    return next(req);
  };
  const transport = transportFor?.(auth) ?? createConnectTransport({ baseUrl, useBinaryFormat: true, interceptors: [auth] });
  const api: Api = {
    auth: createClient(AuthService, transport),
    match: createClient(MatchService, transport),
    matchmaking: createClient(MatchmakingService, transport),
    rating: createClient(RatingService, transport),
    session: () => session,
    async signIn(displayName: string) {
      session = undefined;
      const r = await api.auth.guestLogin({ displayName }, { timeoutMs: 10_000 });
      return keep(r);
    },
    async refresh() {
      const s = session;
      if (!refreshable(s)) throw new Error("this session cannot be renewed");
      try {
        return keep(await api.auth.refreshSession({ refreshToken: s.refreshToken }, { timeoutMs: 10_000 }));
      } catch (err) {
        // Another tab renewed the same session a moment ago (the server
        // answers REFRESH_TOKEN_RACED) and stored the result: use it.
        const kept = loadSession(storage).session;
        if (kept && kept.refreshToken !== s.refreshToken && kept.expiresAt > Date.now() + 5_000) {
          session = kept;
          return kept;
        }
        throw err;
      }
    },
    async resume() {
      if (!session || session.expiresAt > Date.now() + renewBefore || !refreshable(session)) return;
      try {
        await api.refresh();
      } catch {
        // Still usable until it expires, or refused: the next call's
        // refusal leads to a new guest (main.ts, guard).
      }
    },
    async rename(displayName: string) {
      const s = session;
      if (!refreshable(s)) throw new Error("this session cannot be renamed: sign in again");
      return keep(await api.auth.setDisplayName({ refreshToken: s.refreshToken, displayName }, { timeoutMs: 10_000 }));
    },
    async signOut() {
      const refreshToken = session?.refreshToken;
      session = undefined;
      storage.removeItem(sessionKey);
      // The server's answer changes nothing here: an unreachable server
      // leaves a refresh token that expires unused (90 days).
      if (refreshToken) await api.auth.revokeSession({ refreshToken }, { timeoutMs: 10_000 }).then(() => {}, () => {});
    },
  };
  // keep makes r the session and stores it.
  function keep(r: { token: string; playerId: string; displayName: string; expiresAt?: Timestamp; refreshToken: string; refreshExpiresAt?: Timestamp }): Session {
    session = {
      token: r.token,
      playerId: r.playerId,
      displayName: r.displayName,
      expiresAt: r.expiresAt ? timestampMs(r.expiresAt) : Date.now() + 3_600_000,
      refreshToken: r.refreshToken || undefined,
      refreshExpiresAt: r.refreshExpiresAt ? timestampMs(r.refreshExpiresAt) : undefined,
    };
    storage.setItem(sessionKey, JSON.stringify(session));
    return session;
  }
  return api;
}
