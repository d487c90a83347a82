/** An owner's limits (contract 8); an absent one is no limit. */
export interface QuotaLimits {
  maxBytes?: number;
  maxAssets?: number;
}

/** GET /api/usage, GraphQL `usage`: what the owner's assets use now, and its limits. */
export interface Usage extends QuotaLimits {
  owner: string;
  bytes: number;
  assets: number;
}

/** A change of limits: a number sets one, `null` clears it, an absent one stays as it is. */
export interface QuotaChange {
  maxBytes?: number | null;
  maxAssets?: number | null;
}

/** What a create adds to its owner's use. */
export interface QuotaRequest {
  bytes: number;
  assets: number;
}
