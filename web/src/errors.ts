// Errors as plain sentences. Every refusal of the services carries a
// google.rpc.ErrorInfo (domain, reason); this module reads it without the
// googleapis protos (a few bytes of protobuf) and maps each reason of
// docs/api.md's refusal table to a sentence a player understands.

import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import { Code, ConnectError } from "@connectrpc/connect";

/** The google.rpc.ErrorInfo of a refusal. */
export interface ErrorInfo {
  reason: string;
  domain: string;
  metadata: Record<string, string>;
}

const errorInfoType = "google.rpc.ErrorInfo";

/** decodeErrorInfo reads a google.rpc.ErrorInfo from its binary form. */
export function decodeErrorInfo(bytes: Uint8Array): ErrorInfo {
  const out: ErrorInfo = { reason: "", domain: "", metadata: {} };
  const r = new BinaryReader(bytes);
  while (r.pos < r.len) {
    const [field, wt] = r.tag();
    if (field === 1 && wt === WireType.LengthDelimited) out.reason = r.string();
    else if (field === 2 && wt === WireType.LengthDelimited) out.domain = r.string();
    else if (field === 3 && wt === WireType.LengthDelimited) {
      const entry = new BinaryReader(r.bytes());
      let k = "", v = "";
      while (entry.pos < entry.len) {
        const [f, w] = entry.tag();
        if (f === 1 && w === WireType.LengthDelimited) k = entry.string();
        else if (f === 2 && w === WireType.LengthDelimited) v = entry.string();
        else entry.skip(w);
      }
      out.metadata[k] = v;
    } else r.skip(wt);
  }
  return out;
}

