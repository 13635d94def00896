import { Type, type Static } from 'typebox';
import type { FieldErrorList } from '../http/errors.ts';
import { childPath } from '../http/field-path.ts';
import { permissionDefinition, type ApplicationType } from './permissions.ts';

export const TRANSFORMS = ['redact', 'mask', 'reveal'] as const;
export type Transform = (typeof TRANSFORMS)[number];

export const Condition = Type.Object({
  attribute: Type.Enum(['id', 'container']),
  operator: Type.Enum(['starts_with', 'equals']),
  value: Type.String({ maxLength: 500 }),
}, { additionalProperties: false });
export type Condition = Static<typeof Condition>;

export const AccessRuleSchema = Type.Object({
  description: Type.Optional(Type.String({ maxLength: 500 })),
  priority: Type.Integer({ minimum: 1, maximum: 100_000 }),
  container: Type.Optional(Type.String({ maxLength: 500 })),
  conditions: Type.Optional(Type.Array(Condition, { maxItems: 20 })),
  transform: Type.Optional(Type.Enum([...TRANSFORMS], { default: 'redact' })),
  permissions: Type.Array(Type.String({ maxLength: 100 }), { minItems: 1, maxItems: 50 }),
}, { additionalProperties: false });
export type AccessRuleInput = Static<typeof AccessRuleSchema>;

export type AccessRule = {
  description?: string;
  priority: number;
  container?: string;
  conditions?: Condition[];
  transform: Transform;
  permissions: string[];
};

/** Containers are paths of lowercase segments that start and end with `/`, e.g. `/pci/high/`. */
const CONTAINER = /^\/(?:[a-z0-9_-]+\/)*$/;

export function isContainer(value: string): boolean {
  return CONTAINER.test(value) && value.length <= 500;
}

/** Who the permissions are for: an application of a type, or a session authorized by a private application. */
export type Grantee = ApplicationType | 'session';

/** Permission names must exist and fit the grantee; sessions may receive what a private application may hold. */
export function checkPermissions(perms: string[], grantee: Grantee, field: string, errors: FieldErrorList): void {
  const fits: ApplicationType = grantee === 'session' ? 'private' : grantee;
  perms.forEach((name, i) => {
    const def = permissionDefinition(name);
    if (!def) errors.add(childPath(field, i), `"${name}" is not a known permission (see GET /permissions)`);
    else if (!def.application_types.includes(fits)) {
      errors.add(childPath(field, i), `"${name}" cannot be granted to ${grantee === 'session' ? 'a session' : `a ${grantee} application`}`);
    }
  });
  if (new Set(perms).size !== perms.length) errors.add(field, 'must not contain duplicates');
}

/**
 * The spec's rule shape rules: `container` is required for public and private applications,
 * `conditions` exist only on sessions, and the two never appear together. A public
 * application's rule redacts: its keys are in every browser and never see token data, so a
 * rule saying `mask` or `reveal` would be stored and shown as a promise no key keeps.
 */
export function checkRules(rules: AccessRuleInput[], grantee: Grantee, field: string, errors: FieldErrorList): AccessRule[] {
  const priorities = new Set<number>();
  rules.forEach((rule, i) => {
    const at = childPath(field, i);
    checkPermissions(rule.permissions, grantee, `${at}.permissions`, errors);
    if (priorities.has(rule.priority)) errors.add(`${at}.priority`, `priority ${rule.priority} is used by another rule`);
    priorities.add(rule.priority);
    const hasConditions = rule.conditions !== undefined && rule.conditions.length > 0;
    if (rule.container !== undefined && !isContainer(rule.container)) {
      errors.add(`${at}.container`, 'must be a path of lowercase segments that starts and ends with "/", e.g. /pci/high/');
    }
    if (rule.container !== undefined && hasConditions) errors.add(`${at}.conditions`, 'cannot be combined with container');
    if (grantee === 'session') {
      if (rule.container === undefined && !hasConditions) errors.add(`${at}`, 'a session rule needs a container or conditions');
    } else {
      if (rule.conditions !== undefined) errors.add(`${at}.conditions`, 'conditions apply only to session rules');
      if (grantee === 'management' && rule.container !== undefined) {
        errors.add(`${at}.container`, 'management permissions are not scoped to a container');
      }
      if (grantee !== 'management' && rule.container === undefined) errors.add(`${at}.container`, 'is required');
      if (grantee === 'public' && rule.transform !== undefined && rule.transform !== 'redact') {
        errors.add(`${at}.transform`, 'must be redact (or left out): public application keys never see token data');
      }
    }
  });
  return rules
    .map((r) => ({
      ...(r.description !== undefined ? { description: r.description } : {}),
      priority: r.priority,
      ...(r.container !== undefined ? { container: r.container } : {}),
      ...(r.conditions !== undefined && r.conditions.length > 0 ? { conditions: r.conditions } : {}),
      transform: r.transform ?? 'redact',
      permissions: r.permissions,
    }))
    .sort((a, b) => a.priority - b.priority);
}
