/**
 * The normalised submission: one canonical name per field (camelCase), aliases resolved, values
 * checked and converted. Everything after the ingress reads this shape, never the raw body.
 */
import type { NormalisedDuration } from './duration.ts';
import type { MetadataValue } from './tags-and-metadata.ts';

export interface NormalisedTranscript {
  /** The transcript, cut to 512,000 UTF-8 bytes on a character boundary. */
  text: string;
  truncated: boolean;
  /** UTF-8 length as received. */
  originalBytes: number;
}

export interface Deal {
  dealSize?: number;
  revenueCollected?: number;
  /** Canonical UTC instant; a date-only value is midnight UTC. */
  dealDate?: string;
  notes?: string;
}

export interface Submission {
  transcript?: NormalisedTranscript;
  /** Absolute http(s) URL of the recording. */
  audioUrl?: string;
  repName?: string;
  /** As sent (trimmed); match it case-insensitively. */
  repEmail?: string;
  /** As sent (trimmed); displayed only when `aiTitleEnabled` is false. */
  callTitle?: string;
  /** False when `disableAiTitleGeneration` is true or `useAiCallTitle` is false; true by default. */
  aiTitleEnabled: boolean;
  /** Canonical UTC instant (`2026-11-20T00:00:00.000Z` for a date-only value). */
  callDate?: string;
  duration?: NormalisedDuration;
  /** Trimmed, exact duplicates removed; empty when none were sent. */
  tags: string[];
  notes?: string;
  /** Empty when none was sent. */
  metadata: Record<string, MetadataValue>;
  /** Present only when at least one deal field was sent. */
  deal?: Deal;
}
