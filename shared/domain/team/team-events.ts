/**
 * Events of the Team aggregate, stream `team-{teamId}`. Times are ISO 8601 instants; capacity is in
 * whole minutes. An API key appears only as its keyed hash: the secret is shown once, never stored.
 */

/** A person as the team knows them: the e-mail as given (matching ignores case). */
export interface Person {
  name: string;
  email: string;
}

export type TeamCreated = {
  type: 'TeamCreated';
  data: { teamId: string; name: string; owner: Person; capacityMinutes: number; at: string };
};
export type MemberAdded = { type: 'MemberAdded'; data: { memberId: string; email: string; name: string } };
export type ApiKeyIssued = {
  type: 'ApiKeyIssued';
  data: { keyId: string; label: string; keyHash: string; at: string };
};
export type ApiKeyRevoked = { type: 'ApiKeyRevoked'; data: { keyId: string; at: string } };
export type CapacityAdded = { type: 'CapacityAdded'; data: { minutes: number } };
export type AutoRechargeSet = { type: 'AutoRechargeSet'; data: { enabled: boolean; blockMinutes: number } };
/** The team's retention period: calls older than `days` are erased; null keeps them forever. */
export type RetentionSet = { type: 'RetentionSet'; data: { days: number | null; at: string } };
/** `autoRechargedMinutes` > 0 when the reservation first bought blocks of capacity (auto-recharge). */
export type CapacityReserved = {
  type: 'CapacityReserved';
  data: { callId: string; minutes: number; autoRechargedMinutes: number; at?: string };
};
/** The real length is known: the difference between reserved and actual goes back (or is taken). */
export type CapacitySettled = {
  type: 'CapacitySettled';
  data: { callId: string; reservedMinutes: number; actualMinutes: number };
};
/**
 * The whole reservation goes back: the call never made it onto the log, or (`orphaned`) no call
 * appeared within the orphan window, or it was timed out while its processing could still end;
 * such a call is still charged if it completes later.
 */
export type CapacityReleased = {
  type: 'CapacityReleased';
  data: { callId: string; minutes: number; orphaned?: boolean };
};

export type TeamEvent =
  | TeamCreated
  | MemberAdded
  | ApiKeyIssued
  | ApiKeyRevoked
  | CapacityAdded
  | AutoRechargeSet
  | RetentionSet
  | CapacityReserved
  | CapacitySettled
  | CapacityReleased;

export type TeamEventType = TeamEvent['type'];
