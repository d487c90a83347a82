-- The listing's page statements (src/domain/assets/asset.repository.ts): written by npm run sql:snapshots

-- first page, no filter (owner)
--   $1 = "owner"
--   $2 = []
--   $3 = "owner"
--   $4 = "owner"
--   $5 = 21
--   $6 = 0
SELECT s.total AS "ownerTotal", s.version AS "ownerVersion", s.rows_version AS "rowsVersion", s.counts AS "tagCounts",
      p.*
    FROM (SELECT coalesce(o.asset_count, 0) AS total, coalesce(o.version, 0) AS version, coalesce(o.rows_version, 0) AS rows_version,
      ARRAY(SELECT coalesce((SELECT c.count FROM asset_tag_count c WHERE c.owner_id = $1 AND c.tag = t.tag), 0)
            FROM unnest($2::text[]) WITH ORDINALITY AS t(tag, i) ORDER BY t.i) AS counts
    FROM (SELECT 1) AS one LEFT JOIN asset_owner_stats o ON o.owner_id = $3) AS s LEFT JOIN LATERAL (
      SELECT id::text AS "id", name, content_hash AS "contentHash", size, mime_type AS "mimeType", tags,
  user_metadata AS "userMetadata", preview_id::text AS "previewId", preview_removed AS "previewRemoved",
  prompt_id::text AS "promptId", is_immutable AS "isImmutable", created_at AS "createdAt", updated_at AS "updatedAt",
  last_access_time AS "lastAccessTime", has_thumbnail AS "hasThumbnail", metadata FROM asset WHERE owner_id = $4
      ORDER BY created_at DESC, asset.id DESC LIMIT (SELECT $5::bigint) OFFSET (SELECT $6::bigint)) AS p ON true;

-- page after a cursor, no filter (owner)
--   $1 = "owner"
--   $2 = []
--   $3 = "owner"
--   $4 = "owner"
--   $5 = "2026-11-27T00:00:00.000Z"
--   $6 = "00000000-0000-4000-8000-000000000001"
--   $7 = 21
--   $8 = 0
SELECT s.total AS "ownerTotal", s.version AS "ownerVersion", s.rows_version AS "rowsVersion", s.counts AS "tagCounts",
      p.*
    FROM (SELECT coalesce(o.asset_count, 0) AS total, coalesce(o.version, 0) AS version, coalesce(o.rows_version, 0) AS rows_version,
      ARRAY(SELECT coalesce((SELECT c.count FROM asset_tag_count c WHERE c.owner_id = $1 AND c.tag = t.tag), 0)
            FROM unnest($2::text[]) WITH ORDINALITY AS t(tag, i) ORDER BY t.i) AS counts
    FROM (SELECT 1) AS one LEFT JOIN asset_owner_stats o ON o.owner_id = $3) AS s LEFT JOIN LATERAL (
      SELECT id::text AS "id", name, content_hash AS "contentHash", size, mime_type AS "mimeType", tags,
  user_metadata AS "userMetadata", preview_id::text AS "previewId", preview_removed AS "previewRemoved",
  prompt_id::text AS "promptId", is_immutable AS "isImmutable", created_at AS "createdAt", updated_at AS "updatedAt",
  last_access_time AS "lastAccessTime", has_thumbnail AS "hasThumbnail", metadata FROM asset WHERE owner_id = $4 AND (created_at, asset.id) < ($5::timestamptz, $6::uuid)
      ORDER BY created_at DESC, asset.id DESC LIMIT (SELECT $7::bigint) OFFSET (SELECT $8::bigint)) AS p ON true;

-- include tags, planned per request (planned)
--   $1 = "owner"
--   $2 = ["models","loras"]
--   $3 = "owner"
--   $4 = "owner"
--   $5 = ["models","loras"]
--   $6 = 21
--   $7 = 0
SELECT s.total AS "ownerTotal", s.version AS "ownerVersion", s.rows_version AS "rowsVersion", s.counts AS "tagCounts",
      s.common AS "commonTags", p.*
    FROM (SELECT s0.*, (SELECT min(x) > 0 AND sum(ln(greatest(x, 1)::float8 / greatest(s0.total, 1))) >= ln(0.1)
        FROM unnest(s0.counts) AS x) AS common FROM (SELECT coalesce(o.asset_count, 0) AS total, coalesce(o.version, 0) AS version, coalesce(o.rows_version, 0) AS rows_version,
      ARRAY(SELECT coalesce((SELECT c.count FROM asset_tag_count c WHERE c.owner_id = $1 AND c.tag = t.tag), 0)
            FROM unnest($2::text[]) WITH ORDINALITY AS t(tag, i) ORDER BY t.i) AS counts
    FROM (SELECT 1) AS one LEFT JOIN asset_owner_stats o ON o.owner_id = $3) AS s0 OFFSET 0) AS s LEFT JOIN LATERAL (
      SELECT id::text AS "id", name, content_hash AS "contentHash", size, mime_type AS "mimeType", tags,
  user_metadata AS "userMetadata", preview_id::text AS "previewId", preview_removed AS "previewRemoved",
  prompt_id::text AS "promptId", is_immutable AS "isImmutable", created_at AS "createdAt", updated_at AS "updatedAt",
  last_access_time AS "lastAccessTime", has_thumbnail AS "hasThumbnail", metadata FROM asset WHERE owner_id = $4 AND tags @> $5::text[]
      ORDER BY created_at DESC, asset.id DESC LIMIT $6 OFFSET $7) AS p ON true;

