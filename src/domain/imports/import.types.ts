/** The figures of one import (POST /api/assets/seed), as its status and its task's result show them. */
export interface ImportProgress {
  /** Files (and skipped entries) looked at so far. */
  scanned: number;
  /** Files and skipped entries the walk found. */
  total: number;
  /** New assets. */
  created: number;
  /** Files not stored anew: unchanged since the last import, already an asset, or refused (see errors). */
  skipped: number;
  /** Files opened and read: a second import of an unchanged tree reads none. */
  filesRead: number;
  bytesRead: number;
}

export interface ImportError {
  /** The tree path (`models/loras/x.safetensors`), never a path of the server outside the roots. */
  path: string;
  code: string;
  message: string;
}

/** ComfyUI's spelling (upper case), as its seed status answers it. */
export type ImportState = 'IDLE' | 'RUNNING' | 'CANCELLING';

export interface ImportStatus {
  state: ImportState;
  /** The running import's figures, else the last one's; absent before any import. */
  progress?: ImportProgress;
  errors: ImportError[];
}

/** What POST /api/assets/seed answers (ComfyUI's shapes). */
export type SeedAnswer =
  | { status: 'started' | 'already_running'; taskId?: string }
  | { status: 'completed' | 'cancelled' | 'failed'; progress: ImportProgress; errors: ImportError[]; taskId?: string };

export const EMPTY_PROGRESS: ImportProgress = {
  scanned: 0,
  total: 0,
  created: 0,
  skipped: 0,
  filesRead: 0,
  bytesRead: 0,
};

/** At most this many errors are kept per import (the counts stay exact). */
export const MAX_IMPORT_ERRORS = 1_000;
