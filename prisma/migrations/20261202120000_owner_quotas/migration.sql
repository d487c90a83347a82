-- Quotas per owner (contract 8, issue 42). `total_bytes` is the sum of `size` over the owner's assets, kept by the
-- same statement-level triggers as `asset_count` (in the transaction of the asset change), so a usage read or a
-- quota check is one primary-key read, never a scan. Content shared with other owners counts for each owner; one
-- owner has at most one asset per content, so a duplicate upload adds nothing.
ALTER TABLE "asset_owner_stats" ADD COLUMN "total_bytes" BIGINT NOT NULL DEFAULT 0;

-- The limits an admin set (PUT /api/owners/{owner}/quota); no row, or a null column: no limit. A table of its own,
-- not columns of asset_owner_stats: every create of an owner with a row takes it FOR UPDATE first (the final check,
-- serialised per owner, in the transaction of the asset insert), and deletes and edits, which take the stats row
-- last (migration 20261122210000), must not queue behind a create that holds a content lock.
CREATE TABLE "owner_quota" (
    "owner_id" TEXT NOT NULL,
    "max_bytes" BIGINT,
    "max_assets" BIGINT,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "owner_quota_pkey" PRIMARY KEY ("owner_id")
);

-- As in migration 20261122210000, plus `total_bytes`: added on insert, removed on delete, and moved on an update
-- that changes a row's size or owner.
CREATE OR REPLACE FUNCTION asset_owner_stats_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO asset_owner_stats AS s (owner_id, asset_count, version, rows_version, total_bytes)
      SELECT n.owner_id, count(*), 1, 1, sum(n.size) FROM new_rows n GROUP BY 1 ORDER BY 1
      ON CONFLICT (owner_id) DO UPDATE SET asset_count = s.asset_count + EXCLUDED.asset_count, version = s.version + 1,
        rows_version = s.rows_version + 1, total_bytes = s.total_bytes + EXCLUDED.total_bytes;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO asset_owner_stats AS s (owner_id, asset_count, version, rows_version, total_bytes)
      SELECT o.owner_id, -count(*), 1, 1, -sum(o.size) FROM old_rows o GROUP BY 1 ORDER BY 1
      ON CONFLICT (owner_id) DO UPDATE SET asset_count = s.asset_count + EXCLUDED.asset_count, version = s.version + 1,
        rows_version = s.rows_version + 1, total_bytes = s.total_bytes + EXCLUDED.total_bytes;
  ELSE
    -- `m`: 1 when a matched column changed. A row moving to another owner leaves one (-1) and joins the other (+1).
    WITH changed AS (
      SELECT o.owner_id AS old_owner, n.owner_id AS new_owner, o.size AS old_size, n.size AS new_size,
        (o.tags IS DISTINCT FROM n.tags OR o.name <> n.name OR o.user_metadata <> n.user_metadata
          OR o.content_hash <> n.content_hash OR o.created_at <> n.created_at OR o.owner_id <> n.owner_id)::int AS m
      FROM old_rows o JOIN new_rows n ON n.id = o.id
    )
    INSERT INTO asset_owner_stats AS s (owner_id, asset_count, version, rows_version, total_bytes)
      SELECT owner_id, sum(d), max(m), 1, sum(b) FROM (
        SELECT old_owner AS owner_id, -1 AS d, m, -old_size AS b FROM changed
        UNION ALL
        SELECT new_owner, 1, m, new_size FROM changed
      ) AS changes GROUP BY 1 ORDER BY 1
      ON CONFLICT (owner_id) DO UPDATE SET asset_count = s.asset_count + EXCLUDED.asset_count, version = s.version + EXCLUDED.version,
        rows_version = s.rows_version + 1, total_bytes = s.total_bytes + EXCLUDED.total_bytes;
  END IF;
  RETURN NULL;
END;
$$;

-- Backfill. Every owner with assets has a stats row (migration 20261122160000 and the triggers since).
UPDATE asset_owner_stats s SET total_bytes = t.bytes
  FROM (SELECT owner_id, sum(size) AS bytes FROM asset GROUP BY owner_id) t
  WHERE t.owner_id = s.owner_id;
