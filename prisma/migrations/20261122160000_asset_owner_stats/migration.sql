-- Listing at a heavy user's scale (issue 12, contract 3.6): per-owner asset totals and a change counter, kept by
-- statement-level triggers in the same transaction as the asset change (like asset_tag_count).
--
-- `asset_count`: an unfiltered GET /api/assets answers its `total` from here instead of counting up to 10,001 rows,
-- and tag filters bound their total with it and the tag counts (AssetRepository.list).
-- `version`: bumped by every change of the owner's assets that can change a filter's matches (insert, delete, an
-- update of tags, name, user_metadata, content_hash, created_at or owner_id; not last_access_time, has_thumbnail,
-- metadata). Counts computed from the rows are cached per instance under the version they were read with, so a
-- cached value is never served once another instance has changed the owner's assets. A row is never deleted (an
-- owner's version must never go back to an earlier value).
CREATE TABLE "asset_owner_stats" (
    "owner_id" TEXT NOT NULL,
    "asset_count" BIGINT NOT NULL DEFAULT 0,
    "version" BIGINT NOT NULL DEFAULT 0,

    CONSTRAINT "asset_owner_stats_pkey" PRIMARY KEY ("owner_id")
);

-- Triggers of one event fire in name order: asset_owner_stats_* before asset_tag_count_*, so a change locks the
-- owner's row first and then its tag count rows; the owner row orders every writer of one owner (no deadlock).
CREATE FUNCTION asset_owner_stats_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO asset_owner_stats AS s (owner_id, asset_count, version)
      SELECT n.owner_id, count(*), 1 FROM new_rows n GROUP BY 1 ORDER BY 1
      ON CONFLICT (owner_id) DO UPDATE SET asset_count = s.asset_count + EXCLUDED.asset_count, version = s.version + 1;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO asset_owner_stats AS s (owner_id, asset_count, version)
      SELECT o.owner_id, -count(*), 1 FROM old_rows o GROUP BY 1 ORDER BY 1
      ON CONFLICT (owner_id) DO UPDATE SET asset_count = s.asset_count + EXCLUDED.asset_count, version = s.version + 1;
  ELSE
    INSERT INTO asset_owner_stats AS s (owner_id, asset_count, version)
      SELECT owner_id, sum(d), 1 FROM (
        SELECT o.owner_id, -1 AS d FROM old_rows o JOIN new_rows n ON n.id = o.id
          WHERE o.tags IS DISTINCT FROM n.tags OR o.name <> n.name OR o.user_metadata <> n.user_metadata
             OR o.content_hash <> n.content_hash OR o.created_at <> n.created_at OR o.owner_id <> n.owner_id
        UNION ALL
        SELECT n.owner_id, 1 AS d FROM old_rows o JOIN new_rows n ON n.id = o.id
          WHERE o.tags IS DISTINCT FROM n.tags OR o.name <> n.name OR o.user_metadata <> n.user_metadata
             OR o.content_hash <> n.content_hash OR o.created_at <> n.created_at OR o.owner_id <> n.owner_id
      ) AS changes GROUP BY 1 ORDER BY 1
      ON CONFLICT (owner_id) DO UPDATE SET asset_count = s.asset_count + EXCLUDED.asset_count, version = s.version + 1;
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER asset_owner_stats_ins AFTER INSERT ON "asset" REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION asset_owner_stats_apply();
CREATE TRIGGER asset_owner_stats_del AFTER DELETE ON "asset" REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION asset_owner_stats_apply();
CREATE TRIGGER asset_owner_stats_upd AFTER UPDATE ON "asset" REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION asset_owner_stats_apply();

INSERT INTO asset_owner_stats (owner_id, asset_count, version) SELECT owner_id, count(*), 1 FROM asset GROUP BY owner_id;
