import { Field, Int, ObjectType } from 'type-graphql';
import type { Page, TagCount } from '../../../domain/assets/asset.types';

@ObjectType('TagCount', { simpleResolvers: true })
export class TagCountType {
  @Field()
  name!: string;

  @Field(() => Int, { description: "How many of this owner's assets carry the tag." })
  count!: number;
}

@ObjectType('BaseModelCount', { simpleResolvers: true })
export class BaseModelCountType {
  @Field({ description: 'The base model as its metadata names it (e.g. "sdxl_base_v1-0").' })
  name!: string;

  @Field(() => Int, { description: "How many of this owner's assets name it." })
  count!: number;
}

@ObjectType('TagPage', { simpleResolvers: true })
export class TagPage {
  @Field(() => [TagCountType])
  items!: TagCountType[];

  @Field(() => Int)
  total!: number;

  @Field()
  hasMore!: boolean;

  static from(p: Page<TagCount>): TagPage {
    return Object.assign(new TagPage(), { items: p.items, total: p.total, hasMore: p.hasMore });
  }
}
