// Which queue a match was found in, remembered for the browser tab
// (sessionStorage, so a reload keeps it): a game from the queue that is
// aborted because another seat missed its first move sends the player back
// to searching in that queue (docs/web.md "First-move abort").

const prefix = "fk.queueOf.";

/** rememberQueueOfMatch notes that matchId was found in queue. */
export function rememberQueueOfMatch(matchId: string, queue: string): void {
  try {
    sessionStorage.setItem(prefix + matchId, queue);
  } catch {
    // Storage refused (private mode, quota): no requeue for this game.
  }
}

/** queueOfMatch is the queue matchId was found in, or "" (a table's, or unknown). */
export function queueOfMatch(matchId: string): string {
  try {
    return sessionStorage.getItem(prefix + matchId) ?? "";
  } catch {
    return "";
  }
}

/** forgetQueueOfMatch drops the note of matchId. */
export function forgetQueueOfMatch(matchId: string): void {
  try {
    sessionStorage.removeItem(prefix + matchId);
  } catch {
    // Nothing kept.
  }
}
