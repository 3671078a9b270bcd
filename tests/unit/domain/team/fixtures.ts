import type { TeamEvent } from '../../../../shared/domain/team/team-events.ts';
import { deciderSpec } from '../../../support/decider-spec.ts';
import { teamDecider } from '../../../../shared/domain/team/team-decider.ts';

export const { given } = deciderSpec(teamDecider);

export const now = '2026-11-20T10:00:00.000Z';
export const later = '2026-11-21T10:00:00.000Z';
export const hash = (c: string): string => c.repeat(64);

export const teamCreated = (capacityMinutes = 600): TeamEvent => ({
  type: 'TeamCreated',
  data: {
    teamId: 't1',
    name: 'Acme Sales',
    owner: { name: 'Olivia Owner', email: 'Olivia@Acme.io' },
    capacityMinutes,
    at: now,
  },
});
export const memberAdded = (memberId: string, email: string, name: string): TeamEvent => ({
  type: 'MemberAdded',
  data: { memberId, email, name },
});
export const keyIssued = (keyId: string, keyHash = hash('a')): TeamEvent => ({
  type: 'ApiKeyIssued',
  data: { keyId, label: 'Aircall sync', keyHash, at: now },
});
export const reserved = (callId: string, minutes: number, autoRechargedMinutes = 0): TeamEvent => ({
  type: 'CapacityReserved',
  data: { callId, minutes, autoRechargedMinutes },
});
export const autoRecharge = (enabled: boolean, blockMinutes: number): TeamEvent => ({
  type: 'AutoRechargeSet',
  data: { enabled, blockMinutes },
});
