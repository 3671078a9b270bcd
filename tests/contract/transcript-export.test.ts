/**
 * GET /api/calls/:callId/transcript — the recorded transcript as JSON segments, plain text, SubRip
 * or WebVTT, for the call's own team only, with a clear 409 when there is no transcript yet or
 * when a timed format is asked of a transcript without times. On the embedded default and on
 * Kafka + PostgreSQL.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type EmbeddedPipeline, openEmbeddedPipeline } from '../support/embedded-pipeline.ts';
import { openServersPipeline, serversSkip } from '../support/servers-pipeline.ts';
import { audioServer, type PipelineHarness } from '../support/pipeline-harness.ts';
import { eventually } from '../support/eventually.ts';
import { SEGMENT_LIMITS } from '../../shared/domain/transcript/transcript-segments.ts';

const WEBVTT = [
  'WEBVTT',
  '',
  '00:00:01.000 --> 00:00:04.500',
  '<v Rep>Thanks for joining, shall we look at pricing?',
  '',
  '00:00:05.000 --> 00:01:02.250',
  '<v Dana Buyer>Yes & send the <b>contract</b> by Friday',
  '',
].join('\n');

const transcriptExport = (name: string, openPipeline: () => Promise<EmbeddedPipeline>, skip?: string) =>
  describe(`GET /api/calls/:callId/transcript: ${name}`, { skip }, () => {
    let pipeline: EmbeddedPipeline;
    let h: PipelineHarness;
    before(async () => {
      pipeline = await openPipeline();
      h = pipeline.h;
    });
    after(async () => {
      await pipeline?.close();
    });

    const get = (key: string | undefined, callId: string, format?: string) =>
      h.ingress.app.inject({
        method: 'GET',
        url: `/api/calls/${encodeURIComponent(callId)}/transcript${format ? `?format=${format}` : ''}`,
        headers: key ? { 'x-api-key': key } : {},
      });

    const submitted = async (key: string, transcript: string): Promise<string> => {
      const accepted = await h.ingest({ key, body: { transcript, repName: 'Sam Seller' } });
      assert.equal(accepted.statusCode, 201, accepted.body);
      const { callId } = accepted.json<{ callId: string }>();
      await h.callEvents(callId);
      return callId;
    };

    test('a WebVTT transcript comes back timed and voiced in every format', async () => {
      const { key } = await h.team();
      const callId = await submitted(key, WEBVTT);

      const json = await get(key, callId);
      assert.equal(json.statusCode, 200, json.body);
      assert.match(String(json.headers['content-type']), /^application\/json/);
      assert.deepEqual(json.json(), {
        callId,
        text: WEBVTT,
        segments: [
          { start: 1, end: 4.5, speaker: 'Rep', text: 'Thanks for joining, shall we look at pricing?' },
          // Cue markup (<b>, <i>, <c>, timestamps) is formatting, not words: the text keeps the words.
          { start: 5, end: 62.25, speaker: 'Dana Buyer', text: 'Yes & send the contract by Friday' },
        ],
      });

      const vtt = await get(key, callId, 'vtt');
      assert.equal(vtt.statusCode, 200, vtt.body);
      assert.match(String(vtt.headers['content-type']), /^text\/vtt/);
      assert.equal(
        vtt.body,
        'WEBVTT\n\n00:00:01.000 --> 00:00:04.500\n<v Rep>Thanks for joining, shall we look at pricing?\n\n' +
          '00:00:05.000 --> 00:01:02.250\n<v Dana Buyer>Yes &amp; send the contract by Friday\n',
      );

      const srt = await get(key, callId, 'srt');
      assert.equal(srt.statusCode, 200, srt.body);
      assert.match(String(srt.headers['content-type']), /^application\/x-subrip/);
      assert.equal(
        srt.body,
        '1\n00:00:01,000 --> 00:00:04,500\nRep: Thanks for joining, shall we look at pricing?\n\n' +
          '2\n00:00:05,000 --> 00:01:02,250\nDana Buyer: Yes & send the contract by Friday\n',
      );

      const txt = await get(key, callId, 'txt');
      assert.equal(txt.statusCode, 200, txt.body);
      assert.equal(
        txt.body,
        'Rep: Thanks for joining, shall we look at pricing?\nDana Buyer: Yes & send the contract by Friday\n',
      );
    });

    test('a Speaker: transcript has speakers but no times: json and txt answer, srt and vtt are 409 TRANSCRIPT_NOT_TIMED', async () => {
      const { key } = await h.team();
      const callId = await submitted(key, 'Rep: hello there\nDana: hi, send the proposal\u200b please');
      const json = await get(key, callId, 'json');
      assert.equal(json.statusCode, 200, json.body);
      assert.deepEqual(json.json<{ segments: unknown[] }>().segments, [
        { start: null, end: null, speaker: 'Rep', text: 'hello there' },
        { start: null, end: null, speaker: 'Dana', text: 'hi, send the proposal\u200b please' },
      ]);
      const txt = await get(key, callId, 'txt');
      assert.equal(txt.body, 'Rep: hello there\nDana: hi, send the proposal\u200b please\n');
      for (const format of ['srt', 'vtt']) {
        const refused = await get(key, callId, format);
        assert.equal(refused.statusCode, 409, refused.body);
        const problem = refused.json<{ code: string; detail: string }>();
        assert.equal(problem.code, 'TRANSCRIPT_NOT_TIMED');
        assert.match(problem.detail, /format=json or format=txt/);
      }
    });

    test(`a transcript of more lines than ${SEGMENT_LIMITS.maxSegments} segments loses none: txt writes every line, the last json segment holds the rest`, async () => {
      const { key } = await h.team();
      const lines = Array.from(
        { length: SEGMENT_LIMITS.maxSegments + 1 },
        (_, i) => `${i % 2 ? 'Dana' : 'Rep'}: line ${i}`,
      );
      const callId = await submitted(key, lines.join('\n'));
      const txt = await get(key, callId, 'txt');
      assert.equal(txt.statusCode, 200, txt.body.slice(0, 300));
      assert.equal(txt.body, `${lines.join('\n')}\n`);
      const json = await get(key, callId, 'json');
      const { segments } = json.json<{ segments: { speaker: string | null; text: string }[] }>();
      assert.equal(segments.length, SEGMENT_LIMITS.maxSegments);
      assert.deepEqual(segments.at(-1), {
        start: null,
        end: null,
        speaker: null,
        text: 'Dana: line 19999\nRep: line 20000',
      });
    });

    test('an unknown format is a 400 naming the parameter', async () => {
      const { key } = await h.team();
      const callId = await submitted(key, 'Rep: hello');
      const refused = await get(key, callId, 'docx');
      assert.equal(refused.statusCode, 400, refused.body);
      assert.match(refused.body, /format/);
    });

    test('a pending call is 409 TRANSCRIPT_NOT_READY naming its stage; another team, an unknown call and no key are refused', async () => {
      const { key } = await h.team();
      const other = await h.team();
      // A recording that takes its time to arrive keeps the call pending at fetching_audio.
      const server = await audioServer({ body: Buffer.from('RIFF'), delayMs: 3_000 });
      try {
        const accepted = await h.ingest({ key, body: { audioUrl: server.url } });
        assert.equal(accepted.statusCode, 201, accepted.body);
        const { callId } = accepted.json<{ callId: string }>();
        // The history shows the call queued until the processor has started it: wait for that stage.
        await eventually(
          async () => {
            const pending = await get(key, callId);
            assert.equal(pending.statusCode, 409, pending.body);
            const problem = pending.json<{ code: string; detail: string; errors?: unknown }>();
            assert.equal(problem.code, 'TRANSCRIPT_NOT_READY');
            assert.match(problem.detail, /pending \(stage fetching_audio\)/);
            assert.deepEqual(problem.errors, [
              { field: 'callId', message: 'must name a call whose transcript is recorded' },
            ]);
          },
          { timeoutMs: 2_500, intervalMs: 50 },
        );
        assert.equal((await get(other.key, callId)).statusCode, 404);
        assert.equal((await get(key, '00000000-0000-4000-8000-000000000000')).statusCode, 404);
        const nul = await get(key, 'nul\u0000id');
        assert.equal(nul.statusCode, 400, nul.body);
        assert.deepEqual(
          nul.json<{ errors?: { field: string }[] }>().errors?.map((e) => e.field),
          ['callId'],
        );
        assert.equal((await get(undefined, callId)).statusCode, 401);
        // Failed before any transcript: still no transcript, and the detail says why.
        const failed = await h.callEvents(callId);
        assert.ok(
          failed.some((e) => e.type === 'CallFailed'),
          'four bytes of RIFF are no recording',
        );
        const after = await get(key, callId);
        assert.equal(after.statusCode, 409, after.body);
        assert.deepEqual(
          after.json<{ errors?: { field: string }[] }>().errors?.map((e) => e.field),
          ['callId'],
        );
        assert.match(
          after.json<{ detail: string }>().detail,
          /^The call failed \(\w+\) before a transcript was recorded\.$/,
        );
      } finally {
        await server.close();
      }
    });
  });

void transcriptExport('embedded (SQLite)', openEmbeddedPipeline);
void transcriptExport('Kafka + PostgreSQL', openServersPipeline, serversSkip);
