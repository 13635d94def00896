export type Token = {
  id: string;
  type: string;
  tenant_id: string;
  data?: unknown;
  containers: string[];
  metadata?: Record<string, string>;
  mask?: unknown;
  fingerprint?: string;
  fingerprint_expression?: string;
  search_indexes?: string[];
  deduplicate_token: boolean;
  card?: { bin: string; last4: string; expiration_month?: number; expiration_year?: number; brand: string };
  bank?: { routing_number?: string; account_number_last4?: string };
  expires_at?: string;
  created_at: string;
  modified_at?: string;
};

/** The token types Coffer knows (src/vault/token-types.ts), with a sample of their data. */
export const TOKEN_TYPES: { name: string; sample: string }[] = [
  { name: 'token', sample: '{"secret": "value"}' },
  { name: 'card', sample: '{"number": "4242424242424242", "expiration_month": 12, "expiration_year": 2030, "cvc": "123"}' },
  { name: 'card_number', sample: '"4242424242424242"' },
  { name: 'network_token', sample: '{"number": "4242424242424242", "expiration_month": 12, "expiration_year": 2030, "cryptogram": "AAAAAAAAAAAAAAAAAAAAAAAAAAA="}' },
  { name: 'bank', sample: '{"routing_number": "110000000", "account_number": "000123456789"}' },
  { name: 'us_bank_account_number', sample: '"000123456789"' },
  { name: 'us_bank_routing_number', sample: '"110000000"' },
  { name: 'social_security_number', sample: '"123-45-6789"' },
  { name: 'employer_id_number', sample: '"12-3456789"' },
];
