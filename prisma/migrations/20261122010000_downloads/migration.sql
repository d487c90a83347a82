-- Downloads and tasks: task (an owner's background task), download_transfer (one shared transfer per source URL),
-- source_content (source URL -> content, for answering repeated downloads at once).

-- CreateTable
CREATE TABLE "task" (
    "id" UUID NOT NULL,
    "owner_id" TEXT NOT NULL,
    "idempotency_key" TEXT,
    "task_name" TEXT NOT NULL DEFAULT 'download_file',
    "source_url" TEXT NOT NULL,
    "tags" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "user_metadata" JSONB NOT NULL DEFAULT '{}',
    "preview_id" UUID,
    "status" TEXT NOT NULL DEFAULT 'created',
    "transfer_id" UUID,
    "bytes_downloaded" BIGINT NOT NULL DEFAULT 0,
    "bytes_total" BIGINT,
    "result" JSONB,
    "error_message" TEXT,
    "create_time" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "update_time" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(3),
    "completed_at" TIMESTAMPTZ(3),

    CONSTRAINT "task_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "download_transfer" (
    "id" UUID NOT NULL,
    "source_url" TEXT NOT NULL,
    "provider" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'queued',
    "file_name" TEXT,
    "expected_sha256" CHAR(64),
    "expected_blake3" CHAR(64),
    "bytes_downloaded" BIGINT NOT NULL DEFAULT 0,
    "bytes_total" BIGINT,
    "validator" TEXT,
    "content_hash" CHAR(64),
    "error_message" TEXT,
    "lease_token" UUID,
    "lease_expires_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(3),
    "completed_at" TIMESTAMPTZ(3),

    CONSTRAINT "download_transfer_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "source_content" (
    "source_url" TEXT NOT NULL,
    "content_hash" CHAR(64) NOT NULL,
    "file_name" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "source_content_pkey" PRIMARY KEY ("source_url")
);

-- CreateIndex
CREATE UNIQUE INDEX "task_owner_id_idempotency_key_key" ON "task"("owner_id", "idempotency_key");

-- CreateIndex
CREATE INDEX "task_owner_id_create_time_id_idx" ON "task"("owner_id", "create_time" DESC, "id");

-- CreateIndex
CREATE INDEX "task_owner_id_source_url_status_idx" ON "task"("owner_id", "source_url", "status");

-- CreateIndex
CREATE INDEX "task_transfer_id_status_idx" ON "task"("transfer_id", "status");

-- CreateIndex
CREATE INDEX "download_transfer_source_url_status_idx" ON "download_transfer"("source_url", "status");

-- CreateIndex
CREATE INDEX "download_transfer_status_lease_expires_at_idx" ON "download_transfer"("status", "lease_expires_at");

-- CreateIndex
CREATE INDEX "source_content_content_hash_idx" ON "source_content"("content_hash");

-- AddForeignKey
ALTER TABLE "task" ADD CONSTRAINT "task_transfer_id_fkey" FOREIGN KEY ("transfer_id") REFERENCES "download_transfer"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "source_content" ADD CONSTRAINT "source_content_content_hash_fkey" FOREIGN KEY ("content_hash") REFERENCES "content"("blake3") ON DELETE CASCADE ON UPDATE CASCADE;
