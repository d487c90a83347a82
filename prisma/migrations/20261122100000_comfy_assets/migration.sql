-- Issue 12 (contract 3, 3.6): derived metadata, maintained tag counts.

-- What the service derived from the bytes at ingest (format, image size, safetensors header...), once per content;
-- NULL until derived (content stored before this migration: the metadata backfill job fills it).
ALTER TABLE "content" ADD COLUMN "metadata" JSONB;

-- The asset's `metadata`: the content's derived fields plus this asset's file name and download source. NULL until
-- derived (backfill job).
ALTER TABLE "asset" ADD COLUMN "metadata" JSONB;

-- GET /api/tags counts per owner, kept by the trigger below in the same transaction as the asset change.
CREATE TABLE "asset_tag_count" (
    "owner_id" TEXT NOT NULL,
    "tag" TEXT NOT NULL,
    "count" INTEGER NOT NULL DEFAULT 0,

    CONSTRAINT "asset_tag_count_pkey" PRIMARY KEY ("owner_id","tag")
);

-- CreateIndex
CREATE INDEX "asset_tag_count_owner_id_count_tag_idx" ON "asset_tag_count"("owner_id", "count" DESC, "tag");

-- Statement-level triggers with transition tables: one upsert per (owner, tag) per statement, so a bulk insert of a
-- million assets costs one aggregate, not a million updates of the same counter row (each of which would leave a
-- dead version the next one has to step over). Rows are locked in (owner, tag) order: no deadlock between two edits.
CREATE FUNCTION asset_tag_count_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO asset_tag_count (owner_id, tag, count)
      SELECT n.owner_id, t, count(*)::int FROM new_rows n, unnest(n.tags) AS t GROUP BY 1, 2 ORDER BY 1, 2
      ON CONFLICT (owner_id, tag) DO UPDATE SET count = asset_tag_count.count + EXCLUDED.count;
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO asset_tag_count (owner_id, tag, count)
      SELECT o.owner_id, t, -count(*)::int FROM old_rows o, unnest(o.tags) AS t GROUP BY 1, 2 ORDER BY 1, 2
      ON CONFLICT (owner_id, tag) DO UPDATE SET count = asset_tag_count.count + EXCLUDED.count;
  ELSE
    INSERT INTO asset_tag_count (owner_id, tag, count)
      SELECT owner_id, t, sum(d)::int FROM (
        SELECT o.owner_id, t, -1 AS d FROM old_rows o JOIN new_rows n ON n.id = o.id, unnest(o.tags) AS t
          WHERE o.tags IS DISTINCT FROM n.tags OR o.owner_id <> n.owner_id
        UNION ALL
        SELECT n.owner_id, t, 1 AS d FROM old_rows o JOIN new_rows n ON n.id = o.id, unnest(n.tags) AS t
          WHERE o.tags IS DISTINCT FROM n.tags OR o.owner_id <> n.owner_id
      ) AS changes GROUP BY 1, 2 HAVING sum(d) <> 0 ORDER BY 1, 2
      ON CONFLICT (owner_id, tag) DO UPDATE SET count = asset_tag_count.count + EXCLUDED.count;
  END IF;
  IF TG_OP <> 'INSERT' THEN
    DELETE FROM asset_tag_count c WHERE c.count <= 0 AND c.owner_id IN (SELECT DISTINCT owner_id FROM old_rows);
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER asset_tag_count_ins AFTER INSERT ON "asset" REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION asset_tag_count_apply();
CREATE TRIGGER asset_tag_count_del AFTER DELETE ON "asset" REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION asset_tag_count_apply();
CREATE TRIGGER asset_tag_count_upd AFTER UPDATE ON "asset" REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION asset_tag_count_apply();

INSERT INTO asset_tag_count (owner_id, tag, count)
  SELECT owner_id, t, count(*)::int FROM asset, unnest(tags) AS t GROUP BY owner_id, t;

-- Cancelled tasks were stored as failed with this message; they have their own status now (contract 4.2).
UPDATE "task" SET "status" = 'cancelled' WHERE "status" = 'failed' AND "error_message" = 'cancelled by the user';
