import { useEffect, useState } from 'preact/hooks';
import { ApiError, type Api } from '../api';
import { copyText } from '../copy';
import { formatDate } from '../format';

interface ApiKey {
  id: string;
  owner: string;
  label: string;
  scopes: string[];
  createdAt: string;
  lastUsedAt?: string | null;
  expiresAt?: string | null;
  revokedAt?: string | null;
}

const KEY_FIELDS = 'id owner label scopes createdAt lastUsedAt expiresAt revokedAt';
const SCOPES = ['read', 'write', 'admin'] as const;

const message = (err: unknown) =>
  err instanceof ApiError ? `${err.message} (${err.code})` : String((err as Error).message ?? err);

/**
 * The keys page (admin keys only, contract 8): every owner's keys with when each was last used, expires and was
 * revoked; a new key with its owner, label, scopes and expiry (its secret shown this once, with Copy); Revoke.
 */
export function KeysPage({ api, announce }: { api: Api; announce(text: string): void }) {
  const [keys, setKeys] = useState<ApiKey[]>();
  const [error, setError] = useState<string>();
  const [owner, setOwner] = useState('');
  const [label, setLabel] = useState('');
  const [scopes, setScopes] = useState<string[]>(['read', 'write']);
  const [expires, setExpires] = useState('');
  const [created, setCreated] = useState<{ key: string; apiKey: ApiKey }>();
  const [status, setStatus] = useState<{ kind: 'ok' | 'error'; text: string }>();
  const [confirming, setConfirming] = useState<string>();
  const [busy, setBusy] = useState(false);

  async function load() {
    try {
      const d = await api.gql<{ apiKeys: ApiKey[] }>(`{ apiKeys(allOwners: true) { ${KEY_FIELDS} } }`);
      setKeys(d.apiKeys);
      setError(undefined);
    } catch (err) {
      setError(message(err));
    }
  }
  useEffect(() => void load(), [api]);

  async function create(e: Event) {
    e.preventDefault();
    if (scopes.length === 0) return setStatus({ kind: 'error', text: 'Pick at least one scope.' });
    setBusy(true);
    try {
      const input = {
        ...(owner.trim() ? { owner: owner.trim() } : {}),
        ...(label.trim() ? { label: label.trim() } : {}),
        scopes,
        // The end of the chosen day in the browser's time zone.
        ...(expires ? { expiresAt: new Date(`${expires}T23:59:59`).toISOString() } : {}),
      };
      const d = await api.gql<{ createApiKey: { key: string; apiKey: ApiKey } }>(
        `mutation($input: CreateApiKeyInput!) { createApiKey(input: $input) { key apiKey { ${KEY_FIELDS} } } }`,
        { input },
      );
      setCreated(d.createApiKey);
      setStatus(undefined);
      setLabel('');
      announce(`Created a key for ${d.createApiKey.apiKey.owner}.`);
      await load();
    } catch (err) {
      setStatus({ kind: 'error', text: `The key was not created: ${message(err)}` });
    } finally {
      setBusy(false);
    }
  }

  async function revoke(k: ApiKey) {
    setBusy(true);
    try {
      await api.gql('mutation($id: ID!) { revokeApiKey(id: $id) }', { id: k.id });
      setConfirming(undefined);
      announce(`Revoked the key ${k.label || k.id}.`);
      await load();
    } catch (err) {
      setStatus({ kind: 'error', text: `The key was not revoked: ${message(err)}` });
    } finally {
      setBusy(false);
    }
  }

  async function copy(text: string) {
    try {
      await copyText(text);
      setStatus({ kind: 'ok', text: 'Copied the key.' });
    } catch (err) {
      setStatus({ kind: 'error', text: `Could not copy: ${message(err)}` });
    }
  }

  return (
    <div class="keys-page">
      <h2 id="keys-title">API keys</h2>
      <form class="key-form" onSubmit={create} aria-labelledby="new-key-title">
        <h3 id="new-key-title">New key</h3>
        <div class="key-fields">
          <label>
            <span>Owner</span>
            <input
              id="key-owner"
              value={owner}
              placeholder="this key's owner"
              onInput={(e) => setOwner((e.target as HTMLInputElement).value)}
            />
          </label>
          <label>
            <span>Label</span>
            <input
              id="key-label"
              value={label}
              maxLength={128}
              onInput={(e) => setLabel((e.target as HTMLInputElement).value)}
            />
          </label>
          <label>
            <span>Expires on</span>
            <input
              id="key-expires"
              type="date"
              value={expires}
              onChange={(e) => setExpires((e.target as HTMLInputElement).value)}
            />
          </label>
          <fieldset class="key-scopes">
            <legend>Scopes</legend>
            {SCOPES.map((s) => (
              <label key={s}>
                <input
                  type="checkbox"
                  checked={scopes.includes(s)}
                  onChange={(e) =>
                    setScopes((now) =>
                      (e.target as HTMLInputElement).checked ? [...now, s] : now.filter((x) => x !== s),
                    )
                  }
                />{' '}
                {s}
              </label>
            ))}
          </fieldset>
        </div>
        <button type="submit" class="primary" disabled={busy}>
          Create key
        </button>
      </form>
      {created && (
        <div class="key-secret" role="status">
          <p>
            The new key of <strong>{created.apiKey.owner}</strong>. It is shown this once: copy it now.
          </p>
          <div class="row">
            <label for="key-secret" class="sr-only">
              Secret of the new key
            </label>
            <input
              id="key-secret"
              readOnly
              value={created.key}
              onFocus={(e) => (e.target as HTMLInputElement).select()}
            />
            <button type="button" onClick={() => copy(created.key)}>
              Copy
            </button>
            <button type="button" onClick={() => setCreated(undefined)}>
              Done
            </button>
          </div>
        </div>
      )}
      {status && (
        <p class={status.kind === 'ok' ? 'ok' : 'error'} role={status.kind === 'ok' ? 'status' : 'alert'}>
          {status.text}
        </p>
      )}
      {error && (
        <div class="error banner" role="alert">
          <span>The keys could not be loaded: {error}</span>
          <button type="button" onClick={load}>
            Retry
          </button>
        </div>
      )}
      {keys && (
        <div class="list-wrap">
          <table class="list keys" aria-labelledby="keys-title">
            <thead>
              <tr>
                <th scope="col">Owner</th>
                <th scope="col">Label</th>
                <th scope="col">Scopes</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">Expires</th>
                <th scope="col">Revoked</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {keys.map((k) => (
                <tr key={k.id} data-id={k.id} class={k.revokedAt ? 'revoked' : ''}>
                  <td>{k.owner}</td>
                  <td>{k.label || <span class="muted">—</span>}</td>
                  <td>{k.scopes.join(', ')}</td>
                  <td>{formatDate(k.createdAt)}</td>
                  <td>{k.lastUsedAt ? formatDate(k.lastUsedAt) : 'never'}</td>
                  <td>{k.expiresAt ? formatDate(k.expiresAt) : 'never'}</td>
                  <td>{k.revokedAt ? formatDate(k.revokedAt) : ''}</td>
                  <td>
                    {k.revokedAt || k.id.startsWith('env:') ? null : confirming === k.id ? (
                      <span class="confirm" role="group" aria-label="Confirm revoke">
                        <button type="button" class="danger-solid" disabled={busy} onClick={() => revoke(k)}>
                          Revoke
                        </button>
                        <button type="button" onClick={() => setConfirming(undefined)}>
                          Keep
                        </button>
                      </span>
                    ) : (
                      <button type="button" class="danger" onClick={() => setConfirming(k.id)}>
                        Revoke
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}
