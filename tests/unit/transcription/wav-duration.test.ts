import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseWavDuration } from '../../../shared/adapters/transcription/audio-duration.ts';

interface Shape {
  format?: number;
  channels?: number;
  sampleRate?: number;
  bitsPerSample?: number;
  dataBytes: number;
  /** Value written in the data chunk's size field; default `dataBytes`. */
  declaredDataSize?: number;
  riffSize?: number;
  /** Chunks placed between `fmt ` and `data`. */
  extraChunks?: Array<{ id: string; body: Buffer }>;
  extensibleSubFormat?: number;
}

const chunk = (id: string, body: Buffer): Buffer => {
  const head = Buffer.alloc(8);
  head.write(id, 0, 'ascii');
  head.writeUInt32LE(body.byteLength, 4);
  return Buffer.concat([head, body, Buffer.alloc(body.byteLength % 2)]);
};

/** A WAV file of this shape, samples all zero. */
const wav = (shape: Shape): Buffer => {
  const { format = 1, channels = 1, sampleRate = 16_000, bitsPerSample = 16 } = shape;
  const blockAlign = (channels * bitsPerSample) / 8;
  const fmt = Buffer.alloc(shape.extensibleSubFormat === undefined ? 16 : 40);
  fmt.writeUInt16LE(format, 0);
  fmt.writeUInt16LE(channels, 2);
  fmt.writeUInt32LE(sampleRate, 4);
  fmt.writeUInt32LE(sampleRate * blockAlign, 8);
  fmt.writeUInt16LE(blockAlign, 12);
  fmt.writeUInt16LE(bitsPerSample, 14);
  if (shape.extensibleSubFormat !== undefined) {
    fmt.writeUInt16LE(22, 16);
    fmt.writeUInt16LE(shape.extensibleSubFormat, 24);
  }
  const data = chunk('data', Buffer.alloc(shape.dataBytes));
  data.writeUInt32LE(shape.declaredDataSize ?? shape.dataBytes, 4);
  const body = Buffer.concat([
    Buffer.from('WAVE'),
    chunk('fmt ', fmt),
    ...(shape.extraChunks ?? []).map((c) => chunk(c.id, c.body)),
    data,
  ]);
  const riff = Buffer.alloc(8);
  riff.write('RIFF', 0, 'ascii');
  riff.writeUInt32LE(shape.riffSize ?? body.byteLength, 4);
  return Buffer.concat([riff, body]);
};

const duration = (file: Buffer) => parseWavDuration(file, file.byteLength);

test('16 kHz mono 16-bit PCM: data bytes ÷ 32 000', () => {
  assert.equal(duration(wav({ dataBytes: 32_000 * 3 })), 3);
});

test('other rates, channels and sizes: whole frames ÷ sample rate', () => {
  assert.equal(duration(wav({ sampleRate: 22_050, dataBytes: 22_050 * 2 * 2 })), 2);
  assert.equal(duration(wav({ sampleRate: 44_100, channels: 2, dataBytes: 44_100 * 4 })), 1);
  assert.equal(duration(wav({ sampleRate: 8_000, bitsPerSample: 8, format: 7, dataBytes: 4_000 })), 0.5); // µ-law
  assert.equal(duration(wav({ sampleRate: 48_000, bitsPerSample: 32, format: 3, dataBytes: 48_000 * 4 })), 1); // float
});

test('metadata chunks before the data (LIST, odd-sized ones padded) are skipped', () => {
  const extraChunks = [
    { id: 'LIST', body: Buffer.from('INFOISFT\x0e\x00\x00\x00Lavf59.27.100\x00') },
    { id: 'junk', body: Buffer.alloc(3) },
  ];
  assert.equal(duration(wav({ dataBytes: 16_000, extraChunks })), 0.5);
});

test('WAVE_FORMAT_EXTENSIBLE with a PCM sub-format is read; with a compressed one it is not', () => {
  assert.equal(duration(wav({ format: 0xfffe, extensibleSubFormat: 1, channels: 2, dataBytes: 64_000 })), 1);
  assert.equal(duration(wav({ format: 0xfffe, extensibleSubFormat: 0x55, dataBytes: 64_000 })), undefined);
});

test('a truncated file counts only the bytes present', () => {
  const full = wav({ dataBytes: 32_000 });
  assert.equal(parseWavDuration(full, full.byteLength - 16_000), 0.5);
});

test('a streamed WAV (data size unknown: 0xFFFFFFFF, or 0 with an unknown RIFF size) counts the bytes present', () => {
  assert.equal(duration(wav({ dataBytes: 16_000, declaredDataSize: 0xffffffff })), 0.5);
  assert.equal(duration(wav({ dataBytes: 16_000, declaredDataSize: 0, riffSize: 0xffffffff })), 0.5);
});

test('an empty data chunk is zero seconds', () => {
  assert.equal(duration(wav({ dataBytes: 0 })), 0);
});

test('not a constant-rate WAV: undefined', () => {
  assert.equal(duration(Buffer.from('ID3\x04\x00\x00\x00\x00\x00\x00 an mp3')), undefined);
  assert.equal(duration(Buffer.alloc(0)), undefined);
  assert.equal(duration(wav({ format: 0x11, dataBytes: 1_024 })), undefined); // IMA ADPCM
  assert.equal(duration(wav({ sampleRate: 0, dataBytes: 1_024 })), undefined);
  assert.equal(duration(wav({ dataBytes: 1_024 }).subarray(0, 30)), undefined); // cut inside fmt
});
