/**
 * CloudEvents `type` of each call event on `calls.events.v1`, stable across versions of the
 * service: downstream consumers switch on these strings.
 */
import type { CallEventType } from './call-events.ts';

export const CLOUD_EVENT_TYPES: Record<CallEventType, string> = {
  CallSubmitted: 'call.submitted',
  ProcessingStarted: 'call.processing.started',
  AudioFetched: 'call.audio.fetched',
  TranscriptRecorded: 'call.transcript.recorded',
  CallAnalysed: 'call.analysed',
  DealRecorded: 'call.deal.recorded',
  CallCompleted: 'call.completed',
  CallFailed: 'call.failed',
  CallRetried: 'call.retried',
  CallErased: 'call.erased',
};

export const isCallEventType = (type: string): type is CallEventType => Object.hasOwn(CLOUD_EVENT_TYPES, type);
