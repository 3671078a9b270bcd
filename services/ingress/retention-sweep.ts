/**
 * Retention (docs/decisions/0014-erasure-crypto-shredding.md): every `intervalMs` (and at start),
 * each team with a retention period has its calls submitted longer ago than that erased. The timer
 * is durable without storing one: when a call is due follows from its stored submission time and
 * the team's stored period, so a process that restarts finds every call that fell due meanwhile.
 */
import type { Logger } from 'pino';
import type { CallHistoryStore } from '../../shared/ports/read-models.ts';
import type { CallEraser } from './call-eraser.ts';
import type { TeamService } from './teams/team-service.ts';

const DAY_MS = 86_400_000;
/** Calls erased per team and pass; the next pass takes the rest. */
const BATCH = 500;

export const DEFAULT_RETENTION_SWEEP_MS = 60_000;

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

  const pass = async (): Promise<number> => {
    let erased = 0;
    for (const team of deps.teams.directoryTeams()) {
      const days = team.retentionDays;
      if (days === undefined || days === null || stopped) continue;
      const cutoff = new Date(now().getTime() - days * DAY_MS).toISOString();
      for (const callId of await deps.callHistory.submittedBefore(team.teamId, cutoff, BATCH)) {
        if ((await deps.erase(team.teamId, callId, 'retention')) === 'erased') erased++;
      }
    }
    if (erased > 0) deps.log.info({ erased }, 'calls past their team retention period erased');
    return erased;
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
    /** Runs one pass now (after the one in progress); resolves with how many calls it erased. */
    async sweep(): Promise<number> {
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
