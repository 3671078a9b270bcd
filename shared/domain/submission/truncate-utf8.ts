/**
 * Truncation of text to a byte budget without splitting a character.
 *
 * The spec caps the inline transcript at "500 KB". We read KB as 1024 bytes, so the cap is
 * 500 × 1024 = 512,000 bytes of UTF-8 — the larger reading, so no caller loses text to our choice
 * of unit. Bytes, not characters, because the cap exists to bound storage and transfer.
 */

/** The inline transcript cap in UTF-8 bytes: 500 KB read as 500 × 1024. */
export const TRANSCRIPT_MAX_BYTES = 500 * 1024;

export interface TruncatedText {
  /** The text, cut to at most the byte budget on a character boundary. */
  text: string;
  /** True when something was cut. */
  truncated: boolean;
  /** UTF-8 length of the text as received (a lone surrogate counts as U+FFFD, 3 bytes). */
  originalBytes: number;
}

const encoder = new TextEncoder();

/** UTF-8 length of a string, counting a lone surrogate as the 3 bytes of U+FFFD it encodes to. */
export const utf8ByteLength = (text: string): number => Buffer.byteLength(text, 'utf8');

/**
 * Keeps the longest prefix of `text` whose UTF-8 encoding fits in `maxBytes`.
 * A multi-byte character (2, 3 or 4 bytes, including a surrogate pair) that would straddle the
 * limit is dropped whole: `TextEncoder.encodeInto` writes only complete characters and reports
 * how many UTF-16 units it consumed, which is exactly the prefix to keep.
 */
export const truncateUtf8 = (text: string, maxBytes: number): TruncatedText => {
  if (!Number.isInteger(maxBytes) || maxBytes < 0)
    throw new RangeError(`maxBytes must be a non-negative integer, got ${maxBytes}`);
  const originalBytes = utf8ByteLength(text);
  if (originalBytes <= maxBytes) return { text, truncated: false, originalBytes };
  const { read } = encoder.encodeInto(text, new Uint8Array(maxBytes));
  return { text: text.slice(0, read), truncated: true, originalBytes };
};

/**
 * The first `maxChars` characters (code points) of `text`: a surrogate pair counts as one
 * character and is kept or dropped whole, so a cut never leaves half of one. For titles, quotes and
 * names in messages, which are limited in characters as a person counts them.
 */
export const truncateChars = (text: string, maxChars: number): string => {
  if (text.length <= maxChars) return text;
  let end = 0;
  for (let count = 0; count < maxChars && end < text.length; count++) {
    const unit = text.charCodeAt(end);
    const low = text.charCodeAt(end + 1);
    end += unit >= 0xd800 && unit <= 0xdbff && low >= 0xdc00 && low <= 0xdfff ? 2 : 1;
  }
  return text.slice(0, end);
};
