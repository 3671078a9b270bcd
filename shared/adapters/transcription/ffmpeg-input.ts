/**
 * How ffmpeg and ffprobe open a recording, which comes from an integrator and may be hostile:
 * - as a `file:` URL of its absolute path, so a name like `http:…` or `concat:…` is never a protocol;
 * - with `-protocol_whitelist file`, so nothing it opens can reach the network (an HLS playlist
 *   posing as audio would otherwise make the server fetch its URLs);
 * - with `-format_whitelist` of real audio/video containers, so playlist and list formats (hls,
 *   dash, concat, image sequences…) that open further files are refused outright.
 */
import { resolve } from 'node:path';

/** Demuxers of recordings people send: phone, meeting and dictation formats. Names as `ffmpeg -demuxers` lists them. */
export const RECORDING_DEMUXERS = [
  'wav',
  'w64',
  'mp3',
  'aac',
  'loas',
  'ac3',
  'eac3',
  'flac',
  'ogg',
  'mov',
  'mp4',
  'm4a',
  '3gp',
  '3g2',
  'matroska',
  'webm',
  'asf',
  'avi',
  'flv',
  'amr',
  'amrnb',
  'amrwb',
  'caf',
  'aiff',
  'au',
  'gsm',
  'voc',
  'wv',
  'ape',
  'tta',
  'tak',
  'mpc',
  'mpc8',
  'oma',
  'dss',
  'xwma',
  'mpeg',
  'mpegts',
  'rm',
  'nut',
  'mxf',
].join(',');

/** The input options and `-i` of one recording, for ffmpeg and ffprobe alike; `url` is how ffmpeg names it in errors. */
export const ffmpegInput = (path: string): { args: string[]; url: string } => {
  const url = `file:${resolve(path)}`;
  return { args: ['-protocol_whitelist', 'file', '-format_whitelist', RECORDING_DEMUXERS, '-i', url], url };
};
