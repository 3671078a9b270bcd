/**
 * An audio call through the whole pipeline on the local engine (ffmpeg + pocketsphinx, speech made
 * by espeak-ng): its TranscriptRecorded carries pocketsphinx's utterances as timed segments, and
 * GET /api/calls/:callId/transcript writes them out.
 *
 * Needs the Debian packages ffmpeg, pocketsphinx, pocketsphinx-en-us and espeak-ng; skipped with one
 * line saying what is missing, unless REQUIRE_LOCAL_TRANSCRIPTION=1 (CI).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type EmbeddedPipeline, openEmbeddedPipeline } from '../../support/embedded-pipeline.ts';
import { audioServer, eventData } from '../../support/pipeline-harness.ts';
import {
  localTranscriptionRequired,
  missingForLocalTranscription,
  SPEECH_SAMPLE,
  synthesizeSpeech,
} from '../../support/speech.ts';
import { tempDir } from '../../support/temp-dir.ts';

const missing = await missingForLocalTranscription();
if (missing && localTranscriptionRequired()) {
  test('the local transcription engine and espeak-ng are installed (REQUIRE_LOCAL_TRANSCRIPTION=1)', () =>
    assert.fail(missing));
}

describe('an audio call on the local engine: timed segments', { skip: missing ? `skipped: ${missing}` : false }, () => {
  const dir = tempDir('transcript-segments-test-');
  let pipeline: EmbeddedPipeline;
  let recording: Buffer;

  before(async () => {
    // Two sentences with 1.5 s of silence between them: pocketsphinx hears two utterances.
    const first = join(dir.path, 'first.wav');
    const second = join(dir.path, 'second.wav');
    const both = join(dir.path, 'both.wav');
    await synthesizeSpeech(SPEECH_SAMPLE.text, first);
    await synthesizeSpeech('please send the contract tomorrow', second);
    const joined = spawnSync('ffmpeg', [
      '-nostdin',
      '-loglevel',
      'error',
      '-i',
      first,
      '-f',
      'lavfi',
      '-t',
      '1.5',
      '-i',
      'anullsrc=r=22050:cl=mono',
      '-i',
      second,
      '-filter_complex',
      '[0:a][1:a][2:a]concat=n=3:v=0:a=1',
      '-c:a',
      'pcm_s16le',
      both,
    ]);
    assert.equal(joined.status, 0, String(joined.stderr));
    recording = await readFile(both);
    pipeline = await openEmbeddedPipeline();
  });
  after(async () => {
    await pipeline?.close();
    dir.remove();
  });

  test('TranscriptRecorded carries one segment per utterance, times increasing within the audio, and the export writes them', async () => {
    const { h } = pipeline;
    const { key } = await h.team();
    const server = await audioServer({ body: recording });
    try {
      const accepted = await h.ingest({ key, body: { audioUrl: server.url, repName: 'Sam Seller' } });
      assert.equal(accepted.statusCode, 201, accepted.body);
      const { callId } = accepted.json<{ callId: string }>();
      const events = await h.callEvents(callId, undefined, 120_000);
      assert.equal(eventData(events, 'CallFailed'), undefined, JSON.stringify(eventData(events, 'CallFailed')));
      const transcript = eventData(events, 'TranscriptRecorded')!;
      assert.equal(transcript.engine, 'pocketsphinx');
      const segments = transcript.segments;
      assert.ok(segments.length >= 2, `expected an utterance per sentence, got ${JSON.stringify(segments)}`);
      assert.equal(segments.map((s) => s.text).join(' '), transcript.text);
      let previousEnd = 0;
      for (const s of segments) {
        assert.ok(s.start !== null && s.end !== null, JSON.stringify(s));
        assert.ok(s.start >= previousEnd && s.end > s.start, `segments out of order: ${JSON.stringify(segments)}`);
        previousEnd = s.end;
      }
      assert.ok(
        previousEnd <= transcript.durationSeconds!,
        `the last segment ends at ${previousEnd}, after the audio (${transcript.durationSeconds} s)`,
      );
      // The pause: the second sentence starts over a second after the first ends.
      assert.ok(segments.at(-1)!.start! - segments[0]!.end! > 1, JSON.stringify(segments));

      const get = (format: string) =>
        h.ingress.app.inject({
          method: 'GET',
          url: `/api/calls/${callId}/transcript?format=${format}`,
          headers: { 'x-api-key': key },
        });
      const json = await get('json');
      assert.equal(json.statusCode, 200, json.body);
      assert.deepEqual(json.json(), { callId, segments, text: transcript.text });
      const vtt = await get('vtt');
      assert.equal(vtt.statusCode, 200, vtt.body);
      assert.match(String(vtt.headers['content-type']), /^text\/vtt/);
      assert.equal(vtt.body.split('\n')[0], 'WEBVTT');
      assert.equal(
        (vtt.body.match(/^\d{2}:\d{2}:\d{2}\.\d{3} --> \d{2}:\d{2}:\d{2}\.\d{3}$/gm) ?? []).length,
        segments.length,
      );
    } finally {
      await server.close();
    }
  });
});
