/**
 * `npm run admin -- <command>`: the admin API for people at a terminal.
 * Reads the admin token from ADMIN_TOKEN or DATA_DIR/admin-token, the service from API_URL
 * (default http://HOST:PORT).
 */
// First: a process on another Node.js stops here, before anything else runs.
import './runtime/node-version.ts';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../shared/config.ts';
import { topicNames } from '../shared/topics.ts';

const HELP = `Usage: npm run admin -- <command> [options]

Teams
  team create --name <name> --owner-email <email> [--owner-name <name>] [--hours <n>]
  team show --team <teamId>
Members
  member add --team <teamId> --email <email> --name <name>
API keys
  key create --team <teamId> [--label <label>]      prints the key once: store it
  key revoke --team <teamId> --key <keyId>
Capacity
  capacity add --team <teamId> --hours <n>
  capacity auto-recharge --team <teamId> (--on --hours <n> | --off)
Webhooks (signed with Standard Webhooks; verify with any of its libraries)
  webhook create --team <teamId> --url <url> --events <type,…>
                                                    call.completed, call.failed, deal.outcome.updated, call.erased;
                                                    prints the secret once: store it
  webhook list --team <teamId>
  webhook delete --team <teamId> --webhook <webhookId>
  webhook rotate-secret --team <teamId> --webhook <webhookId>
                                                    a new secret; the old one also signs for 24 hours
  webhook test --team <teamId> --webhook <webhookId>
                                                    queue a webhook.test delivery
  webhook deliveries --team <teamId> --webhook <webhookId> [--status pending|delivered|failed] [--limit <n>] [--cursor <c>]
  webhook redeliver --team <teamId> --webhook <webhookId> --delivery <deliveryId>
Operations
  replay <projection>                               rebuild a projection (call-history) while the service runs
  skip <projection> <position> --reason <text>      let a projection stopped or stuck on one event (see /readyz) go past it
  topic read <topic> [--from-offset <n>] [--limit <n>] [--partition <n>]
  projections                                       each projection's checkpoint, the head, lag, version and state
  redrive --limit <n> [--from-offset <n>] [--from-offsets <partition>=<offset>,…] [--partition <n>]
                                                    send dead letters back to the topic they came from; page on
                                                    with the answer's nextOffsets as --from-offsets
  retry-call <callId>                               retry a failed call from its last good step (retriable failures only)

Environment: API_URL (default http://HOST:PORT, i.e. http://127.0.0.1:3000),
ADMIN_TOKEN (default: the file DATA_DIR/admin-token written by the service).
`;

/** The command line is wrong: exit 2, with the hint to --help. */
class UsageError extends Error {}
/** The service refused the request or could not be reached: exit 1, no hint (the command was right). */
class ServiceError extends Error {}

interface ProjectionLine {
  name: string;
  state: string;
  checkpoint: string;
  head: string;
  lag: number;
  version: number | null;
  stoppedOn?: { position: string; streamId: string; eventType: string; error: string };
}

/** One line per projection; a stopped (or stuck) one says on what and how to go past it. */
const projectionLine = (p: ProjectionLine): string => {
  const line = `${p.name.padEnd(18)} ${p.state.padEnd(8)} checkpoint ${p.checkpoint}, head ${p.head}, lag ${p.lag}${p.version === null ? '' : `, version ${p.version}`}`;
  if (!p.stoppedOn) return line;
  const { position, eventType, streamId, error } = p.stoppedOn;
  const on = p.state === 'stuck' ? 'stuck on' : 'stopped on';
  return `${line}\n  ${on} ${eventType} at position ${position} (stream ${streamId}): ${error}\n  skip it with: npm run admin -- skip ${p.name} ${position} --reason "…"`;
};

const options = {
  name: { type: 'string' },
  'owner-email': { type: 'string' },
  'owner-name': { type: 'string' },
  hours: { type: 'string' },
  team: { type: 'string' },
  email: { type: 'string' },
  label: { type: 'string' },
  key: { type: 'string' },
  on: { type: 'boolean' },
  off: { type: 'boolean' },
  'from-offset': { type: 'string' },
  'from-offsets': { type: 'string' },
  limit: { type: 'string' },
  partition: { type: 'string' },
  reason: { type: 'string' },
  url: { type: 'string' },
  events: { type: 'string' },
  webhook: { type: 'string' },
  delivery: { type: 'string' },
  status: { type: 'string' },
  cursor: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof options; allowPositionals: true }>>['values'];

const need = (values: Values, name: keyof Values): string => {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
};
const hours = (values: Values): number => {
  const n = Number(need(values, 'hours'));
  if (!Number.isFinite(n) || n <= 0) throw new UsageError('--hours must be a positive number');
  return n;
};

const webhookPath = (values: Values): string =>
  `/api/admin/teams/${encodeURIComponent(need(values, 'team'))}/webhooks/${encodeURIComponent(need(values, 'webhook'))}`;

