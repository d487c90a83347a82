-- A second per-owner change counter (issue 12's listing figure): `rows_version` moves with every change of any of the
-- owner's asset rows, whatever the column (last_access_time, has_thumbnail, metadata, preview_id, mime_type ... too),
-- where `version` moves only with changes that can change a filter's matches. A listing page (its rows, their
-- fields, its total) is a function of the owner's rows, so an instance may keep a page it read under the
-- `rows_version` read in the same statement and answer it again while the database still holds that value
-- (GET /api/assets, AssetRepository.list): any instance's change of those rows moves it in its own transaction.
-- Like `version`, it never goes back (the row is never deleted).
ALTER TABLE "asset_owner_stats" ADD COLUMN "rows_version" BIGINT NOT NULL DEFAULT 0;

-- As before, plus: every UPDATE statement moves `rows_version` of each owner whose rows it changed, and `version`
-- only for those whose rows changed in a matched column. Every writer now takes the owner's row last, after the
-- asset rows it changes (AssetService.delete clears previews before deleting, so no transaction waits on an asset
-- row while holding its owner's).
CREATE OR REPLACE FUNCTION asset_owner_stats_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO asset_owner_stats AS s (owner_id, asset_count, version, rows_version)
      SELECT n.owner_id, count(*), 1, 1 FROM new_rows n GROUP BY 1 ORDER BY 1
      ON CONFLICT (owner_id) DO UPDATE SET asset_count = s.asset_count + EXCLUDED.asset_count, version = s.version + 1,
        rows_version = s.rows_version + 1;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO asset_owner_stats AS s (owner_id, asset_count, version, rows_version)
      SELECT o.owner_id, -count(*), 1, 1 FROM old_rows o GROUP BY 1 ORDER BY 1
      ON CONFLICT (owner_id) DO UPDATE SET asset_count = s.asset_count + EXCLUDED.asset_count, version = s.version + 1,
        rows_version = s.rows_version + 1;
  ELSE
    -- `m`: 1 when a matched column changed. A row moving to another owner leaves one (-1) and joins the other (+1).
    WITH changed AS (
      SELECT o.owner_id AS old_owner, n.owner_id AS new_owner,
        (o.tags IS DISTINCT FROM n.tags OR o.name <> n.name OR o.user_metadata <> n.user_metadata
          OR o.content_hash <> n.content_hash OR o.created_at <> n.created_at OR o.owner_id <> n.owner_id)::int AS m
      FROM old_rows o JOIN new_rows n ON n.id = o.id
    )
    INSERT INTO asset_owner_stats AS s (owner_id, asset_count, version, rows_version)
      SELECT owner_id, sum(d), max(m), 1 FROM (
        SELECT old_owner AS owner_id, -1 AS d, m FROM changed
        UNION ALL
        SELECT new_owner, 1, m FROM changed
      ) AS changes GROUP BY 1 ORDER BY 1
      ON CONFLICT (owner_id) DO UPDATE SET asset_count = s.asset_count + EXCLUDED.asset_count, version = s.version + EXCLUDED.version,
        rows_version = s.rows_version + 1;
  END IF;
  RETURN NULL;
END;
$$;