-- include tags that were common, after a cursor (commonTags)
--   $1 = "owner"
--   $2 = ["models","loras"]
--   $3 = "owner"
--   $4 = "owner"
--   $5 = ["models","loras"]
--   $6 = "2026-11-27T00:00:00.000Z"
--   $7 = "00000000-0000-4000-8000-000000000001"
--   $8 = 21
--   $9 = 0
SELECT s.total AS "ownerTotal", s.version AS "ownerVersion", s.rows_version AS "rowsVersion", s.counts AS "tagCounts",
      s.common AS "commonTags", p.*
    FROM (SELECT s0.*, (SELECT min(x) > 0 AND sum(ln(greatest(x, 1)::float8 / greatest(s0.total, 1))) >= ln(0.1)
        FROM unnest(s0.counts) AS x) AS common FROM (SELECT coalesce(o.asset_count, 0) AS total, coalesce(o.version, 0) AS version, coalesce(o.rows_version, 0) AS rows_version,
      ARRAY(SELECT coalesce((SELECT c.count FROM asset_tag_count c WHERE c.owner_id = $1 AND c.tag = t.tag), 0)
            FROM unnest((SELECT $2::text[])) WITH ORDINALITY AS t(tag, i) ORDER BY t.i) AS counts
    FROM (SELECT 1) AS one LEFT JOIN asset_owner_stats o ON o.owner_id = $3) AS s0 OFFSET 0) AS s LEFT JOIN LATERAL (
      SELECT id::text AS "id", name, content_hash AS "contentHash", size, mime_type AS "mimeType", tags,
  user_metadata AS "userMetadata", preview_id::text AS "previewId", preview_removed AS "previewRemoved",
  prompt_id::text AS "promptId", is_immutable AS "isImmutable", created_at AS "createdAt", updated_at AS "updatedAt",
  last_access_time AS "lastAccessTime", has_thumbnail AS "hasThumbnail", metadata FROM asset WHERE s.common AND owner_id = $4 AND coalesce(tags, '{}') @> (SELECT $5::text[]) AND (created_at, asset.id) < ($6::timestamptz, $7::uuid)
      ORDER BY created_at DESC, asset.id DESC LIMIT (SELECT $8::bigint) OFFSET (SELECT $9::bigint)) AS p ON true;

-- other filters, by name ascending (planned)
--   $1 = "owner"
--   $2 = ["a","b","output"]
--   $3 = "owner"
--   $4 = "owner"
--   $5 = ["a","b"]
--   $6 = ["output"]
--   $7 = "%sd%"
--   $8 = "{\"k\":1}"
--   $9 = "{\"k\":[1]}"
--   $10 = 21
--   $11 = 0
SELECT s.total AS "ownerTotal", s.version AS "ownerVersion", s.rows_version AS "rowsVersion", s.counts AS "tagCounts",
      p.*
    FROM (SELECT coalesce(o.asset_count, 0) AS total, coalesce(o.version, 0) AS version, coalesce(o.rows_version, 0) AS rows_version,
      ARRAY(SELECT coalesce((SELECT c.count FROM asset_tag_count c WHERE c.owner_id = $1 AND c.tag = t.tag), 0)
            FROM unnest($2::text[]) WITH ORDINALITY AS t(tag, i) ORDER BY t.i) AS counts
    FROM (SELECT 1) AS one LEFT JOIN asset_owner_stats o ON o.owner_id = $3) AS s LEFT JOIN LATERAL (
      SELECT id::text AS "id", name, content_hash AS "contentHash", size, mime_type AS "mimeType", tags,
  user_metadata AS "userMetadata", preview_id::text AS "previewId", preview_removed AS "previewRemoved",
  prompt_id::text AS "promptId", is_immutable AS "isImmutable", created_at AS "createdAt", updated_at AS "updatedAt",
  last_access_time AS "lastAccessTime", has_thumbnail AS "hasThumbnail", metadata FROM asset WHERE owner_id = $4 AND tags && $5::text[] AND NOT (tags && $6::text[]) AND name ILIKE $7 AND (user_metadata @> $8::jsonb OR user_metadata @> $9::jsonb)
      ORDER BY name ASC, asset.id ASC LIMIT $10 OFFSET $11) AS p ON true;
