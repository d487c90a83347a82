-- Deleted assets are announced on the channel `asset_gone` (payload: their ids, comma-separated, at most 200 per
-- notification, well under PostgreSQL's 8000-byte limit), delivered to every listening instance when the deleting
-- transaction commits. Each instance keeps the thumbnail route's asset → content lookups it has made
-- (src/domain/thumbnails/known-thumbnails.ts) and forgets a deleted asset's on this notification; an instance whose
-- listening connection is down keeps none.
CREATE OR REPLACE FUNCTION asset_gone_notify() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE ids text;
BEGIN
  FOR ids IN
    SELECT string_agg(g.id::text, ',') FROM (SELECT id, (row_number() OVER () - 1) / 200 AS chunk FROM gone_rows) AS g
    GROUP BY g.chunk
  LOOP
    PERFORM pg_notify('asset_gone', ids);
  END LOOP;
  RETURN NULL;
END $$;

CREATE TRIGGER asset_gone_notify AFTER DELETE ON "asset" REFERENCING OLD TABLE AS gone_rows
  FOR EACH STATEMENT EXECUTE FUNCTION asset_gone_notify();
