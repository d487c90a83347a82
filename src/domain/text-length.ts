/**
 * A text's length in Unicode code points (a surrogate pair is one), as JSON Schema's `maxLength` counts it: a limit
 * that openapi.yaml states as `maxLength` is checked with this, so the service accepts every value the document does.
 */
export function codePointLength(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length - 1; i++) {
    const c = s.charCodeAt(i);
    if (c < 0xd800 || c > 0xdbff) continue;
    const d = s.charCodeAt(i + 1);
    if (d >= 0xdc00 && d <= 0xdfff) {
      n--;
      i++;
    }
  }
  return n;
}

/** Whether `s` is longer than `max` code points (no count when its UTF-16 length is within the limit already). */
export const longerThan = (s: string, max: number): boolean => s.length > max && codePointLength(s) > max;