const main = async (argv: string[]): Promise<number> => {
  const { values, positionals } = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  if (values.help || positionals.length === 0) {
    process.stdout.write(HELP);
    return 0;
  }
  const config = loadConfig();
  const tokenFile = join(config.dataDir, 'admin-token');
  const token = config.adminToken ?? (existsSync(tokenFile) ? readFileSync(tokenFile, 'utf8').trim() : undefined);
  if (!token)
    throw new UsageError(`no admin token: set ADMIN_TOKEN, or start the service once so it writes ${tokenFile}`);
  const base = config.apiUrl;

  const call = async (method: string, path: string, body?: unknown) => {
    let res: Response;
    try {
      res = await fetch(`${base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (error) {
      throw new ServiceError(
        `cannot reach the service at ${base} (${describeCause(error)}); is it running? set API_URL otherwise`,
      );
    }
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      throw new ServiceError(
        `${base} answered ${res.status} with a body that is not JSON; is API_URL the service's address?`,
      );
    }
    if (!res.ok) {
      const problem = parsed as { detail?: string; errors?: { field: string; message: string }[] } | null;
      const details = problem?.errors?.map((e) => `\n  ${e.field}: ${e.message}`).join('') ?? '';
      throw new ServiceError(`${res.status} ${problem?.detail ?? res.statusText}${details}`);
    }
    return parsed as Record<string, unknown>;
  };
  const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);

  /** Streams a replay's progress lines as they arrive. */
  const replay = async (projection: string): Promise<number> => {
    const res = await fetch(`${base}/api/admin/projections/${encodeURIComponent(projection)}/replay`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}` },
    }).catch((error: unknown) => {
      throw new ServiceError(`cannot reach the service at ${base} (${(error as Error).message}); is it running?`);
    });
    if (!res.ok || !res.body)
      throw new ServiceError(
        `${res.status} ${((await res.json().catch(() => ({}))) as { detail?: string }).detail ?? res.statusText}`,
      );
    let buffer = '';
    let failed = false;
    for await (const chunk of res.body) {
      buffer += Buffer.from(chunk).toString('utf8');
      const lines = buffer.split('\n');
      buffer = lines.pop() ?? '';
      for (const line of lines.filter(Boolean)) {
        const p = JSON.parse(line) as {
          phase: string;
          events: number;
          position: string;
          eventsPerSecond: number;
          elapsedMs: number;
          error?: string;
        };
        if (p.phase === 'failed') {
          failed = true;
          process.stderr.write(`replay of ${projection} failed: ${p.error}\n`);
          continue;
        }
        const rate = `${p.eventsPerSecond.toLocaleString('en-US')} events/s`;
        process.stdout.write(
          p.phase === 'done'
            ? `replayed ${projection}: ${p.events.toLocaleString('en-US')} events in ${(p.elapsedMs / 1000).toFixed(1)} s (${rate}); reads now use the new version\n`
            : `replaying ${projection}: ${p.events.toLocaleString('en-US')} events so far (position ${p.position}), ${rate}\n`,
        );
      }
    }
    return failed ? 1 : 0;
  };

  const [noun, verb] = positionals;
  if (noun === 'replay') {
    if (!verb) throw new UsageError('replay needs a projection name, e.g. npm run admin -- replay call-history');
    return replay(verb);
  }
  if (noun === 'projections') {
    const { projections } = (await call('GET', '/api/admin/projections')) as { projections: ProjectionLine[] };
    for (const p of projections) process.stdout.write(`${projectionLine(p)}\n`);
    return projections.some((p) => p.state === 'stopped' || p.state === 'stuck') ? 1 : 0;
  }
  if (noun === 'redrive') {
    const number = (name: 'from-offset' | 'limit' | 'partition') => {
      const n = Number(need(values, name));
      if (!Number.isSafeInteger(n) || n < 0) throw new UsageError(`--${name} must be a whole number ≥ 0`);
      return n;
    };
    const fromOffsets = (values['from-offsets'] ?? '')
      .split(',')
      .filter(Boolean)
      .map((pair) => {
        const match = /^\s*(\d+)\s*=\s*(\d+)\s*$/.exec(pair);
        if (!match)
          throw new UsageError(`--from-offsets takes <partition>=<offset> pairs, e.g. 0=12,1=7; not "${pair}"`);
        return [match[1]!, match[2]!] as const;
      });
    const body = {
      ...(values['from-offset'] ? { fromOffset: number('from-offset') } : {}),
      ...(fromOffsets.length > 0 ? { fromOffsets: Object.fromEntries(fromOffsets) } : {}),
      limit: number('limit'),
      ...(values.partition ? { partition: number('partition') } : {}),
    };
    print(
      await call(
        'POST',
        `/api/admin/topics/${encodeURIComponent(topicNames(config.topicPrefix).deadLetter)}/redrive`,
        body,
      ),
    );
    return 0;
  }
  if (noun === 'retry-call') {
    if (!verb) throw new UsageError('retry-call needs a call id, e.g. npm run admin -- retry-call 6f1c…');
    print(await call('POST', `/api/admin/calls/${encodeURIComponent(verb)}/retry`));
    return 0;
  }
  if (noun === 'skip') {
    const position = positionals[2];
    if (!verb || !position)
      throw new UsageError(
        'skip needs a projection and a position, e.g. npm run admin -- skip call-history 1234 --reason "…"',
      );
    print(
      await call('POST', `/api/admin/projections/${encodeURIComponent(verb)}/skip`, {
        position,
        reason: need(values, 'reason'),
      }),
    );
    return 0;
  }
  switch (`${noun} ${verb ?? ''}`.trim()) {
    case 'team create':
      print(
        await call('POST', '/api/admin/teams', {
          name: need(values, 'name'),
          ownerEmail: need(values, 'owner-email'),
          ...(values['owner-name'] ? { ownerName: values['owner-name'] } : {}),
          ...(values.hours ? { capacityHours: hours(values) } : {}),
        }),
      );
      return 0;
    case 'team show':
      print(await call('GET', `/api/admin/teams/${encodeURIComponent(need(values, 'team'))}`));
      return 0;
    case 'member add':
      print(
        await call('POST', `/api/admin/teams/${encodeURIComponent(need(values, 'team'))}/members`, {
          email: need(values, 'email'),
          name: need(values, 'name'),
        }),
      );
      return 0;
    case 'key create': {
      const issued = await call(
        'POST',
        `/api/admin/teams/${encodeURIComponent(need(values, 'team'))}/keys`,
        values.label ? { label: values.label } : {},
      );
      print(issued);
      process.stderr.write('This key is shown once: store it now. Send it as X-API-Key: <key>.\n');
      return 0;
    }
    case 'key revoke':
      await call(
        'DELETE',
        `/api/admin/teams/${encodeURIComponent(need(values, 'team'))}/keys/${encodeURIComponent(need(values, 'key'))}`,
      );
      process.stdout.write('revoked\n');
      return 0;
    case 'capacity add':
      print(
        await call('POST', `/api/admin/teams/${encodeURIComponent(need(values, 'team'))}/capacity`, {
          addHours: hours(values),
        }),
      );
      return 0;
    case 'capacity auto-recharge': {
      if (values.on === values.off) throw new UsageError('give exactly one of --on or --off');
      const autoRecharge = values.on ? { enabled: true, hours: hours(values) } : { enabled: false };
      print(
        await call('POST', `/api/admin/teams/${encodeURIComponent(need(values, 'team'))}/capacity`, { autoRecharge }),
      );
      return 0;
    }
    case 'webhook create': {
      const events = need(values, 'events')
        .split(',')
        .map((e) => e.trim())
        .filter(Boolean);
      print(
        await call('POST', `/api/admin/teams/${encodeURIComponent(need(values, 'team'))}/webhooks`, {
          url: need(values, 'url'),
          events,
        }),
      );
      process.stderr.write(
        'This secret is shown once: store it now. Verify each delivery with it (Standard Webhooks).\n',
      );
      return 0;
    }
    case 'webhook list':
      print(await call('GET', `/api/admin/teams/${encodeURIComponent(need(values, 'team'))}/webhooks`));
      return 0;
    case 'webhook delete':
      await call('DELETE', webhookPath(values));
      process.stdout.write('deleted\n');
      return 0;
    case 'webhook rotate-secret':
      print(await call('POST', `${webhookPath(values)}/rotate-secret`));
      process.stderr.write('The new secret is shown once; the old one keeps signing alongside it for 24 hours.\n');
      return 0;
    case 'webhook test':
      print(await call('POST', `${webhookPath(values)}/test`));
      return 0;
    case 'webhook deliveries': {
      const query = new URLSearchParams();
      if (values.status) query.set('status', values.status);
      if (values.limit) query.set('limit', values.limit);
      if (values.cursor) query.set('cursor', values.cursor);
      print(await call('GET', `${webhookPath(values)}/deliveries${query.size > 0 ? `?${query.toString()}` : ''}`));
      return 0;
    }
    case 'webhook redeliver':
      print(
        await call(
          'POST',
          `${webhookPath(values)}/deliveries/${encodeURIComponent(need(values, 'delivery'))}/redeliver`,
        ),
      );
      return 0;
    case 'topic read': {
      const topic = positionals[2];
      if (!topic) throw new UsageError('topic read needs a topic name');
      const query = new URLSearchParams();
      if (values['from-offset']) query.set('fromOffset', values['from-offset']);
      if (values.limit) query.set('limit', values.limit);
      if (values.partition) query.set('partition', values.partition);
      print(await call('GET', `/api/admin/topics/${encodeURIComponent(topic)}/messages?${query.toString()}`));
      return 0;
    }
    default:
      throw new UsageError(`unknown command "${positionals.join(' ')}"`);
  }
};

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    const usage = error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    process.stderr.write(
      `admin: ${(error as Error).message}\n${usage ? 'Run npm run admin -- --help for the commands.\n' : ''}`,
    );
    process.exit(usage ? 2 : 1);
  },
);

/** What a failed fetch says: its cause's message (the network error) when it has one. */
function describeCause(error: unknown): string {
  const { cause, message } = error as Error;
  return cause instanceof Error ? cause.message : cause === undefined ? message : JSON.stringify(cause);
}
