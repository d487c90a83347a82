import { Fragment } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, assetFields, assetUrl, downloadHref, type Api, type Asset, type Features } from '../api';
import { copyText } from '../copy';
import { baseModelOf, formatBytes, formatDate, kindOf, modelFolderOf, parseTags } from '../format';
import { KindIcon } from './icons';
import { MetadataEditor, objectOf, rowsOf, type MetaRow } from './MetadataEditor';
import { useThumbnail, type ThumbnailAccess } from './useThumbnail';

interface DetailProps {
  api: Api;
  access: ThumbnailAccess;
  features: Features;
  asset: Asset;
  onClose(): void;
  onSaved(a: Asset): void;
  onTag(tag: string): void;
  onView(): void;
  onDelete(): Promise<void>;
}

/**
 * The details sheet (beside the grid on wide screens, over it on narrow ones): what the asset is first (preview,
 * actions, tags, fields, derived metadata), then the editable name, tags and user metadata.
 */
export function Detail({ api, access, features, asset, onClose, onSaved, onTag, onView, onDelete }: DetailProps) {
  const [name, setName] = useState(asset.name);
  const [tags, setTags] = useState(asset.tags.join(', '));
  const [metaRows, setMetaRows] = useState<MetaRow[]>(() => rowsOf(asset.userMetadata));
  const [metaJson, setMetaJson] = useState<string | undefined>();
  const [status, setStatus] = useState<{ kind: 'ok' | 'error'; text: string } | undefined>();
  const [busy, setBusy] = useState(false);
  const [confirming, setConfirming] = useState(false);
  const heading = useRef<HTMLHeadingElement>(null);
  const thumb = useThumbnail(api, access, asset.thumbnailUrl);
  const kind = kindOf(asset);

  useEffect(() => {
    setName(asset.name);
    setTags(asset.tags.join(', '));
    setMetaRows(rowsOf(asset.userMetadata));
    setMetaJson(undefined);
  }, [asset.id, asset.updatedAt]);
  useEffect(() => {
    setStatus(undefined);
    setConfirming(false);
    heading.current?.focus();
  }, [asset.id]);

  async function copy(what: string, text: string) {
    try {
      await copyText(text);
      setStatus({ kind: 'ok', text: `Copied ${what}.` });
    } catch (err) {
      setStatus({ kind: 'error', text: `Could not copy: ${(err as Error).message}` });
    }
  }

  async function remove() {
    setBusy(true);
    try {
      await onDelete();
    } catch (err) {
      setStatus({ kind: 'error', text: `Delete failed: ${(err as Error).message}` });
      setBusy(false);
      setConfirming(false);
    }
  }

  async function save(e: Event) {
    e.preventDefault();
    let userMetadata: unknown;
    if (metaJson !== undefined) {
      try {
        userMetadata = JSON.parse(metaJson || '{}');
      } catch {
        setStatus({ kind: 'error', text: 'User metadata is not valid JSON.' });
        return;
      }
      if (!userMetadata || typeof userMetadata !== 'object' || Array.isArray(userMetadata)) {
        setStatus({ kind: 'error', text: 'User metadata must be a JSON object.' });
        return;
      }
    } else {
      const o = objectOf(metaRows);
      if ('error' in o) {
        setStatus({ kind: 'error', text: o.error });
        return;
      }
      userMetadata = o.value;
    }
    setBusy(true);
    try {
      const d = await api.gql<{ updateAsset: Asset }>(
        `mutation($id: ID!, $input: UpdateAssetInput!) { updateAsset(id: $id, input: $input) { ${assetFields(features)} } }`,
        { id: asset.id, input: { name: name.trim(), tags: parseTags(tags), userMetadata } },
      );
      onSaved(d.updateAsset);
      setStatus({ kind: 'ok', text: 'Saved.' });
    } catch (err) {
      setStatus({ kind: 'error', text: err instanceof ApiError ? `${err.message} (${err.code})` : String(err) });
    } finally {
      setBusy(false);
    }
  }

  // A link to a signed URL: the browser saves it itself, streamed to disk, whatever its size.
  const download = downloadHref(asset, access?.token);

  const fields: [string, string | undefined | null][] = [
    ['ID', asset.id],
    ['Type', asset.mimeType],
    ['Base model', baseModelOf(asset)],
    [
      'Model folder',
      asset.tags.includes('models') || asset.tags.some((t) => t.startsWith('model_type:'))
        ? modelFolderOf(asset.tags)
        : undefined,
    ],
    ['Size', `${formatBytes(asset.size)} (${asset.size.toLocaleString()} bytes)`],
    ['Hash', asset.assetHash],
    ['Created', formatDate(asset.createdAt)],
    ['Updated', formatDate(asset.updatedAt)],
    ['Last access', formatDate(asset.lastAccessTime)],
    ['Loader path', asset.loaderPath],
    ['Preview', asset.previewId === asset.id ? 'itself' : asset.previewId],
    ['Prompt', asset.promptId],
    ['Immutable', asset.isImmutable ? 'yes' : 'no'],
  ];

  // metadata.paths (contract 6.2) is shown as a list of its own; the rest of the derived metadata as fields.
  const rawPaths = asset.metadata?.paths;
  const paths = Array.isArray(rawPaths) ? rawPaths.filter((x): x is string => typeof x === 'string') : [];
  const derived = Object.entries(asset.metadata ?? {}).filter(([k]) => k !== 'paths' || paths.length === 0);

  return (
    <aside class="drawer" aria-labelledby="detail-title">
      <div class="drawer-head">
        <h2 id="detail-title" tabIndex={-1} ref={heading} title={asset.name}>
          {asset.name}
        </h2>
        <button type="button" class="icon-button close-button" onClick={onClose} aria-label="Close details (Escape)">
          ×
        </button>
      </div>
      <button type="button" class="drawer-preview" onClick={onView} aria-label={`View ${asset.name}`}>
        {thumb.src ? <img src={thumb.src} alt="" onError={thumb.onError} /> : <KindIcon kind={kind} size={72} />}
      </button>
      <div class="drawer-actions">
        <button type="button" class="primary" onClick={onView}>
          View
        </button>
        {download ? (
          <a class="button" href={download} download={asset.name.slice(asset.name.lastIndexOf('/') + 1)}>
            Download
          </a>
        ) : (
          <button type="button" disabled title="This service gives no signed URLs: use the command-line client">
            Download
          </button>
        )}
        <button type="button" onClick={() => copy('the id', asset.id)}>
          Copy ID
        </button>
        <button type="button" onClick={() => copy('the URL', assetUrl(asset))}>
          Copy URL
        </button>
        {asset.loaderPath && (
          <button type="button" onClick={() => copy('the loader path', asset.loaderPath!)}>
            Copy loader path
          </button>
        )}
        {!confirming ? (
          <button
            type="button"
            class="danger"
            onClick={() => setConfirming(true)}
            disabled={asset.isImmutable}
            title={asset.isImmutable ? 'This asset is immutable' : undefined}
          >
            Delete
          </button>
        ) : (
          <span class="confirm" role="group" aria-label="Confirm delete">
            <span>Delete this asset?</span>
            <button type="button" class="danger-solid" onClick={remove} disabled={busy}>
              Delete
            </button>
            <button type="button" onClick={() => setConfirming(false)}>
              Keep
            </button>
          </span>
        )}
      </div>
      {status && (
        <p class={status.kind === 'ok' ? 'ok' : 'error'} role={status.kind === 'ok' ? 'status' : 'alert'}>
          {status.text}
        </p>
      )}

      {asset.tags.length > 0 && (
        <section>
          <h3>Tags</h3>
          <ul class="chips">
            {asset.tags.map((t) => (
              <li key={t}>
                <button type="button" class="chip" onClick={() => onTag(t)} title={`Show assets tagged ${t}`}>
                  {t}
                </button>
              </li>
            ))}
          </ul>
        </section>
      )}

      <section>
        <h3>Fields</h3>
        <dl class="fields">
          {fields
            .filter(([, v]) => v !== undefined && v !== null && v !== '')
            .map(([k, v]) => (
              <Fragment key={k}>
                <dt>{k}</dt>
                <dd>{v}</dd>
              </Fragment>
            ))}
        </dl>
      </section>

      {paths.length > 0 && (
        <section>
          <h3>{paths.length === 1 ? 'Path' : `Paths (${paths.length})`}</h3>
          <p class="help">Where this content sits in pushed or imported trees; pull recreates each.</p>
          <ul class="paths">
            {paths.map((p) => (
              <li key={p}>
                <code>{p}</code>
                <button type="button" class="link" onClick={() => copy('the path', p)} aria-label={`Copy ${p}`}>
                  Copy
                </button>
              </li>
            ))}
          </ul>
        </section>
      )}

      {derived.length > 0 && (
        <section>
          <h3>Metadata</h3>
          <dl class="fields">
            {derived.map(([k, v]) => (
              <Fragment key={k}>
                <dt>{k}</dt>
                <dd>
                  {typeof v === 'object' && v !== null ? (
                    <details>
                      <summary>{Array.isArray(v) ? `${v.length} items` : `${Object.keys(v).length} keys`}</summary>
                      <pre>{JSON.stringify(v, null, 2)}</pre>
                    </details>
                  ) : (
                    String(v)
                  )}
                </dd>
              </Fragment>
            ))}
          </dl>
        </section>
      )}

      <form class="edit" onSubmit={save}>
        <fieldset disabled={busy || asset.isImmutable}>
          <legend>Edit</legend>
          <label for="edit-name">Name</label>
          <input
            id="edit-name"
            value={name}
            onInput={(e) => setName((e.target as HTMLInputElement).value)}
            required
            maxLength={512}
          />
          <label for="edit-tags">Tags</label>
          <input
            id="edit-tags"
            value={tags}
            onInput={(e) => setTags((e.target as HTMLInputElement).value)}
            aria-describedby="edit-tags-help"
          />
          <p id="edit-tags-help" class="help">
            Comma-separated.
          </p>
          <MetadataEditor rows={metaRows} onRows={setMetaRows} json={metaJson} onJson={setMetaJson} />
          <div class="row">
            <button type="submit" class="primary">
              {busy ? 'Saving…' : 'Save'}
            </button>
          </div>
          {asset.isImmutable && <p class="help">This asset is immutable.</p>}
        </fieldset>
      </form>
    </aside>
  );
}
