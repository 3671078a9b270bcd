/**
 * A refusal answered before the request's body was read (a 413 over the body limit, a 401 or 415
 * with a body on its way) closes the connection: Fastify sets `Connection: close`, since the client
 * may still be sending. Node's HTTP server then destroys the socket as soon as the answer is
 * written. Bytes the client sends after that are answered by the kernel with a reset, and a client
 * that reads its answer only once it has sent its body (most do) gets ECONNRESET or EPIPE instead
 * of the 413 that says what to change. So, as web servers' "lingering close" does, the connection
 * is half-closed after the answer and what the client still sends is read and dropped, until its
 * body has arrived or LINGER_MS have passed; then it is closed.
 * What the client sends after that body is not read as a request (Node's server runs nothing more
 * on a connection it answered with a close), and a lingering connection does not hold up a
 * shutdown: `closeAll` ends them at once.
 */
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

/** How long a refused request's body is still read and dropped at most. */
export const LINGER_MS = 10_000;

export interface LingeringClose {
  /** Makes the close that follows the answer to `request` wait for the rest of its body (see above). */
  linger(request: IncomingMessage): void;
  /** Closes every lingering connection now (the server is shutting down). */
  closeAll(): void;
}

type ClosableSocket = Socket & { destroySoon?: () => void };

export const lingeringClose = (ms = LINGER_MS): LingeringClose => {
  const lingering = new Set<Socket>();
  return {
    linger(request) {
      const socket = request.socket as ClosableSocket | null;
      if (!socket || request.complete || lingering.has(socket) || typeof socket.destroySoon !== 'function') return;
      lingering.add(socket);
      socket.once('close', () => lingering.delete(socket));
      const destroySoon = socket.destroySoon.bind(socket);
      // Node's server calls destroySoon once an answer with `Connection: close` is written.
      socket.destroySoon = () => {
        // The answer, then FIN: the client learns that nothing more will come, and may still send.
        socket.end();
        const close = () => {
          clearTimeout(timer);
          destroySoon();
        };
        const timer = setTimeout(close, ms);
        socket.once('close', () => clearTimeout(timer));
        // The server drains what follows into the request (its body is dumped): its end is the body's.
        if (request.complete) return close();
        request.once('end', close);
        request.once('error', close);
      };
    },
    closeAll() {
      for (const socket of lingering) socket.destroy();
      lingering.clear();
    },
  };
};
