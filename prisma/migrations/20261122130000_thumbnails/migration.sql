-- Thumbnails (contract 3, `thumbnail_url`): one per content, made by a background job.

-- CreateTable
CREATE TABLE "thumbnail" (
    "content_hash" CHAR(64) NOT NULL,
    "status" TEXT NOT NULL,
    "width" INTEGER NOT NULL DEFAULT 0,
    "height" INTEGER NOT NULL DEFAULT 0,
    "size" INTEGER NOT NULL DEFAULT 0,
    "error" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "thumbnail_pkey" PRIMARY KEY ("content_hash")
);

-- AddForeignKey
ALTER TABLE "thumbnail" ADD CONSTRAINT "thumbnail_content_hash_fkey" FOREIGN KEY ("content_hash") REFERENCES "content"("blake3") ON DELETE CASCADE ON UPDATE CASCADE;

-- AlterTable
ALTER TABLE "asset" ADD COLUMN "has_thumbnail" BOOLEAN NOT NULL DEFAULT false;

-- An asset read stays one row: `has_thumbnail` copies whether its content has a ready thumbnail. The thumbnail job
-- sets it on every asset of the content in the transaction that records the thumbnail, holding the content's
-- advisory lock; every path that inserts an asset holds the same lock, so this trigger sees any thumbnail committed
-- before the insert and the job's UPDATE sees any asset committed before it.
CREATE FUNCTION asset_has_thumbnail() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.has_thumbnail := EXISTS (SELECT 1 FROM thumbnail t WHERE t.content_hash = NEW.content_hash AND t.status = 'ready');
  RETURN NEW;
END
$$;

CREATE TRIGGER asset_has_thumbnail BEFORE INSERT ON "asset" FOR EACH ROW EXECUTE FUNCTION asset_has_thumbnail();
