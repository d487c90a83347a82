/**
 * The one sanitiser for turning asset names into relative paths (`loader_path`). Everything that turns
 * names into paths (`loader_path`, the CLI's `pull`, export archives) must use this, so a name that is unsafe in one
 * place is unsafe in all of them.
 *
 * `name` when it is a safe relative path (no `..` or `.` segment, no leading `/`, no `\`, no control character, no
 * empty segment); undefined otherwise.
 */
export function safeRelativePath(name: string): string | undefined {
  if (name === '' || name.startsWith('/') || name.includes('\\') || /[\u0000-\u001f\u007f]/.test(name))
    return undefined;
  const segments = name.split('/');
  if (segments.some((s) => s === '' || s === '.' || s === '..')) return undefined;
  return name;
}
