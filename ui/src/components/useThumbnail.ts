import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import type { Api } from '../api';
import { signedThumbnailUrl, withoutGrant } from '../first-screen';
import { useObjectUrl } from './useObjectUrl';

/**
 * A grant to read this owner's thumbnails without the key (`GET /api/thumbnail-access`): undefined while it is
 * asked for, null when the service gives none (then thumbnails are fetched with the key header).
 */
export type ThumbnailAccess = { token: string; expiresAt: number } | null | undefined;

/** Asks for the grant at once (beside the first page's request), and for the next one before it expires. */
export function useThumbnailAccess(api: Api): ThumbnailAccess {
  // The page's head may have it already (then the first render's <img> elements have their URLs).
  const [first] = useState(() => api.grantNow());
  const [access, setAccess] = useState<ThumbnailAccess>(
    first && { token: first.access, expiresAt: Date.parse(first.expires_at) },
  );
  const had = useRef(!!first);
  // A layout effect, like the first page's request: asked for right after the first render, not after its paint.
  useLayoutEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const next = (expiresAt: number) =>
      (timer = setTimeout(ask, Math.max(60_000, expiresAt - Date.now() - 5 * 60_000)));
    const ask = () =>
      api.grant().then(
        (g) => {
          if (!live) return;
          had.current = true;
          const expiresAt = Date.parse(g.expires_at);
          setAccess((a) => (a?.token === g.access ? a : { token: g.access, expiresAt }));
          next(expiresAt);
        },
        () => {
          if (!live) return;
          setAccess((a) => a ?? null);
          // A service that gave one before is asked again (the current grant still serves until it expires).
          if (had.current) timer = setTimeout(ask, 60_000);
        },
      );
    if (first) next(Date.parse(first.expires_at));
    else void ask();
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [api]);
  return access;
}

/**
 * The `src` of a thumbnail: with a grant, the thumbnail URL itself plus `?access=` (the browser fetches it natively,
 * in parallel, and caches it); without one, or when that URL fails, fetched with the key header into an object URL.
 */
export function useThumbnail(
  api: Api,
  access: ThumbnailAccess,
  url: string | null | undefined,
): { src?: string; onError?(): void } {
  const [keyed, setKeyed] = useState(false);
  const viaKey = !!url && (access === null || keyed);
  const fetched = useObjectUrl(api, viaKey ? withoutGrant(url) : null);
  if (!url || access === undefined) return {};
  if (viaKey) return { src: fetched.src };
  return { src: signedThumbnailUrl(url, access!.token), onError: () => setKeyed(true) };
}
