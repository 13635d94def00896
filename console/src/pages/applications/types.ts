export type Condition = { attribute: 'id' | 'container'; operator: 'starts_with' | 'equals'; value: string };
export type AccessRule = { description?: string; priority: number; container?: string; conditions?: Condition[]; transform?: 'redact' | 'mask' | 'reveal'; permissions: string[] };
export type ApplicationKey = { id: string; tenant_id: string; key?: string; created_by?: string; created_at: string };
export type Application = {
  id: string;
  tenant_id: string;
  name: string;
  key?: string;
  keys: ApplicationKey[];
  type: 'private' | 'public' | 'management';
  permissions: string[];
  rules: AccessRule[];
  expires_at?: string;
  created_at: string;
  modified_at?: string;
};
export type Permission = { type: string; description: string; application_types: string[] };
export const APPLICATION_TYPES = ['private', 'public', 'management'] as const;
