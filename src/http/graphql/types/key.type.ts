import { Field, ID, ObjectType } from 'type-graphql';
import type { AuditEvent, AuditPage } from '../../../domain/audit/audit.types';
import type { ApiKeyInfo } from '../../../domain/auth/api-key.service';
import { JSONScalar } from '../scalars';
import { ApiKeyScopeEnum } from './enums';

@ObjectType('Viewer', {
  simpleResolvers: true,
  description: "Who the request's key is: its owner and scopes (what a client may show, e.g. the keys page for admin).",
})
export class ViewerType {
  @Field()
  owner!: string;

  @Field(() => [ApiKeyScopeEnum])
  scopes!: ApiKeyScopeEnum[];
}

@ObjectType('ApiKey', { simpleResolvers: true, description: 'A stored key (GET /api/keys); never its secret.' })
export class ApiKeyType {
  @Field(() => ID)
  id!: string;

  @Field()
  owner!: string;

  @Field()
  label!: string;

  @Field(() => [ApiKeyScopeEnum])
  scopes!: ApiKeyScopeEnum[];

  @Field()
  createdAt!: Date;

  @Field(() => Date, { nullable: true, description: 'To the minute.' })
  lastUsedAt?: Date;

  @Field(() => Date, { nullable: true })
  expiresAt?: Date;

  @Field(() => Date, { nullable: true })
  revokedAt?: Date;

  static from(k: ApiKeyInfo): ApiKeyType {
    return Object.assign(new ApiKeyType(), {
      id: k.id,
      owner: k.ownerId,
      label: k.label,
      scopes: k.scopes as ApiKeyScopeEnum[],
      createdAt: k.createdAt,
      lastUsedAt: k.lastUsedAt ?? undefined,
      expiresAt: k.expiresAt ?? undefined,
      revokedAt: k.revokedAt ?? undefined,
    });
  }
}

@ObjectType('CreatedApiKey', { simpleResolvers: true, description: 'createApiKey: the secret, shown this once.' })
export class CreatedApiKeyType {
  @Field({ description: 'The secret (X-API-Key); only its SHA-256 is stored.' })
  key!: string;

  @Field(() => ApiKeyType)
  apiKey!: ApiKeyType;
}

@ObjectType('AuditEvent', { simpleResolvers: true, description: 'One entry of the audit trail (GET /api/audit).' })
export class AuditEventType {
  @Field(() => ID)
  id!: string;

  @Field()
  at!: Date;

  @Field({ description: 'The acting key (`env:<owner>` for a bootstrap key, `cli` for `npm run keys`).' })
  actorKeyId!: string;

  @Field()
  actorOwner!: string;

  @Field({ description: 'key.create, key.revoke, asset.set_immutable' })
  action!: string;

  @Field(() => String, { nullable: true })
  targetOwner?: string;

  @Field(() => String, { nullable: true })
  targetId?: string;

  @Field(() => JSONScalar)
  details!: Record<string, unknown>;

  static from(e: AuditEvent): AuditEventType {
    return Object.assign(new AuditEventType(), e);
  }
}

@ObjectType('AuditEventPage', { simpleResolvers: true })
export class AuditEventPageType {
  @Field(() => [AuditEventType])
  items!: AuditEventType[];

  @Field(() => String, { nullable: true, description: 'Pass as `after` for the next page; absent on the last.' })
  nextCursor?: string;

  static from(p: AuditPage): AuditEventPageType {
    return Object.assign(new AuditEventPageType(), {
      items: p.events.map((e) => AuditEventType.from(e)),
      nextCursor: p.nextCursor,
    });
  }
}
