-- Issue 27 (contract 3.7). Previews: an asset whose nominated preview asset is deleted has no preview_url, where one
-- that never had a nomination shows its own image, video, audio or text content; the flag tells the two apart (set
-- when the preview asset is deleted, cleared when a preview_id is set again). A constant default: no table rewrite.
ALTER TABLE "asset" ADD COLUMN "preview_removed" BOOLEAN NOT NULL DEFAULT false;

-- GET /api/jobs/{job_id}/assets (and the export's job_ids): a job's assets of one owner in creation order.
CREATE INDEX "asset_owner_id_prompt_id_created_at_id_idx" ON "asset"("owner_id", "prompt_id", "created_at", "id");

-- Tags keep their case from this version on (contract 2). Nothing here lower-cases them (asset_tag_count's key and
-- the GIN index compare exactly), and tags stored lower-cased by earlier versions keep their spelling: no rewrite.
