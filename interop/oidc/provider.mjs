// A real authorization server for mcp/client's end-to-end test: oidc-provider on a free
// loopback port, with one public client (PKCE), resource indicators issuing JWT access
// tokens for the MCP server's resource (MCP_RESOURCE), and its development login and
// consent pages, which the test fills in. Prints "ISSUER <url>" when it listens; stops when
// its stdin closes.
import Provider from 'oidc-provider';
import { createServer } from 'node:http';

const resource = process.env.MCP_RESOURCE;
const redirect = process.env.REDIRECT_URI;
if (!resource || !redirect) {
  console.error('set MCP_RESOURCE and REDIRECT_URI');
  process.exit(2);
}

const server = createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [{
      client_id: 'relay-e2e',
      token_endpoint_auth_method: 'none',
      redirect_uris: [redirect],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    }],
    scopes: ['openid', 'offline_access', 'mcp:read'],
    features: {
      devInteractions: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, indicator) => {
          if (indicator !== resource) throw new Error(`unknown resource ${indicator}`);
          return { scope: 'mcp:read', audience: resource, accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } };
        },
      },
    },
  });
  provider.on('server_error', (ctx, err) => console.error('oidc-provider server_error:', err));
  server.on('request', provider.callback());
  console.log(`ISSUER ${issuer}`);
});
process.stdin.resume();
process.stdin.on('end', () => { server.close(); process.exit(0); });
