/**
 * Retention (docs/decisions/0014-erasure-crypto-shredding.md): every `intervalMs` (and at start),
 * each team with a retention period has its calls submitted longer ago than that erased. The timer
 * is durable without storing one: when a call is due follows from its stored submission time and
 * the team's stored period, so a process that restarts finds every call that fell due meanwhile.
 *
 * A call that cannot be erased (its stream holds an event this version does not decode) is logged
 * with its id, counted and passed over: it stays in the call history, so every pass tries it again,
 * and it no longer keeps the calls and teams after it from being erased. A backend outage still
 * ends the pass; the next one takes up where it stopped.
 */
import type { Logger } from 'pino';
import type { CallHistoryStore } from '../../shared/ports/read-models.ts';
import { isRetriableError } from '../../shared/ports/unavailable.ts';
import type { CallEraser } from './call-eraser.ts';
import type { TeamService } from './teams/team-service.ts';

const DAY_MS = 86_400_000;
/** Calls erased per team and pass; the next pass takes the rest. */
const BATCH = 500;

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
  let running: Promise<void> | undefined;
  let stopped = false;

  const pass = async (): Promise<RetentionSweepResult> => {
    const result: RetentionSweepResult = { erased: 0, failed: 0 };
    for (const team of deps.teams.directoryTeams()) {
      const days = team.retentionDays;
      if (days === undefined || days === null || stopped) continue;
      const cutoff = new Date(now().getTime() - days * DAY_MS).toISOString();
      for (const callId of await deps.callHistory.submittedBefore(team.teamId, cutoff, BATCH)) {
        try {
          if ((await deps.erase(team.teamId, callId, 'retention')) === 'erased') result.erased++;
        } catch (error) {
          // An outage postpones the whole pass; anything else is this call's alone (a stream with an
          // event that does not decode), and must not keep the calls after it from their erasure.
          if (isRetriableError(error)) throw error;
          result.failed++;
          deps.log.warn(
            { err: error, teamId: team.teamId, callId },
            'retention sweep: this call cannot be erased; it stays, and the sweep goes on',
          );
        }
      }
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
