/**
 * A multipart/form-data request body built as one Blob, for uploads to HTTP services.
 *
 * Why not `FormData`: fetch turns a FormData body into a stream written by a loop that nothing
 * awaits, so a request aborted or refused while a file part is still being read (a shutdown or a
 * deadline during an upload) makes that loop write to a closed stream and rejects where no one
 * listens: an unhandled rejection, which ends a Node process. A Blob body is read by the stream
 * fetch owns and cancels cleanly, its size is known (the request carries a Content-Length rather
 * than chunked encoding), and a file part made by `fs.openAsBlob` is still read from disk as it is
 * sent, never held in memory.
 */
import { randomUUID } from 'node:crypto';

export type FormPart = { name: string; value: string } | { name: string; file: Blob; filename: string };

export interface MultipartBody {
  body: Blob;
  /** `multipart/form-data; boundary=…`, to send as the Content-Type. */
  contentType: string;
}

/** Quotes a name or file name as the HTML form encoding does: `"`, CR and LF percent-encoded. */
const quoted = (text: string) => `"${text.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A')}"`;

export const multipartBody = (parts: readonly FormPart[]): MultipartBody => {
  const boundary = `----call-ingestion-${randomUUID()}`;
  const pieces: (string | Blob)[] = [];
  for (const part of parts) {
    const disposition = `Content-Disposition: form-data; name=${quoted(part.name)}`;
    if ('file' in part) {
      const type = part.file.type || 'application/octet-stream';
      pieces.push(
        `--${boundary}\r\n${disposition}; filename=${quoted(part.filename)}\r\nContent-Type: ${type}\r\n\r\n`,
        part.file,
        '\r\n',
      );
    } else {
      pieces.push(`--${boundary}\r\n${disposition}\r\n\r\n${part.value}\r\n`);
    }
  }
  pieces.push(`--${boundary}--\r\n`);
  return { body: new Blob(pieces), contentType: `multipart/form-data; boundary=${boundary}` };
};
