/**
 * A `Content-Disposition` value (RFC 6266) with an ASCII fallback name and an RFC 5987 UTF-8 one; no quote or
 * control byte of `name` can break out. Used for streamed content, export archives and S3's presigned answers.
 */
export function contentDisposition(kind: 'inline' | 'attachment', name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_');
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}
