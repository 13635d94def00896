export type Reactor = {
  id: string;
  tenant_id: string;
  name: string;
  code: string;
  configuration: Record<string, string>;
  application?: { id: string; name: string; type: string };
  created_at: string;
  modified_at?: string;
};

export const SAMPLE_REACTOR = `module.exports = async function ({ args, configuration, bt }) {
  // args: what the caller sent; strings may hold {{ token_id }} expressions
  return { raw: { hello: args?.name ?? 'world' } };
};
`;
