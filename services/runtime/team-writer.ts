/**
 * One writer of team streams per process. The ingress (reservations, keys, capacity) and the
 * processor (settlements, releases) change the same team aggregates; through one repository their
 * commands for a team queue up and are appended one batch at a time, so within a process they
 * never race each other and a version conflict can only come from another process. The folded
 * states live in the team directory: the ingress follows the event feed into it, and every write of
 * this process lands in it at once (a key issued is usable on the next request).
 */
import type { TeamCommand } from '../../shared/domain/team/team-commands.ts';
import { teamDecider } from '../../shared/domain/team/team-decider.ts';
import type { TeamEvent } from '../../shared/domain/team/team-events.ts';
import { teamEvents } from '../../shared/domain/team/team-catalogue.ts';
import type { TeamState } from '../../shared/domain/team/team-state.ts';
import type { EventStore } from '../../shared/ports/event-store.ts';
import { TeamDirectory } from '../ingress/teams/team-directory.ts';
import { AggregateRepository } from './aggregate-repository.ts';

export type TeamRepository = AggregateRepository<TeamCommand, TeamState, TeamEvent>;

export interface TeamWriter {
  /** Folded team states (and the API key index); followed from the feed by the ingress. */
  directory: TeamDirectory;
  repository: TeamRepository;
}

/**
 * A team's stream is the one every process writes (each call reserves and settles on it), so its
 * writer retries longer than the default: up to 20 times, pausing up to 250 ms. Several ingress
 * and processor processes on one busy team then meet a version conflict that outlives the retries
 * (a 503 + Retry-After) rarely instead of now and then.
 */
const TEAM_CONFLICT_RETRIES = { maxRetries: 20, conflictBackoff: { baseDelayMs: 5, maxDelayMs: 250 } };

export const createTeamWriter = (
  store: EventStore,
  options: ConstructorParameters<typeof TeamDirectory>[0] = {},
): TeamWriter => {
  const directory = new TeamDirectory(options);
  // The directory follows the feed, so it is rarely behind: a reservation or settlement decides on it
  // without reading the team's stream, and the append's expected version catches the rare time it is.
  return {
    directory,
    repository: new AggregateRepository(store, teamDecider, teamEvents, {
      cache: directory,
      decideOnCachedState: true,
      ...TEAM_CONFLICT_RETRIES,
    }),
  };
};
