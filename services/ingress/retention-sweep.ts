/**
 * Retention (docs/decisions/0014-erasure-crypto-shredding.md): every `intervalMs` (and at start),
 * each team with a retention period has its calls submitted longer ago than that erased. The timer
 * is durable without storing one: when a call is due follows from its stored submission time and
 * the team's stored period, so a process that restarts finds every call that fell due meanwhile.
 *
 * A call that cannot be erased (its stream holds an event this version does not decode) is logged
 * with its id (once per process, then at debug), counted and passed over: it stays in the call
 * history, so every pass tries it again, and it never keeps the calls and teams after it from being
 * erased, however many such calls there are: a team's due calls are read in pages, each after the
 * last call of the one before, until a page comes back short or BATCH of them were erased. A
 * backend outage still ends the pass; the next one takes up where it stopped.
 */
import type { Logger } from 'pino';
import type { CallHistoryStore, SubmittedCall } from '../../shared/ports/read-models.ts';
import { isRetriableError } from '../../shared/ports/unavailable.ts';
import type { CallEraser } from './call-eraser.ts';
import type { TeamService } from './teams/team-service.ts';

const DAY_MS = 86_400_000;
/** Calls erased per team and pass (and calls read per page); the next pass takes the rest. */
const BATCH = 500;
/** Calls this process remembers it failed to erase, so that it warns of each once, not at every pass. */
const REMEMBERED_FAILURES = 10_000;

export const DEFAULT_RETENTION_SWEEP_MS = 60_000;

export interface RetentionSweepResult {
  /** Calls erased by this pass. */
  erased: number;
  /** Calls left as they were because erasing them failed for a reason of their own (logged, each). */
  failed: number;
}

export const startRetentionSweep = (deps: {
  teams: Pick<TeamService, 'directoryTeams'>;
  callHistory: CallHistoryStore;
  erase: CallEraser;
  log: Logger;
  intervalMs?: number;
  now?: () => Date;
}) => {
  const now = deps.now ?? (() => new Date());
  const failedBefore = new Set<string>();
  let running: Promise<void> | undefined;
  let stopped = false;

  const pass = async (): Promise<RetentionSweepResult> => {
    const result: RetentionSweepResult = { erased: 0, failed: 0 };
    for (const team of deps.teams.directoryTeams()) {
      const days = team.retentionDays;
      if (days === undefined || days === null || stopped) continue;
      const cutoff = new Date(now().getTime() - days * DAY_MS).toISOString();
      let after: SubmittedCall | undefined;
      let erasedOfTeam = 0;
      while (!stopped && erasedOfTeam < BATCH) {
        const page = await deps.callHistory.submittedBefore(team.teamId, cutoff, BATCH, after);
        for (const { callId } of page) {
          try {
            if ((await deps.erase(team.teamId, callId, 'retention')) === 'erased') erasedOfTeam++;
          } catch (error) {
            // An outage postpones the whole pass; anything else is this call's alone (a stream with an
            // event that does not decode), and must not keep the calls after it from their erasure.
            if (isRetriableError(error)) throw error;
            result.failed++;
            const first = !failedBefore.has(callId);
            if (first && failedBefore.size < REMEMBERED_FAILURES) failedBefore.add(callId);
            deps.log[first ? 'warn' : 'debug'](
              { err: error, teamId: team.teamId, callId },
              'retention sweep: this call cannot be erased; it stays, and the sweep goes on',
            );
          }
        }
        if (page.length < BATCH) break;
        after = page.at(-1);
      }
      result.erased += erasedOfTeam;
    }
    if (result.erased > 0 || result.failed > 0) deps.log.info(result, 'calls past their team retention period erased');
    return result;
  };
  const tick = () => {
    if (running || stopped) return;
    running = pass()
      .then(() => undefined)
      .catch((error: unknown) => deps.log.warn({ err: error }, 'retention sweep failed; trying again at the next one'))
      .finally(() => (running = undefined));
  };
  const timer = setInterval(tick, deps.intervalMs ?? DEFAULT_RETENTION_SWEEP_MS);
  timer.unref();
  tick();
  return {
    /** Runs one pass now (after the one in progress); resolves with how many calls it erased and failed to. */
    async sweep(): Promise<RetentionSweepResult> {
      await running;
      return pass();
    },
    async stop(): Promise<void> {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
};
