// Following a server stream that ends with OK after a final item
// (WatchTable, WatchRematch): the stream is reopened after any drop (a
// network error, UNAVAILABLE, a plain end before the final item) with
// backoff, and at once when the browser is online again; it stops at the
// final item, at a refusal, or when the caller stops it. Each item is the
// whole state, so a reopened stream needs no position to resume from.

import { Code, ConnectError } from "@connectrpc/connect";
import { Backoff } from "./backoff";
import { retryable } from "./errors";

export interface WatchHandlers<T> {
  /** item receives every item, the final one too. */
  item(x: T): void;
  /** final reports whether x is the stream's last item. */
  final(x: T): boolean;
  /** fail receives a refusal (not retried); the watch has stopped. */
  fail(err: unknown): void;
  /** reconnecting is told of each drop before the stream is reopened. */
  reconnecting?(err: unknown): void;
}

/** watchStream follows open's stream; it returns a function that stops it. */
export function watchStream<T>(open: (signal: AbortSignal) => AsyncIterable<T>, h: WatchHandlers<T>): () => void {
  let stopped = false;
  let abort: AbortController | undefined;
  const bo = new Backoff();
  const online = (): void => bo.wake();
  const hasEvents = typeof addEventListener === "function";
  if (hasEvents) addEventListener("online", online);
  const stop = (): void => {
    if (stopped) return;
    stopped = true;
    if (hasEvents) removeEventListener("online", online);
    abort?.abort();
    bo.wake();
  };
  void (async () => {
    while (!stopped) {
      abort = new AbortController();
      let drop: unknown = new Error("the stream ended before its last item");
      try {
        for await (const x of open(abort.signal)) {
          if (stopped) return;
          bo.reset();
          h.item(x);
          if (h.final(x)) return stop();
        }
      } catch (err) {
        if (stopped) return;
        const cancelled = err instanceof ConnectError && err.code === Code.Canceled;
        if (!retryable(err) && !cancelled) {
          stop();
          return h.fail(err);
        }
        drop = err;
      }
      if (stopped) return;
      h.reconnecting?.(drop);
      await bo.wait();
    }
  })();
  return stop;
}
