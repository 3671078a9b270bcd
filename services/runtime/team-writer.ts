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
import { type TeamEvent, teamStreamId } from '../../shared/domain/team/team-events.ts';
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

export const createTeamWriter = (store: EventStore): TeamWriter => {
  const directory = new TeamDirectory();
  return { directory, repository: new AggregateRepository(store, teamDecider, teamStreamId, { cache: directory }) };
};
