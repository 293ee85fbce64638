import { test } from "node:test";
import assert from "node:assert/strict";
import { Code, ConnectError } from "@connectrpc/connect";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { loadSession, newApi, renewBefore, type Api, type Session } from "../src/api";
import { describe } from "../src/errors";
import { FakeServer } from "./fakeserver";

// memoryStorage is the part of the browser's Storage the session uses.
function memoryStorage(init?: Session): Storage {
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

const now = Date.now();
const stale: Session = {
  token: "t1", playerId: "g-same", displayName: "Same", expiresAt: now - 60_000,
  refreshToken: "r1", refreshExpiresAt: now + 86_400_000,
};

// fakeAuth replaces the AuthService client: it records the calls and
// answers RefreshSession with answer.
function fakeAuth(api: Api, answer: () => Promise<unknown>): { refreshed: string[]; revoked: string[] } {
  const calls = { refreshed: [] as string[], revoked: [] as string[] };
  (api as { auth: unknown }).auth = {
    refreshSession: (req: { refreshToken: string }) => { calls.refreshed.push(req.refreshToken); return answer(); },
    revokeSession: (req: { refreshToken: string }) => { calls.revoked.push(req.refreshToken); return Promise.resolve({}); },
  };
  return calls;
}

const renewed = () => Promise.resolve({
  token: "t2", playerId: "g-same", displayName: "Same", expiresAt: timestampFromMs(now + 86_400_000),
  refreshToken: "r2", refreshExpiresAt: timestampFromMs(now + 90 * 86_400_000),
});

test("an expired token with a live refresh token is kept for renewal", () => {
  assert.deepEqual(loadSession(memoryStorage(stale), now), { session: stale, expired: false });
});

test("a session that cannot come back is dropped and reported", () => {
  for (const s of [{ ...stale, refreshToken: undefined }, { ...stale, refreshExpiresAt: now - 1 }]) {
    const st = memoryStorage(s);
    assert.deepEqual(loadSession(st, now), { expired: true });
    assert.equal(st.getItem("fk.session"), null);
  }
});

test("resume renews an expired token for the same player and keeps the new tokens", async () => {
  const st = memoryStorage(stale);
  const api = newApi("http://localhost", st);
  const calls = fakeAuth(api, renewed);
  await api.resume();
  assert.deepEqual(calls.refreshed, ["r1"]);
  assert.equal(api.session()?.token, "t2");
  assert.equal(api.session()?.playerId, "g-same");
  assert.equal(loadSession(st).session?.refreshToken, "r2");
});

test("resume leaves a fresh token alone", async () => {
  const st = memoryStorage({ ...stale, expiresAt: now + 2 * renewBefore });
  const api = newApi("http://localhost", st);
  const calls = fakeAuth(api, renewed);
  await api.resume();
  assert.deepEqual(calls.refreshed, []);
  assert.equal(api.session()?.token, "t1");
});

test("a refresh that raced another tab adopts what that tab stored", async () => {
  const st = memoryStorage(stale);
  const api = newApi("http://localhost", st);
  fakeAuth(api, () => {
    // The other tab won and stored its result before this answer came.
    st.setItem("fk.session", JSON.stringify({ ...stale, token: "t-other", expiresAt: now + 86_400_000, refreshToken: "r-other" }));
    return Promise.reject(new ConnectError("rotated a moment ago", Code.Aborted));
  });
  const s = await api.refresh();
  assert.equal(s.token, "t-other");
  assert.equal(api.session()?.refreshToken, "r-other");
});

test("a refused refresh rejects and keeps nothing new", async () => {
  const st = memoryStorage(stale);
  const api = newApi("http://localhost", st);
  fakeAuth(api, () => Promise.reject(new ConnectError("revoked", Code.Unauthenticated)));
  await assert.rejects(api.refresh());
  assert.equal(api.session()?.token, "t1");
});

test("signOut ends the session on the server and here", async () => {
  const st = memoryStorage({ ...stale, expiresAt: now + 86_400_000 });
  const api = newApi("http://localhost", st);
  const calls = fakeAuth(api, renewed);
  await api.signOut();
  assert.deepEqual(calls.revoked, ["r1"]);
  assert.equal(api.session(), undefined);
  assert.equal(st.getItem("fk.session"), null);
});

test("rename keeps the rotated tokens and the new name; the old refresh token is spent", async () => {
  const srv = new FakeServer();
  const st = memoryStorage(srv.session("g-1"));
  const api = srv.api("g-1", st);
  const s = await api.rename("  Queen of Spades ");
  assert.equal(s.displayName, "Queen of Spades");
  assert.equal(s.playerId, "g-1");
  assert.equal(s.refreshToken, "r2-g-1");
  assert.deepEqual(loadSession(st).session, s);
  assert.deepEqual(srv.revoked, ["r1-g-1"]);
  // The next renewal uses the new refresh token.
  await api.refresh();
  assert.equal(api.session()?.refreshToken, "r3-g-1");
  assert.equal(api.session()?.displayName, "g-1");
});

test("a refused rename keeps the session as it was and says why", async () => {
  const srv = new FakeServer();
  const st = memoryStorage(srv.session("g-1"));
  const api = srv.api("g-1", st);
  await assert.rejects(api.rename("Bot Greedy"), (e) => describe(e) === "The server refused the request: display_name: a bot's name is reserved.");
  assert.equal(api.session()?.refreshToken, "r1-g-1");
  assert.equal(loadSession(st).session?.displayName, "g-1");
});

test("signOut revokes the refresh token on the server and forgets the session here, even when the server is down", async () => {
  const srv = new FakeServer();
  const st = memoryStorage(srv.session("g-1"));
  await srv.api("g-1", st).signOut();
  assert.deepEqual(srv.revoked, ["r1-g-1"]);
  assert.equal(st.getItem("fk.session"), null);

  srv.down = true;
  const st2 = memoryStorage(srv.session("g-2"));
  const api2 = srv.api("g-2", st2);
  await api2.signOut();
  assert.equal(api2.session(), undefined);
  assert.equal(st2.getItem("fk.session"), null);
});
