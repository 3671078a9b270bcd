/**
 * The call as the read API shows it, in TypeBox: the list item of GET /api/calls and the detail of
 * GET /api/calls/:callId, which is also the `data` of a call.completed or call.failed webhook
 * (call-view.ts builds both; the compiler checks they fit).
 */
import { type Static, Type } from '@sinclair/typebox';
import { AnyKeyRecord } from '../any-key-record.ts';
import { callDetailView, callListItemView } from './call-view.ts';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

export const CallListItemSchema = Type.Object({
  callId: Type.String(),
  title: Type.String({
    description:
      'The displayed title (spec title rules): the AI title, or the supplied one when AI titles are off, or a generic one.',
  }),
  repName: Nullable(Type.String()),
  repEmail: Nullable(Type.String()),
  status: Type.Union([Type.Literal('pending'), Type.Literal('completed'), Type.Literal('failed')]),
  stage: Nullable(
    Type.String({
      description:
        'Where a pending call is: queued, fetching_audio, transcribing, analysing, recording_deal, completing.',
    }),
  ),
  statusReason: Type.String(),
  processingError: Nullable(
    Type.String({ description: 'Stable code of the failure, e.g. processing_timeout, audio_fetch_blocked.' }),
  ),
  callDate: Type.String(),
  durationSeconds: Nullable(Type.Number()),
  tags: Type.Array(Type.String()),
  notes: Nullable(Type.String()),
  metadata: AnyKeyRecord(Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()])),
  attributedTo: Type.Object({
    kind: Type.Union([Type.Literal('member'), Type.Literal('owner')]),
    email: Type.String(),
    name: Type.String(),
  }),
  score: Nullable(Type.Number()),
  createdAt: Type.String(),
});

export const CallDetailSchema = Type.Composite([
  CallListItemSchema,
  Type.Object({
    transcript: Nullable(
      Type.Object({
        text: Type.String(),
        source: Type.Union([Type.Literal('audio'), Type.Literal('inline')]),
        truncated: Type.Boolean(),
      }),
    ),
    analysis: Nullable(
      Type.Object({
        title: Type.String(),
        summary: Type.String(),
        score: Type.Number(),
        components: Type.Array(
          Type.Object({
            name: Type.String(),
            value: Type.Number(),
            score: Type.Number(),
            weight: Type.Number(),
            explanation: Type.String(),
          }),
        ),
        insights: Type.Array(
          Type.Object({ kind: Type.String(), code: Type.String(), message: Type.String(), evidence: Type.String() }),
        ),
      }),
    ),
    deal: Nullable(
      Type.Object({
        dealSize: Nullable(Type.Number()),
        revenueCollected: Nullable(Type.Number()),
        dealDate: Nullable(Type.String()),
        notes: Nullable(Type.String()),
      }),
    ),
    submission: Type.Unknown({ description: 'The submitted fields after normalisation (aliases resolved).' }),
    updatedAt: Type.String(),
  }),
]);

type Fits<A, B> = [A] extends [B] ? true : false;
const _listItemFits: Fits<ReturnType<typeof callListItemView>, Static<typeof CallListItemSchema>> = true;
const _detailFits: Fits<ReturnType<typeof callDetailView>, Static<typeof CallDetailSchema>> = true;
void _listItemFits;
void _detailFits;
