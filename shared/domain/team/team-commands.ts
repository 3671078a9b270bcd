/**
 * Commands of the Team aggregate. Ids (`teamId`, `memberId`, `keyId`, `callId`) and time (`now`,
 * ISO 8601) come from the caller, so `decide` stays pure. Minutes are whole numbers.
 */
import type { Person } from './team-events.ts';

export type CreateTeam = {
  type: 'CreateTeam';
  teamId: string;
  name: string;
  owner: Person;
  capacityMinutes: number;
  now: string;
};
export type AddMember = { type: 'AddMember'; memberId: string; email: string; name: string };
/** `keyHash` is `hashApiKey(key, secret)`; the key itself never reaches the domain. */
export type IssueApiKey = { type: 'IssueApiKey'; keyId: string; label: string; keyHash: string; now: string };
export type RevokeApiKey = { type: 'RevokeApiKey'; keyId: string; now: string };
/** Minutes to add; the admin API speaks hours, converted with `hoursToMinutes`. */
export type AddCapacity = { type: 'AddCapacity'; minutes: number };
/** `blockMinutes` is required to enable; when disabling it may be left out (the last block is kept). */
export type SetAutoRecharge = { type: 'SetAutoRecharge'; enabled: boolean; blockMinutes?: number };
/**
 * The admin API's capacity change: capacity to add and an auto-recharge setting, either or both,
 * decided as one command so that it is stored whole or refused whole.
 */
export type ChangeCapacity = {
  type: 'ChangeCapacity';
  addMinutes?: number;
  autoRecharge?: Omit<SetAutoRecharge, 'type'>;
};
/** Calls older than `days` (since submission) are erased; null keeps them forever (docs/decisions/0014-erasure-crypto-shredding.md). */
export type SetRetention = { type: 'SetRetention'; days: number | null; now: string };
/** Reserve the estimate of a submitted call (see `estimateCallMinutes`). */
export type ReserveCapacity = { type: 'ReserveCapacity'; callId: string; minutes: number; now?: string };
/** The call's real length is known. */
export type SettleCapacity = { type: 'SettleCapacity'; callId: string; actualMinutes: number };
/**
 * Gives a call's reservation back. `callMayStillRun`: the call is failed for a reason of its own
 * (its deadline passed) while its processing may yet end; should it complete after all, it is
 * charged in full, as an orphaned one is.
 */
export type ReleaseCapacity = { type: 'ReleaseCapacity'; callId: string; callMayStillRun?: boolean };
/**
 * A reservation made at or before `reservedBefore` whose call is in no stream (its ingest died
 * between reserving and publishing, or its publish never landed): give it back, and remember the
 * call so that, should it be processed after all, its settlement still charges it.
 */
export type ReleaseOrphanedReservation = { type: 'ReleaseOrphanedReservation'; callId: string; reservedBefore: string };

export type TeamCommand =
  | CreateTeam
  | AddMember
  | IssueApiKey
  | RevokeApiKey
  | AddCapacity
  | SetAutoRecharge
  | ChangeCapacity
  | SetRetention
  | ReserveCapacity
  | SettleCapacity
  | ReleaseCapacity
  | ReleaseOrphanedReservation;
