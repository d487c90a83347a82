import { useEffect, useRef, useState } from 'preact/hooks';
import { mediaSource, type Api, type Asset } from '../api';
import { signedThumbnailUrl } from '../first-screen';
import { baseName, formatBytes, kindOf } from '../format';
import { KindIcon } from './icons';
import { useObjectUrl } from './useObjectUrl';

/** Text shown in full up to this size; beyond it, its beginning. */
const TEXT_LIMIT = 512 * 1024;

interface ViewerProps {
  api: Api;
  /** The page's read grant: media load from signed URLs (streamed, with range requests), never through a Blob. */
  access?: string;
  items: Asset[];
  index: number;
  onIndex(i: number): void;
  onClose(): void;
}

/**
 * The full-size viewer over the page: the image itself, a player for video and audio, the text of text and JSON
 * (as text, never as HTML); previous / next by buttons and the arrow keys (the page's Escape closes it).
 */
export function Viewer({ api, access, items, index, onIndex, onClose }: ViewerProps) {
  const asset = items[index]!;
  const box = useRef<HTMLDivElement>(null);
  const go = (d: number) => onIndex(Math.min(items.length - 1, Math.max(0, index + d)));
  // The key listener is registered once and calls the latest `go` (a listener re-registered per render would act on
  // the index before a click's render when a key follows the click at once).
  const latest = useRef(go);
  latest.current = go;

  useEffect(() => {
    const back = document.activeElement as HTMLElement | null;
    box.current?.focus();
    return () => back?.focus?.();
  }, []);
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      // A player's own arrow keys (seeking) stay its own.
      if ((e.target as HTMLElement).closest?.('video, audio')) return;
      if (e.key === 'ArrowRight') latest.current(1);
      else if (e.key === 'ArrowLeft') latest.current(-1);
      else return;
      e.preventDefault();
      e.stopPropagation();
    };
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);

  return (
    <div class="viewer" role="dialog" aria-modal="true" aria-labelledby="viewer-title" ref={box} tabIndex={-1}>
      <div class="viewer-bar">
        <h2 id="viewer-title" title={asset.name}>
          {baseName(asset.name)}
        </h2>
        <div class="viewer-nav">
          <button type="button" onClick={() => go(-1)} disabled={index === 0} aria-label="Previous (←)">
            ‹ Previous
          </button>
          <span class="viewer-pos">
            {index + 1} / {items.length}
          </span>
          <button type="button" onClick={() => go(1)} disabled={index >= items.length - 1} aria-label="Next (→)">
            Next ›
          </button>
        </div>
        <button type="button" class="close-button" onClick={onClose} aria-label="Close viewer (Escape)">
          ×
        </button>
      </div>
      <div class="viewer-stage" data-asset-id={asset.id}>
        <Media key={asset.id} api={api} access={access} asset={asset} />
      </div>
    </div>
  );
}

function Media({ api, access, asset }: { api: Api; access?: string; asset: Asset }) {
  const kind = kindOf(asset);
  const src = mediaSource(asset, access);
  const wantsBytes = kind === 'image' || kind === 'video' || kind === 'audio';
  const fetched = useObjectUrl(api, wantsBytes && src.keyed ? src.url : null);
  const url = src.keyed ? fetched.src : src.url;
  if (kind === 'text') return <TextView api={api} access={access} asset={asset} />;
  if (!wantsBytes) return <NoPreview asset={asset} />;
  if (fetched.failed) return <p class="error">The content could not be loaded.</p>;
  if (!url) return <p class="muted">Loading…</p>;
  if (kind === 'image') {
    const thumb = asset.thumbnailUrl && access ? signedThumbnailUrl(asset.thumbnailUrl, access) : asset.thumbnailUrl;
    return <ImageView src={url} thumb={src.keyed ? undefined : (thumb ?? undefined)} name={asset.name} />;
  }
  if (kind === 'video') return <video src={url} controls aria-label={asset.name} />;
  return <audio src={url} controls aria-label={asset.name} />;
}

/** The thumbnail at once (the browser has it cached from the grid), the full image over it once it is in. */
function ImageView({ src, thumb, name }: { src: string; thumb?: string; name: string }) {
  const [loaded, setLoaded] = useState(false);
  return (
    <>
      {thumb && !loaded && <img class="viewer-thumb" src={thumb} alt="" />}
      <img src={src} alt={name} hidden={!!thumb && !loaded} onLoad={() => setLoaded(true)} />
    </>
  );
}

/**
 * Text and JSON as text: a text node (Preact escapes it), JSON indented when it parses. Only its beginning is read
 * (a Range request on the signed URL).
 */
function TextView({ api, access, asset }: { api: Api; access?: string; asset: Asset }) {
  const [text, setText] = useState<string>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    const ctl = new AbortController();
    const src = mediaSource(asset, access);
    const bytes = src.keyed
      ? api.blob(src.url, ctl.signal)
      : fetch(src.url, { signal: ctl.signal, headers: { Range: `bytes=0-${TEXT_LIMIT - 1}` } }).then((r) => r.blob());
    bytes
      .then((b) => b.slice(0, TEXT_LIMIT).text())
      .then(
        (t) => {
          let shown = t;
          if (/json/i.test(asset.mimeType) && asset.size <= TEXT_LIMIT) {
            try {
              shown = JSON.stringify(JSON.parse(t), null, 2);
            } catch {
              /* not valid JSON: shown as it is */
            }
          }
          setText(shown);
        },
        (err) => !ctl.signal.aborted && setError((err as Error).message),
      );
    return () => ctl.abort();
  }, [asset.id]);
  if (error) return <p class="error">The text could not be loaded: {error}</p>;
  if (text === undefined) return <p class="muted">Loading…</p>;
  return (
    <pre class="viewer-text" tabIndex={0} aria-label={`Text of ${asset.name}`}>
      {text}
      {asset.size > TEXT_LIMIT ? `\n… (first ${formatBytes(TEXT_LIMIT)} of ${formatBytes(asset.size)})` : ''}
    </pre>
  );
}

function NoPreview({ asset }: { asset: Asset }) {
  return (
    <div class="viewer-none">
      <KindIcon kind={kindOf(asset)} size={96} />
      <p>
        {asset.mimeType} · {formatBytes(asset.size)}
      </p>
      <p class="muted">No preview for this type.</p>
    </div>
  );
}
