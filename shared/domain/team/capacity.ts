/**
 * Converting to the team's unit of capacity, whole minutes, and estimating what a call will use.
 *
 * The admin API speaks hours (the spec's "live call hours"): hours × 60, rounded to the minute.
 * A call uses its length rounded up to the next whole minute (a started minute counts), at least 1.
 * The estimate reserved at submission: the normalised duration — corrected by the transcript
 * length when there is a transcript — else the transcript length at 150 words per minute, else
 * DEFAULT_ESTIMATE_MINUTES for an audio-only call of unknown length. Settling corrects it.
 */
import { correctDuration, countWords, estimateSpokenSeconds } from '../submission/duration.ts';
import type { Submission } from '../submission/submission.ts';

/** Reserved for an audio-only call sent without a duration; settled to the real length later. */
export const DEFAULT_ESTIMATE_MINUTES = 30;

/** Whole minutes for an amount of hours from the admin API. */
export const hoursToMinutes = (hours: number): number => Math.round(hours * 60);

/** Whole minutes a call of this many seconds consumes: every started minute counts. */
export const minutesForSeconds = (seconds: number): number => (seconds > 0 ? Math.ceil(seconds / 60) : 0);

/** Minutes to reserve for a submission (≥ 1); see the top of this file. */
export const estimateCallMinutes = (submission: Pick<Submission, 'duration' | 'transcript'>): number => {
  const words = submission.transcript ? countWords(submission.transcript.text) : undefined;
  let seconds: number | undefined;
  if (submission.duration) {
    seconds = (words ? correctDuration(submission.duration, { transcriptWords: words }) : submission.duration).seconds;
  } else if (words) {
    seconds = estimateSpokenSeconds(words);
  }
  return seconds === undefined ? DEFAULT_ESTIMATE_MINUTES : Math.max(1, minutesForSeconds(seconds));
};
