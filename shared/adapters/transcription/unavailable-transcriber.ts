/**
 * The transcriber in effect when no engine is configured or installed. It is the truth, not a stub:
 * audio calls fail at once with `transcription_unavailable` (terminal) and a message that says what
 * is missing and how to set an engine up, instead of retrying something that cannot succeed.
 */
import { StepError } from '../../ports/step-error.ts';
import {
  TRANSCRIPTION_SETUP_HINT,
  type Transcriber,
  type TranscriberAvailability,
  type Transcription,
} from '../../ports/transcriber.ts';

/** @param reason What is missing, as a sentence, e.g. from `detectLocalEngine`. */
export const createUnavailableTranscriber = (reason: string): Transcriber => ({
  async transcribe(input): Promise<Transcription> {
    input.signal?.throwIfAborted();
    throw new StepError('transcription_unavailable', `${reason} ${TRANSCRIPTION_SETUP_HINT}`, false);
  },
  describe: () => 'no transcription engine (audio calls fail with transcription_unavailable)',
  available: async (): Promise<TranscriberAvailability> => ({ ok: false, reason }),
});
