-- Initial schema: content (deduplicated bytes), asset (an owner's named reference to content), api_key.

CREATE TABLE "content" (
    "blake3" CHAR(64) NOT NULL,
    "sha256" CHAR(64) NOT NULL,
    "size" BIGINT NOT NULL,
    "mime_type" TEXT NOT NULL,
    "first_name" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "orphaned_at" TIMESTAMPTZ(3),
    CONSTRAINT "content_pkey" PRIMARY KEY ("blake3")
);

CREATE UNIQUE INDEX "content_sha256_key" ON "content"("sha256");
CREATE INDEX "content_orphaned_at_idx" ON "content"("orphaned_at");

CREATE TABLE "asset" (
    "id" UUID NOT NULL,
    "owner_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "content_hash" CHAR(64) NOT NULL,
    "size" BIGINT NOT NULL,
    "mime_type" TEXT NOT NULL,
    "tags" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "user_metadata" JSONB NOT NULL DEFAULT '{}',
    "preview_id" UUID,
    "prompt_id" UUID,
    "is_immutable" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_access_time" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "asset_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "asset_owner_id_content_hash_key" ON "asset"("owner_id", "content_hash");
CREATE INDEX "asset_owner_id_created_at_id_idx" ON "asset"("owner_id", "created_at" DESC, "id");
CREATE INDEX "asset_owner_id_updated_at_id_idx" ON "asset"("owner_id", "updated_at" DESC, "id");
CREATE INDEX "asset_owner_id_name_id_idx" ON "asset"("owner_id", "name", "id");
CREATE INDEX "asset_owner_id_size_id_idx" ON "asset"("owner_id", "size", "id");
CREATE INDEX "asset_owner_id_last_access_time_id_idx" ON "asset"("owner_id", "last_access_time", "id");
CREATE INDEX "asset_content_hash_idx" ON "asset"("content_hash");
CREATE INDEX "asset_tags_idx" ON "asset" USING GIN ("tags");
CREATE INDEX "asset_user_metadata_idx" ON "asset" USING GIN ("user_metadata" jsonb_path_ops);

ALTER TABLE "asset" ADD CONSTRAINT "asset_content_hash_fkey" FOREIGN KEY ("content_hash") REFERENCES "content"("blake3") ON DELETE RESTRICT ON UPDATE CASCADE;

CREATE TABLE "api_key" (
    "id" UUID NOT NULL,
    "owner_id" TEXT NOT NULL,
    "key_hash" CHAR(64) NOT NULL,
    "is_admin" BOOLEAN NOT NULL DEFAULT false,
    "label" TEXT NOT NULL DEFAULT '',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revoked_at" TIMESTAMPTZ(3),
    CONSTRAINT "api_key_pkey" PRIMARY KEY ("id")
);

CREATE UNIQUE INDEX "api_key_key_hash_key" ON "api_key"("key_hash");
CREATE INDEX "api_key_owner_id_idx" ON "api_key"("owner_id");
