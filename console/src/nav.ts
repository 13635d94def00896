/** The console's sections: where each lives, and the permission that shows it in the menu. */
export const SECTIONS = [
  { path: '', label: 'Overview', permission: undefined },
  { path: 'applications', label: 'Applications', permission: 'application:read' },
  { path: 'tokens', label: 'Tokens', permission: 'token:search' },
  { path: 'reactors', label: 'Reactors', permission: 'reactor:read' },
  { path: 'proxies', label: 'Proxies', permission: 'proxy:read' },
  { path: 'webhooks', label: 'Webhooks', permission: 'webhook:read' },
  { path: 'transactions', label: 'Transactions', permission: 'orchestration:transaction:read' },
  { path: 'lookup', label: '3DS & intents', permission: undefined },
  { path: 'logs', label: 'Logs', permission: 'log:read' },
  { path: 'members', label: 'Members', permission: 'tenant:member:read' },
] as const;
