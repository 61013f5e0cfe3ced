// The scopes of spec 5.5. A key carries only the scopes it was created with; none implies another.
export const SCOPES = [
  'workspace:read',
  'contacts:read',
  'contacts:write',
  'appointments:read',
  'catalog:read',
  'conversations:read',
  'messages:read',
  'automations:read',
  'events:read',
] as const;

export type Scope = (typeof SCOPES)[number];

export const isScope = (s: string): s is Scope => (SCOPES as readonly string[]).includes(s);
