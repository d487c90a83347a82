import type { ExportRequest, NamingStrategy } from './task.types';

/**
 * An export request as the client sent it to POST /api/assets/export (snake_case): what the task's `payload`
 * shows and what the task row's `export_request` column holds.
 */
export interface ExportRequestWire {
  asset_ids?: string[];
  job_ids?: string[];
  job_asset_name_filters?: Record<string, string[]>;
  include_previews?: boolean;
  naming_strategy: NamingStrategy;
}

export function exportRequestToWire(r: ExportRequest): ExportRequestWire {
  return {
    ...(r.assetIds ? { asset_ids: r.assetIds } : {}),
    ...(r.jobIds ? { job_ids: r.jobIds } : {}),
    ...(r.jobAssetNameFilters ? { job_asset_name_filters: r.jobAssetNameFilters } : {}),
    ...(r.includePreviews !== undefined ? { include_previews: r.includePreviews } : {}),
    naming_strategy: r.namingStrategy,
  };
}

export function exportRequestFromWire(w: ExportRequestWire): ExportRequest {
  return {
    ...(w.asset_ids ? { assetIds: w.asset_ids } : {}),
    ...(w.job_ids ? { jobIds: w.job_ids } : {}),
    ...(w.job_asset_name_filters ? { jobAssetNameFilters: w.job_asset_name_filters } : {}),
    ...(w.include_previews !== undefined ? { includePreviews: w.include_previews } : {}),
    namingStrategy: w.naming_strategy,
  };
}

/**
 * What makes two export requests the same archive: the ids and each requested job's name filter as sets, whether
 * previews come along, and the naming. A filter of a job that is not requested selects nothing, so it is left out.
 */
export function sameExportKey(r: ExportRequest): string {
  const sorted = (xs: readonly string[] | undefined) => [...new Set(xs ?? [])].sort();
  const jobs = sorted(r.jobIds);
  const filters = jobs.flatMap((job) =>
    r.jobAssetNameFilters?.[job] ? [[job, sorted(r.jobAssetNameFilters[job])]] : [],
  );
  return JSON.stringify([sorted(r.assetIds), jobs, filters, r.includePreviews === true, r.namingStrategy]);
}
