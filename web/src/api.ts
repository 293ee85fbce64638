// The connection to the backend: one Connect transport to the page's own
// origin (the one-origin edge of `make run`, or an ingress that routes by
// path prefix), the guest session kept in localStorage, and a client for
// each service.

import { createClient, type Client, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { AuthService } from "./gen/fourkingdoms/auth/v1/auth_pb";
import { MatchService } from "./gen/fourkingdoms/match/v1/match_pb";
import { MatchmakingService } from "./gen/fourkingdoms/matchmaking/v1/matchmaking_pb";
import { RatingService } from "./gen/fourkingdoms/rating/v1/rating_pb";

/** A guest session as GuestLogin returned it. */
export interface Session {
  token: string;
  playerId: string;
  displayName: string;
  /** Expiry, ms since the epoch. */
  expiresAt: number;
}

const sessionKey = "fk.session";

/** The services and the session they call with. */
export interface Api {
  auth: Client<typeof AuthService>;
  match: Client<typeof MatchService>;
  matchmaking: Client<typeof MatchmakingService>;
  rating: Client<typeof RatingService>;
  session(): Session | undefined;
  /** signIn creates a new guest session and keeps it. */
  signIn(displayName: string): Promise<Session>;
  signOut(): void;
}

/** loadSession reads the kept session; an expired one is dropped and reported. */
export function loadSession(storage: Storage, now = Date.now()): { session?: Session; expired: boolean } {
  const raw = storage.getItem(sessionKey);
  if (!raw) return { expired: false };
  try {
    const s = JSON.parse(raw) as Session;
    if (typeof s.token !== "string" || typeof s.expiresAt !== "number") throw new Error("bad session");
    if (s.expiresAt <= now + 5_000) {
      storage.removeItem(sessionKey);
      return { expired: true };
    }
    return { session: s, expired: false };
  } catch {
    storage.removeItem(sessionKey);
    return { expired: false };
  }
}

/** newApi builds the clients for baseUrl (the page's origin). */
export function newApi(baseUrl: string, storage: Storage): Api {
  let session = loadSession(storage).session;
  const auth: Interceptor = (next) => async (req) => {
    if (session) req.header.set("authorization", `Bearer ${session.token}`);
    return next(req);
  };
  const transport = createConnectTransport({ baseUrl, useBinaryFormat: true, interceptors: [auth] });
  const api: Api = {
    auth: createClient(AuthService, transport),
    match: createClient(MatchService, transport),
    matchmaking: createClient(MatchmakingService, transport),
    rating: createClient(RatingService, transport),
    session: () => session,
    async signIn(displayName: string) {
      session = undefined;
      const r = await api.auth.guestLogin({ displayName }, { timeoutMs: 10_000 });
      session = {
        token: r.token,
        playerId: r.playerId,
        displayName: r.displayName,
        expiresAt: r.expiresAt ? timestampMs(r.expiresAt) : Date.now() + 3_600_000,
      };
      storage.setItem(sessionKey, JSON.stringify(session));
      return session;
    },
    signOut() {
      session = undefined;
      storage.removeItem(sessionKey);
    },
  };
  return api;
}
