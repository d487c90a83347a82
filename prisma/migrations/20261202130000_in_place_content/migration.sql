-- In-place import roots (contract 6.4, `IMPORT_ROOTS=models=/path:in-place`): a content may have no blob in the store,
-- its bytes being a file of the server that the service only reads. `in_place` says so on the content row (read by
-- every lookup at no extra cost); `content_location` says where the file is and what it was when it was hashed, so a
-- read can tell that it changed. Storing the same bytes from an upload clears `in_place` and deletes the location.
ALTER TABLE "content" ADD COLUMN "in_place" BOOLEAN NOT NULL DEFAULT false;

CREATE TABLE "content_location" (
    "blake3" CHAR(64) NOT NULL,
    "root" TEXT NOT NULL,
    "rel_path" TEXT NOT NULL,
    "size" BIGINT NOT NULL,
    "mtime_ns" BIGINT NOT NULL,
    "inode" TEXT NOT NULL,
    "checked_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "content_location_pkey" PRIMARY KEY ("blake3")
);
CREATE INDEX "content_location_root_rel_path_idx" ON "content_location"("root", "rel_path");
ALTER TABLE "content_location" ADD CONSTRAINT "content_location_blake3_fkey" FOREIGN KEY ("blake3") REFERENCES "content"("blake3") ON DELETE CASCADE ON UPDATE CASCADE;
