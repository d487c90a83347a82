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

-- Tags are sorted before the counts are touched, so two transactions lock count rows in the same order (no deadlock).
CREATE FUNCTION asset_tag_count_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    UPDATE asset_tag_count c SET count = c.count - 1
      FROM (SELECT DISTINCT t FROM unnest(OLD.tags) AS t
            WHERE TG_OP = 'DELETE' OR OLD.owner_id <> NEW.owner_id OR NOT (t = ANY (NEW.tags)) ORDER BY t) d
      WHERE c.owner_id = OLD.owner_id AND c.tag = d.t;
    DELETE FROM asset_tag_count WHERE owner_id = OLD.owner_id AND count <= 0;
  END IF;
  IF TG_OP IN ('INSERT', 'UPDATE') THEN
    INSERT INTO asset_tag_count (owner_id, tag, count)
      SELECT NEW.owner_id, t, 1 FROM (SELECT DISTINCT t FROM unnest(NEW.tags) AS t
            WHERE TG_OP = 'INSERT' OR OLD.owner_id <> NEW.owner_id OR NOT (t = ANY (OLD.tags)) ORDER BY t) a
      ORDER BY t
      ON CONFLICT (owner_id, tag) DO UPDATE SET count = asset_tag_count.count + 1;
  END IF;
  RETURN NULL;
END;
$$;

CREATE TRIGGER asset_tag_count_ins AFTER INSERT ON "asset" FOR EACH ROW EXECUTE FUNCTION asset_tag_count_sync();
CREATE TRIGGER asset_tag_count_del AFTER DELETE ON "asset" FOR EACH ROW EXECUTE FUNCTION asset_tag_count_sync();
CREATE TRIGGER asset_tag_count_upd AFTER UPDATE OF tags, owner_id ON "asset" FOR EACH ROW
  WHEN (OLD.tags IS DISTINCT FROM NEW.tags OR OLD.owner_id IS DISTINCT FROM NEW.owner_id)
  EXECUTE FUNCTION asset_tag_count_sync();

INSERT INTO asset_tag_count (owner_id, tag, count)
  SELECT owner_id, t, count(*)::int FROM asset, unnest(tags) AS t GROUP BY owner_id, t;

-- Cancelled tasks were stored as failed with this message; they have their own status now (contract 4.2).
UPDATE "task" SET "status" = 'cancelled' WHERE "status" = 'failed' AND "error_message" = 'cancelled by the user';
