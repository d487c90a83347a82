import { useEffect, useState } from 'preact/hooks';
import type { Api } from '../api';

/**
 * Bytes that need the key header (an <img src> cannot send it): fetched, shown through an object URL, and the URL
 * revoked when the component unmounts or the source changes.
 */
export function useObjectUrl(api: Api, url: string | null | undefined): { src?: string; failed: boolean } {
  const [state, setState] = useState<{ src?: string; failed: boolean }>({ failed: false });
  useEffect(() => {
    if (!url) {
      // The same state when there is nothing to drop: every tile with a grant runs this on mount, and a new object
      // would render each of them again.
      setState((s) => (s.src === undefined && !s.failed ? s : { failed: false }));
      return;
    }
    const ctl = new AbortController();
    let objectUrl: string | undefined;
    api.blob(url, ctl.signal).then(
      (b) => {
        objectUrl = URL.createObjectURL(b);
        setState({ src: objectUrl, failed: false });
      },
      () => {
        if (!ctl.signal.aborted) setState({ failed: true });
      },
    );
    return () => {
      ctl.abort();
      if (objectUrl) URL.revokeObjectURL(objectUrl);
    };
  }, [api, url]);
  return state;
}
