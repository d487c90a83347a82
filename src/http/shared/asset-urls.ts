import { previewTargetOf, type Links, type PreviewFields } from '../../domain/assets/asset.types';

/**
 * An asset's URLs, as both transports give them (REST's `preview_url`, `thumbnail_url`, `short_url`; GraphQL's
 * `previewUrl` ...): absolute, from the answer's `Links`, media URLs with the owner's read grant.
 */

/** `?access=<grant>` for a media URL, or nothing (a grant token is digits, dots and base64url: no escaping). */
export const grantQuery = (links: Links): string => (links.access === undefined ? '' : `?access=${links.access}`);

/** The absolute URL of the asset's thumbnail, once its content has one. */
export const thumbnailUrlOf = (a: { id: string; hasThumbnail: boolean }, links: Links): string | undefined =>
  a.hasThumbnail ? `${links.base}/api/assets/${a.id}/thumbnail${grantQuery(links)}` : undefined;

/** `short_url`: a durable link to the asset's content (`/api/s/{id}` answers 302 to a freshly signed URL). */
export const shortUrlOf = (a: { id: string }, links: Links): string => `${links.base}/api/s/${a.id}`;

/** The content as an attachment (`downloadUrl`), with the read grant when media URLs carry one. */
export const downloadUrlOf = (a: { id: string }, links: Links): string =>
  `${links.base}/api/assets/${a.id}/content?${links.access === undefined ? '' : `access=${links.access}&`}disposition=attachment`;

/** The absolute preview URL (with the read grant), or undefined without a preview. */
export const previewUrlOf = (a: PreviewFields, links: Links): string | undefined => {
  const target = previewTargetOf(a);
  return target === undefined ? undefined : `${links.base}/api/assets/${target}/content${grantQuery(links)}`;
};
