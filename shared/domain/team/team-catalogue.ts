/**
 * The Team aggregate's event catalogue: category `team`, streams `team-{teamId}`
 * (docs/decisions/0016-event-catalogues-and-upcasting.md). Every type is at version 1;
 * CapacityReserved events recorded before reservations carried their time have no `at`.
 */
import { Type } from '@sinclair/typebox';
import { type EventCatalogue, eventCatalogue } from '../event-catalogue.ts';
import type { TeamEvent } from './team-events.ts';

const Instant = Type.String({ format: 'date-time' });
const Person = Type.Object({ name: Type.String(), email: Type.String() });

export const teamEvents: EventCatalogue<TeamEvent> = eventCatalogue<TeamEvent>('team', {
  TeamCreated: {
    schema: Type.Object({
      teamId: Type.String({ minLength: 1 }),
      name: Type.String(),
      owner: Person,
      capacityMinutes: Type.Number(),
      at: Instant,
    }),
  },
  MemberAdded: { schema: Type.Object({ memberId: Type.String(), email: Type.String(), name: Type.String() }) },
  ApiKeyIssued: {
    schema: Type.Object({ keyId: Type.String(), label: Type.String(), keyHash: Type.String(), at: Instant }),
  },
  ApiKeyRevoked: { schema: Type.Object({ keyId: Type.String(), at: Instant }) },
  CapacityAdded: { schema: Type.Object({ minutes: Type.Number() }) },
  AutoRechargeSet: { schema: Type.Object({ enabled: Type.Boolean(), blockMinutes: Type.Number() }) },
  RetentionSet: { schema: Type.Object({ days: Type.Union([Type.Number(), Type.Null()]), at: Instant }) },
  CapacityReserved: {
    schema: Type.Object({
      callId: Type.String(),
      minutes: Type.Number(),
      autoRechargedMinutes: Type.Number(),
      at: Type.Optional(Instant),
    }),
  },
  CapacitySettled: {
    schema: Type.Object({ callId: Type.String(), reservedMinutes: Type.Number(), actualMinutes: Type.Number() }),
  },
  CapacityReleased: {
    schema: Type.Object({ callId: Type.String(), minutes: Type.Number(), orphaned: Type.Optional(Type.Boolean()) }),
  },
});

/** The stream that holds a team's events: `team-{teamId}`. */
export const teamStreamId = teamEvents.streamId;
