/**
 * A fix to kafkajs 2.2.4 (its last release; package.json pins it), applied once by the Kafka event
 * log. Its request queue (one per broker connection) ends every check of its pending requests by
 * setting a timer for the next, even when nothing is pending, in `throttledUntil - Date.now()` ms
 * with `throttledUntil` at -1 until a broker throttles the client: a negative delay, run as 1 ms.
 * So every connection of every client ran a callback about every millisecond for as long as it
 * was open (about 1,800 a second for an idle producer and admin client, 2–3 % of a core), and
 * Node.js 24 reports the negative delay on stderr as a TimeoutNegativeWarning (tulios/kafkajs#1751).
 *
 * A request is only ever left pending by `push`, when the in-flight limit or a throttle holds it,
 * and `push` then asks for the check itself; a response or a timeout checks again. With nothing
 * pending there is nothing for a timer to do, so none is set; with a request pending, kafkajs's
 * own scheduling runs unchanged (at the throttle's end, or every 10 ms).
 */
import { createRequire } from 'node:module';

interface RequestQueue {
  pending: unknown[];
  scheduleCheckPendingRequests: (this: RequestQueue) => void;
}

const REQUEST_QUEUE = 'kafkajs/src/network/requestQueue/index.js';
let applied = false;

export const fixKafkajsRequestQueue = (): void => {
  if (applied) return;
  applied = true;
  const RequestQueue = createRequire(import.meta.url)(REQUEST_QUEUE) as { prototype: RequestQueue };
  const schedule = RequestQueue.prototype.scheduleCheckPendingRequests;
  RequestQueue.prototype.scheduleCheckPendingRequests = function (this: RequestQueue) {
    if (this.pending.length === 0) return;
    schedule.call(this);
  };
};
