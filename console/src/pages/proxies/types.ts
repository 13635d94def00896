export type ResponseTransform = { type?: 'code' | 'mask'; code?: string; matcher?: 'regex' | 'chase_stratus_pan'; replacement?: string; expression?: string };
export type Proxy = {
  id: string;
  tenant_id: string;
  name: string;
  key: string;
  destination_url: string;
  require_auth: boolean;
  request_transform?: { code: string };
  response_transform?: ResponseTransform;
  application_id?: string;
  configuration?: Record<string, string>;
  created_at: string;
  modified_at?: string;
};

export const SAMPLE_REQUEST_TRANSFORM = `module.exports = async function ({ args, configuration }) {
  // args: { body, headers, method, path, query } of the (detokenized) request
  return { body: args.body, headers: args.headers };
};
`;