/** errorInfo returns the ErrorInfo detail of err, if it has one. */
export function errorInfo(err: unknown): ErrorInfo | undefined {
  if (!(err instanceof ConnectError)) return undefined;
  for (const d of err.details) {
    if ("type" in d && d.type === errorInfoType && d.value instanceof Uint8Array) {
      try {
        return decodeErrorInfo(d.value);
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/** reason is errorInfo(err)?.reason, or "". */
export function reason(err: unknown): string {
  return errorInfo(err)?.reason ?? "";
}

// Sentences by reason (docs/api.md, "Error codes").
const sentences: Record<string, string> = {
  // match
  BAD_MOVE_TEXT: "That move could not be read. Write it like h2-h4, Nj1-i3 or O-O.",
  MOVE_ID_REUSED: "That move was already sent as a different move. Reload the page.",
  MATCH_NOT_FOUND: "There is no game with that id.",
  NOT_A_PLAYER: "You are not playing in this game, so you can only watch it.",
  FORBIDDEN: "Your account may not do that.",
  NOT_YOUR_TURN: "It is not your turn.",
  ILLEGAL_MOVE: "That move is not legal in this position.",
  SEAT_NOT_LIVE: "You are no longer playing in this game (you resigned, ran out of time or are out).",
  MATCH_OVER: "The game is already over.",
  CLAIM_NOT_ALLOWED: "You cannot claim the win now: a claim needs a game that allows claims, exactly two players left and a lead of more than 20 points.",
  TIME_RAN_OUT: "Your time ran out before the move arrived.",
  PLY_MISMATCH: "The position changed before your move arrived. The board is up to date now: move again.",
  CONFLICT: "Someone else changed the game at the same moment. Try again.",
  SLOW_CONSUMER: "The connection was too slow to keep up; reconnecting.",
  FUTURE_VERSION: "The server has less of this game than this page; reloading it.",
  STORE_UNAVAILABLE: "The server cannot reach its storage right now. Retrying.",
  // matchmaking
  QUEUE_NOT_FOUND: "That queue does not exist (any more). Pick another one.",
  TICKET_NOT_FOUND: "Your search was forgotten by the server. Start a new one.",
  NOT_TICKET_OWNER: "That search belongs to another player.",
  TICKET_MATCHED: "A game was already found for you; it cannot be cancelled.",
  TICKET_FORMING: "A game is being formed for you right now; it cannot be cancelled.",
  // private tables and rematch
  TABLE_NOT_FOUND: "There is no table with that code: check the code, or the table closed (its players left or it stayed idle too long).",
  TABLE_FULL: "That table is full: every open seat is taken.",
  SEAT_TAKEN: "Someone took that seat a moment ago. Pick another one.",
  TABLE_STARTED: "That table's game has already started.",
  ALREADY_SEATED: "You are already searching for a game or sitting at another table: cancel the search or leave that table first.",
  TOO_MANY_GUESSES: "Too many wrong table codes. Wait a moment, then check the code and try again.",
  NOT_HOST: "Only the host can start the table.",
  NO_FREE_BOTS: "No bot is free to take a seat right now. Try again in a moment.",
  MATCH_SERVICE_UNAVAILABLE: "The game server cannot be reached right now, so the game could not start. Try again in a moment.",
  SEATS_OPEN: "Some open seats are still free: wait for your friends or fill the free seats with bots.",
  MATCH_NOT_FINISHED: "The game is not over yet.",
  REMATCH_DECLINED: "A player declined the rematch.",
  REMATCH_EXPIRED: "The time for a rematch has passed.",
  REMATCH_STARTED: "The rematch has already started.",
  REMATCH_NOT_FOUND: "Nobody has offered a rematch of this game yet.",
  // rating
  RULE_SET_NOT_FOUND: "There are no ratings for that rule set.",
  PLAYER_NOT_FOUND: "No rated game yet: play one to get a rating.",
  // auth
  MISSING_TOKEN: "You are not signed in.",
  MALFORMED_TOKEN: "Your session could not be read. Sign in again.",
  TOKEN_EXPIRED: "Your guest session has expired.",
  UNKNOWN_KEY: "Your session was signed by a key this server no longer knows. Sign in again.",
  INVALID_TOKEN: "Your session is not valid here. Sign in again.",
  ROLE_NOT_ALLOWED: "Your account may not do that.",
  REFRESH_TOKEN_INVALID: "Your guest session has ended (signed out, or unused for too long). Sign in again.",
  REFRESH_TOKEN_REUSED: "Your guest session was used from somewhere else, so it was ended for safety. Sign in again.",
  REFRESH_TOKEN_RACED: "Your session was renewed in another tab at the same moment. Try again.",
  // server
  RATE_LIMITED: "Too many requests. Wait a moment and try again.",
  TOO_MANY_STREAMS: "Too many live views are open for your player (other tabs?). Close some and try again.",
  KEYS_UNAVAILABLE: "The sign-in provider cannot be reached right now. Try again in a moment.",
  SHUTTING_DOWN: "The server is restarting. Retrying.",
  INTERNAL: "Something went wrong on the server. Try again.",
};

const retryInfoType = "google.rpc.RetryInfo";

/**
 * retryDelayMs returns the delay of err's google.rpc.RetryInfo detail
 * (TOO_MANY_GUESSES, RATE_LIMITED), or undefined when it has none.
 */
export function retryDelayMs(err: unknown): number | undefined {
  if (!(err instanceof ConnectError)) return undefined;
  for (const d of err.details) {
    if (!("type" in d) || d.type !== retryInfoType || !(d.value instanceof Uint8Array)) continue;
    try {
      // RetryInfo { Duration retry_delay = 1 }; Duration { int64 seconds = 1; int32 nanos = 2 }.
      const r = new BinaryReader(d.value);
      let ms = 0;
      while (r.pos < r.len) {
        const [field, wt] = r.tag();
        if (field !== 1 || wt !== WireType.LengthDelimited) { r.skip(wt); continue; }
        const dr = new BinaryReader(r.bytes());
        while (dr.pos < dr.len) {
          const [f, w] = dr.tag();
          if (f === 1 && w === WireType.Varint) ms += Number(dr.int64()) * 1000;
          else if (f === 2 && w === WireType.Varint) ms += Math.round(dr.int32() / 1e6);
          else dr.skip(w);
        }
      }
      return ms;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** Reasons that mean the session is gone: sign in anew. */
export const sessionReasons = new Set(["MISSING_TOKEN", "MALFORMED_TOKEN", "TOKEN_EXPIRED", "UNKNOWN_KEY", "INVALID_TOKEN"]);

/** describe turns any error of an RPC into one plain sentence. */
export function describe(err: unknown): string {
  const r = reason(err);
  if (r === "INVALID_ARGUMENT" && err instanceof ConnectError) {
    return `The server refused the request: ${err.rawMessage}.`;
  }
  if (r && sentences[r]) {
    const wait = r === "TOO_MANY_GUESSES" || r === "RATE_LIMITED" ? retryDelayMs(err) : undefined;
    return wait ? `${sentences[r]!} (You can try again in ${Math.max(1, Math.ceil(wait / 1000))} s.)` : sentences[r]!;
  }
  if (!(err instanceof ConnectError)) {
    return isNetworkError(err) ? "The server cannot be reached. Check your connection." : "Something went wrong in this page. Reload it.";
  }
  switch (err.code) {
    case Code.Unauthenticated: return "Your session is not valid. Sign in again.";
    case Code.PermissionDenied: return "You may not do that.";
    case Code.NotFound: return "Not found.";
    case Code.Unavailable: return "The server cannot be reached. Check your connection; retrying.";
    case Code.DeadlineExceeded: return "The server took too long to answer. Retrying.";
    case Code.Canceled: return "The request was cancelled.";
    case Code.ResourceExhausted: return "The server is busy. Wait a moment and try again.";
    case Code.Unknown: return "The server cannot be reached. Check your connection.";
    case Code.Unimplemented: return "This server does not offer that yet: it runs an older version than this page.";
    default: return "Something went wrong on the server. Try again.";
  }
}

/**
 * retryable reports whether a failed call may simply be sent again: the
 * network failed, the server is restarting, or it was briefly unavailable
 * or overloaded. Refusals (illegal move, not your turn...) are final.
 */
export function retryable(err: unknown): boolean {
  if (!(err instanceof ConnectError)) return isNetworkError(err);
  switch (err.code) {
    case Code.Unavailable:
    case Code.DeadlineExceeded:
    case Code.Unknown: // fetch failed (offline, connection reset)
    case Code.Internal: // a proxy in between lost the connection
      return reason(err) !== "INTERNAL" || err.code !== Code.Internal;
    case Code.ResourceExhausted:
      return true;
    case Code.Aborted:
      return reason(err) === "CONFLICT";
    default:
      return false;
  }
}

function isNetworkError(err: unknown): boolean {
  return err instanceof TypeError;
}
