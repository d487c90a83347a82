import { useEffect, useRef, useState } from 'preact/hooks';
import { mediaSource, type Api, type Asset } from '../api';
import { baseName, formatBytes, kindOf } from '../format';
import { KindIcon } from './icons';
import { useObjectUrl } from './useObjectUrl';

/** Text shown in full up to this size; beyond it, its beginning. */
const TEXT_LIMIT = 512 * 1024;

interface ViewerProps {
  api: Api;
  items: Asset[];
  index: number;
  onIndex(i: number): void;
  onClose(): void;
}

/**
 * The full-size viewer over the page: the image itself, a player for video and audio, the text of text and JSON
 * (as text, never as HTML); previous / next by buttons and the arrow keys (the page's Escape closes it).
 */
export function Viewer({ api, items, index, onIndex, onClose }: ViewerProps) {
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
        <Media key={asset.id} api={api} asset={asset} />
      </div>
    </div>
  );
}

function Media({ api, asset }: { api: Api; asset: Asset }) {
  const kind = kindOf(asset);
  const src = mediaSource(asset);
  const wantsBytes = kind === 'image' || kind === 'video' || kind === 'audio';
  const fetched = useObjectUrl(api, wantsBytes && src.keyed ? src.url : null);
  const url = src.keyed ? fetched.src : src.url;
  if (kind === 'text') return <TextView api={api} asset={asset} />;
  if (!wantsBytes) return <NoPreview asset={asset} />;
  if (fetched.failed) return <p class="error">The content could not be loaded.</p>;
  if (!url) return <p class="muted">Loading…</p>;
  if (kind === 'image') return <img src={url} alt={asset.name} />;
  if (kind === 'video') return <video src={url} controls aria-label={asset.name} />;
  return <audio src={url} controls aria-label={asset.name} />;
}

/** Text and JSON as text: a text node (Preact escapes it), JSON indented when it parses. */
function TextView({ api, asset }: { api: Api; asset: Asset }) {
  const [text, setText] = useState<string>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    const ctl = new AbortController();
    const src = mediaSource(asset);
    const bytes = src.keyed
      ? api.blob(src.url, ctl.signal)
      : fetch(src.url, { signal: ctl.signal }).then((r) => r.blob());
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
