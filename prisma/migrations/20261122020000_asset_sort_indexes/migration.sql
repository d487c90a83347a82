-- The list query orders by (<column> <dir>, id <dir>): both keys in the same direction. An index of
-- (owner_id, created_at DESC, id) matches neither direction in full, so PostgreSQL added an Incremental Sort over it;
-- all-ascending indexes serve both directions (forward or backward scan). See test/integration/query-plans.test.ts.

-- DropIndex
DROP INDEX "asset_owner_id_created_at_id_idx";

-- DropIndex
DROP INDEX "asset_owner_id_updated_at_id_idx";

-- CreateIndex
CREATE INDEX "asset_owner_id_created_at_id_idx" ON "asset"("owner_id", "created_at", "id");

-- CreateIndex
CREATE INDEX "asset_owner_id_updated_at_id_idx" ON "asset"("owner_id", "updated_at", "id");
