-- Server-side import of IMPORT_ROOTS (contract 6.4). One run per seed_assets task; `active` is true while it runs and
-- NULL after, so the unique index admits one running import per deployment, whichever instance starts it.
CREATE TABLE "import_run" (
    "task_id" UUID NOT NULL,
    "owner_id" TEXT NOT NULL,
    "roots" TEXT[],
    "active" BOOLEAN,
    "cancel_requested" BOOLEAN NOT NULL DEFAULT false,
    "progress" JSONB NOT NULL DEFAULT '{}',
    "errors" JSONB NOT NULL DEFAULT '[]',
    "heartbeat_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "worker" TEXT,
    CONSTRAINT "import_run_pkey" PRIMARY KEY ("task_id")
);
CREATE UNIQUE INDEX "import_run_active_key" ON "import_run"("active");
ALTER TABLE "import_run" ADD CONSTRAINT "import_run_task_id_fkey" FOREIGN KEY ("task_id") REFERENCES "task"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- What each imported file was when it was stored (size, mtime, inode): a later import reads only files that moved.
CREATE TABLE "import_file" (
    "owner_id" TEXT NOT NULL,
    "path" TEXT NOT NULL,
    "size" BIGINT NOT NULL,
    "mtime_ns" BIGINT NOT NULL,
    "inode" TEXT NOT NULL,
    "content_hash" CHAR(64) NOT NULL,
    "imported_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "import_file_pkey" PRIMARY KEY ("owner_id","path")
);
