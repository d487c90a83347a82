-- Scopes, expiry and last use of API keys (contract 8). Additive: instances of the previous release keep reading
-- `is_admin`, which the new code still writes. Keys made before scopes existed keep what they could do: read and
-- write, and admin where they were admin keys.
ALTER TABLE "api_key" ADD COLUMN "scopes" TEXT[] DEFAULT ARRAY['read', 'write']::TEXT[];
ALTER TABLE "api_key" ADD COLUMN "expires_at" TIMESTAMPTZ(3);
ALTER TABLE "api_key" ADD COLUMN "last_used_at" TIMESTAMPTZ(3);
UPDATE "api_key" SET "scopes" = CASE WHEN "is_admin" THEN ARRAY['read', 'write', 'admin'] ELSE ARRAY['read', 'write'] END;

-- The audit trail: key creation and revocation, admin actions on other owners' data. Read newest first, by cursor.
CREATE TABLE "audit_event" (
    "id" UUID NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "actor_key_id" TEXT NOT NULL,
    "actor_owner" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "target_owner" TEXT,
    "target_id" TEXT,
    "details" JSONB NOT NULL DEFAULT '{}',

    CONSTRAINT "audit_event_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "audit_event_at_id_idx" ON "audit_event"("at" DESC, "id" DESC);
