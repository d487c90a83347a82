-- Resumable uploads (tus, contract 6.1), bulk export archives (contract 4.3) and server secrets (the HMAC key of the
-- disk store's signed export URLs).

-- AlterTable: what an export_assets task was asked for (download tasks keep their columns).
ALTER TABLE "task" ADD COLUMN "export_request" JSONB;

-- CreateTable
CREATE TABLE "upload" (
    "id" UUID NOT NULL,
    "owner_id" TEXT NOT NULL,
    "length" BIGINT NOT NULL,
    "offset" BIGINT NOT NULL DEFAULT 0,
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "part_key" TEXT NOT NULL,
    "asset_id" UUID,
    "asset_created" BOOLEAN,
    "lock_token" UUID,
    "lock_expires_at" TIMESTAMPTZ(3),
    "release_requested" BOOLEAN NOT NULL DEFAULT false,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "upload_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "export_archive" (
    "name" TEXT NOT NULL,
    "owner_id" TEXT NOT NULL,
    "task_id" UUID NOT NULL,
    "blob_hash" CHAR(64),
    "size" BIGINT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "export_archive_pkey" PRIMARY KEY ("name")
);

-- CreateTable
CREATE TABLE "server_secret" (
    "name" TEXT NOT NULL,
    "value" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "server_secret_pkey" PRIMARY KEY ("name")
);

-- CreateIndex
CREATE INDEX "upload_expires_at_idx" ON "upload"("expires_at");

-- CreateIndex
CREATE INDEX "export_archive_expires_at_idx" ON "export_archive"("expires_at");

-- CreateIndex
CREATE UNIQUE INDEX "export_archive_task_id_key" ON "export_archive"("task_id");
