/**
 * A listen that failed for its address, told as the configuration error it is: the variable that
 * named the address (HOST, PORT or HEALTH_PORT), its value and what it must be, in one line
 * without a stack (README, "Running on Kafka + PostgreSQL"). Any other failure is returned as is.
 */
import { invalidVariable } from '../../shared/config-error.ts';

/** Codes of a host this machine cannot listen on: no such name, or not one of its addresses. */
const HOST_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NONAME', 'EADDRNOTAVAIL']);

export const listenRefusal = (
  error: unknown,
  { host, port, portVariable }: { host: string; port: number; portVariable: 'PORT' | 'HEALTH_PORT' },
): unknown => {
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string') return error;
  if (HOST_CODES.has(code))
    return invalidVariable(
      'HOST',
      host,
      'an address of this machine, such as 127.0.0.1, ::1 or 0.0.0.0 (every interface)',
      `this machine cannot listen on it (${code})`,
    );
  if (code === 'EADDRINUSE')
    return invalidVariable(
      portVariable,
      String(port),
      'a port no other process listens on (0: any free port)',
      `another process listens on ${host}:${port}`,
    );
  if (code === 'EACCES')
    return invalidVariable(
      portVariable,
      String(port),
      'a port this process may open (1024 or above without privileges)',
      `this process may not listen on ${host}:${port}`,
    );
  return error;
};
