/**
 * Kill -9 at any moment loses no accepted call and applies no step twice: the real service runs
 * as a child process, is killed with SIGKILL at random moments mid-pipeline, restarted, and in the
 * end every acknowledged call has finished with each step recorded exactly once.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, test } from 'node:test';
import { eventually } from '../../support/eventually.ts';
import { ADMIN_TOKEN } from '../../support/ingress-harness.ts';
import { audioServer } from '../../support/pipeline-harness.ts';
import { type ServiceProcess, startService } from '../../support/service-process.ts';

export interface KillBackends {
  /** Environment of the service processes (backends, prefixes). */
  env: Record<string, string>;
  /** Every event of call streams, in stream order, read without disturbing the running service. */
  callEvents(): Promise<{ streamId: string; type: string }[]>;
  cleanup(): Promise<void>;
}

const TRANSCRIPT =
  'Rep: Hi Dana, what do you use today?\nDana: Spreadsheets, and the price worries me.\nRep: I will send a proposal and book a demo for Friday.';

/** An OpenAI-compatible transcription endpoint on loopback that answers after a delay. */
const slowTranscriptionServer = async (delayMs: number) => {
  const server: Server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      const timer = setTimeout(() => {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(
          JSON.stringify({ text: 'Rep: hello from the recording. Dana: thanks, send the pricing.', duration: 42 }),
        );
      }, delayMs);
      response.on('close', () => clearTimeout(timer)); // the client went away
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
};

const PIPELINE = ['CallSubmitted', 'ProcessingStarted', 'TranscriptRecorded', 'CallAnalysed', 'CallCompleted'];
const AUDIO_PIPELINE = [
  'CallSubmitted',
  'ProcessingStarted',
  'AudioFetched',
  'TranscriptRecorded',
  'CallAnalysed',
  'CallCompleted',
];

export const killSuite = (
  name: string,
  factory: () => Promise<KillBackends>,
  options: { skip?: string; kills?: number } = {},
) => {
  describe(`kill -9 of the service mid-pipeline: ${name}`, { skip: options.skip }, () => {
    const cleanups: (() => Promise<unknown>)[] = [];
    after(async () => {
      for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    });

    test('no accepted call is lost and no step is applied twice', { timeout: 240_000 }, async () => {
      const backends = await factory();
      cleanups.push(() => backends.cleanup());
      const audio = await audioServer({ body: Buffer.alloc(4000, 1), delayMs: 150 });
      cleanups.push(() => audio.close());
      const transcription = await slowTranscriptionServer(250);
      cleanups.push(() => transcription.close());
      const env = {
        ...backends.env,
        ADMIN_TOKEN,
        API_KEY_SECRET: 'kill-test-api-key-secret-0123456789abcdef',
        AUDIO_FETCH_ALLOW_PRIVATE: 'true',
        TRANSCRIBE_URL: transcription.url,
        PROCESSOR_CONCURRENCY: '4',
      };
      let service: ServiceProcess = await startService(env);
      cleanups.push(() => service.kill9());

      const admin = async (path: string, body: unknown) => {
        const res = await fetch(`${service.url}${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        const text = await res.text();
        assert.ok(res.ok, `${path}: ${res.status} ${text}`);
        return JSON.parse(text) as Record<string, string>;
      };
      const { teamId } = await admin('/api/admin/teams', {
        name: 'Kill test',
        ownerEmail: 'owner@kill.test',
        capacityHours: 100,
      });
      const { key } = await admin(`/api/admin/teams/${teamId}/keys`, { label: 'kill' });

      const accepted = new Map<string, 'audio' | 'transcript'>();
      const submit = async (i: number) => {
        const body =
          i % 2 === 0
            ? { transcript: `${TRANSCRIPT} (${i})`, repName: 'Sam' }
            : { audioUrl: `${audio.url}?call=${i}`, repName: 'Sam' };
        const res = await fetch(`${service.url}/api/integrations/push-api/ingest`, {
          method: 'POST',
          headers: { 'x-api-key': key!, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        const text = await res.text();
        assert.equal(res.status, 201, text);
        accepted.set((JSON.parse(text) as { callId: string }).callId, i % 2 === 0 ? 'transcript' : 'audio');
      };
      for (let i = 0; i < 24; i++) await submit(i);

      // Kill at random moments while calls are mid-pipeline, restart on the same data.
      const kills = options.kills ?? 3;
      for (let round = 0; round < kills; round++) {
        await new Promise((resolve) => setTimeout(resolve, 100 + Math.floor(Math.random() * 500)));
        await service.kill9();
        const done = (await backends.callEvents()).filter((e) => e.type === 'CallCompleted').length;
        console.log(`# kill ${round + 1}: ${done}/${accepted.size} calls completed when killed`);
        service = await startService(env);
      }

      const streams = await eventually(
        async () => {
          const byStream = new Map<string, string[]>();
          for (const e of await backends.callEvents())
            byStream.set(e.streamId, [...(byStream.get(e.streamId) ?? []), e.type]);
          const unfinished = [...accepted.keys()].filter(
            (id) => !(byStream.get(`call-${id}`) ?? []).some((t) => t === 'CallCompleted' || t === 'CallFailed'),
          );
          assert.equal(
            unfinished.length,
            0,
            `${unfinished.length} calls unfinished: ${unfinished.map((id) => `${id}: ${(byStream.get(`call-${id}`) ?? []).join(' → ') || 'no events'}`).join('; ')}\nservice output:\n${service.output().slice(-3000)}`,
          );
          return byStream;
        },
        { timeoutMs: 60_000, intervalMs: 250 },
      );
      for (const [callId, mode] of accepted) {
        assert.deepEqual(
          streams.get(`call-${callId}`),
          mode === 'audio' ? AUDIO_PIPELINE : PIPELINE,
          `call ${callId}: every step once, in order`,
        );
      }
      await eventually(async () => {
        const res = await fetch(`${service.url}/api/admin/teams/${teamId}`, {
          headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        });
        const team = (await res.json()) as { capacity: { reservedCalls: number } };
        assert.equal(team.capacity.reservedCalls, 0, 'every reservation settled');
      });
      assert.equal(await service.stop(), 0, 'clean shutdown');
    });
  });
};
