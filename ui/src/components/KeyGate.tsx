import { useState } from 'preact/hooks';
import { ApiError, checkKey } from '../api';

/** Asks for the API key once per tab; the key goes to sessionStorage only after the service accepted it. */
export function KeyGate({ notice, onKey }: { notice?: string; onKey: (key: string) => void }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | undefined>(notice);
  const [busy, setBusy] = useState(false);

  async function submit(e: Event) {
    e.preventDefault();
    const k = key.trim();
    if (!k) {
      setError('Enter an API key.');
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      await checkKey(k);
      onKey(k);
    } catch (err) {
      setError(
        err instanceof ApiError && err.code === 'UNAUTHORIZED'
          ? 'This key was refused (401 UNAUTHORIZED). Check it and try again.'
          : `Could not check the key: ${(err as Error).message}`,
      );
    } finally {
      setBusy(false);
    }
  }

  return (
    <main class="gate">
      <form class="gate-card" onSubmit={submit} aria-labelledby="gate-title">
        <h1 id="gate-title">Asset browser</h1>
        <p class="muted">
          Enter your API key. It stays in this browser tab only and is sent with each request as <code>X-API-Key</code>.
        </p>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          type="password"
          autocomplete="off"
          spellcheck={false}
          value={key}
          onInput={(e) => setKey((e.target as HTMLInputElement).value)}
          aria-invalid={error ? 'true' : undefined}
          aria-describedby={error ? 'gate-error' : undefined}
          autofocus
        />
        {error && (
          <p id="gate-error" class="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Checking…' : 'Open'}
        </button>
      </form>
    </main>
  );
}
