// The authorization server of Gatehouse's OAuth tests: oidc-provider (a certified OpenID
// provider) on 127.0.0.1, configured by the environment. Started by
// crates/cli/tests/end_to_end/oauth/, on Node 22 (target/peers/node22).
//
//   AS_PORT        port to listen on (default 0: a free one; the chosen one is printed)
//   AS_RESOURCE_PATTERN  a regular expression the resource indicators (the MCP servers'
//                  URLs) must match; the tokens' audience is the one asked for
//   AS_SCOPES      the resources' scopes (default "mcp:read mcp:write")
//   AS_AT_TTL      access-token lifetime in seconds (default 3600)
//   AS_RT_TTL      refresh-token lifetime in seconds (default 86400)
//   AS_LOGIN       "auto:<account>": login and consent finish by themselves (a browser
//                  that only follows redirects signs in as <account>); "dev": the
//                  library's own login and consent pages, for a real browser; "deny": the
//                  person says no (the redirect carries error=access_denied) (default
//                  auto:usr-sam)
//   AS_ORGS        "account=org,..." the `org` claim of each account's access tokens
//   AS_PREREG      "id:secret:redirect" a pre-registered confidential client (Basic auth)
//   AS_WEB_CLIENT  "id:secret:redirect" a pre-registered web application (the gateway's
//                  approval page): confidential (Basic auth), or public with no secret
//   AS_CC_CLIENT   "id:secret" a pre-registered client-credentials client
//   AS_CC_JWT_CLIENT  "id:PEM-FILE" a pre-registered client-credentials client that proves
//                  itself with a private-key JWT (RFC 7523), signed ES256 by the key in
//                  PEM-FILE (its public half is registered)
//   AS_WIF_CLIENT  "id:PEM-FILE" a public client that presents a workload's token (the
//                  JWT-bearer grant, RFC 7523): a JWT for this issuer (aud), signed by the
//                  platform's key in PEM-FILE (its public half is trusted)
//                  With an ID-JAG as the assertion (typ oauth-id-jag+jwt, signed by the
//                  same key: the company's identity provider's), its client_id must be the
//                  client's, and its resource and scope stand for the missing parameters.
//   AS_IDP_CLIENT  "id:PEM-FILE" this server as a company's identity provider: the public
//                  client id exchanges the person's ID token (signed by the key in
//                  PEM-FILE, for id) for an ID-JAG signed by that key (RFC 8693,
//                  enterprise-managed authorization), for the client AS_JAG_CLIENT
//                  (default "gatehouse") at the authorization server it names
//   AS_RS_CLIENT   "id:secret" a resource server's client, which may introspect tokens
//                  (RFC 7662, at /token/introspection; the feature is on with it)
//   AS_AT_FORMAT   "jwt" (default) or "opaque": the access tokens' format (an opaque token
//                  can be introspected and revoked; oidc-provider does neither for a JWT)
//   AS_LOG_REQUESTS  "1": one `request` event per request (path, query, form body,
//                  Authorization header), so a test can look for what must never reach
//                  this server (another issuer's tokens or client id)
//
// Prints "listening on ISSUER" as its first line on stdout, then one JSON line per
// event the tests count: register, authorize, token, token_error, grant_revoked, revoked.
// POST /__test/fail-token?count=N makes the next N token requests answer 503 (an
// authorization server that is down for a moment); with &how=drop they are cut off
// without an answer instead (the connection closed: a network error at the client).
// POST /__test/login?account=A switches the automatic login to A; ?deny=1 makes the
// person say no from then on (error=access_denied), until the next ?account=.
// POST /__test/break?metadata=M&token_response=T breaks what follows (after the protected
// resource has read the metadata it needs): the metadata document, M = "missing" (404),
// "malformed" (not JSON), "other-issuer" (names another issuer), "no-s256" (no
// code_challenge_methods_supported); the answer to a code's exchange, T =
// "no-access-token", "token-type" (token_type "mac").
import http from 'node:http';
import crypto from 'node:crypto';
import { readFileSync } from 'node:fs';
import Provider, { errors } from 'oidc-provider';

const env = process.env;
const resourcePattern = new RegExp(env.AS_RESOURCE_PATTERN ?? '^http://127\\.0\\.0\\.1:[0-9]+/mcp$');
const resourceScopes = env.AS_SCOPES ?? 'mcp:read mcp:write';
const atTtl = Number(env.AS_AT_TTL ?? 3600);
const login = env.AS_LOGIN ?? 'auto:usr-sam';
let autoAccount = login.startsWith('auto:') ? login.slice(5) : undefined;
let deny = login === 'deny';
const orgs = Object.fromEntries((env.AS_ORGS ?? '').split(',').filter(Boolean).map((p) => p.split('=')));
let failTokens = 0;
let failHow = '503';
const broken = { metadata: undefined, tokenResponse: undefined };

const signingKey = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 })
  .privateKey.export({ format: 'jwk' });

const clients = [];
// "id:PEM-FILE" (the file's path may hold a colon): the id and the PEM's text.
const idAndPem = (spec) => {
  const [id, ...file] = spec.split(':');
  return [id, readFileSync(file.join(':'))];
};
const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
let idpKey;
let idpClient;
if (env.AS_IDP_CLIENT) {
  const [client_id, pem] = idAndPem(env.AS_IDP_CLIENT);
  idpKey = crypto.createPrivateKey(pem);
  idpClient = client_id;
  clients.push({
    client_id, grant_types: [TOKEN_EXCHANGE], response_types: [], redirect_uris: [],
    token_endpoint_auth_method: 'none',
  });
}
const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
let platformKey;
if (env.AS_WIF_CLIENT) {
  const [client_id, pem] = idAndPem(env.AS_WIF_CLIENT);
  platformKey = crypto.createPublicKey(pem);
  clients.push({
    client_id, grant_types: [JWT_BEARER], response_types: [], redirect_uris: [],
    token_endpoint_auth_method: 'none', scope: resourceScopes,
  });
}
if (env.AS_CC_JWT_CLIENT) {
  const [client_id, pem] = idAndPem(env.AS_CC_JWT_CLIENT);
  const jwk = crypto.createPublicKey(pem).export({ format: 'jwk' });
  clients.push({
    client_id, grant_types: ['client_credentials'], response_types: [], redirect_uris: [],
    token_endpoint_auth_method: 'private_key_jwt', token_endpoint_auth_signing_alg: 'ES256',
    jwks: { keys: [{ ...jwk, use: 'sig', alg: 'ES256' }] }, scope: resourceScopes,
  });
}
if (env.AS_RS_CLIENT) {
  const [client_id, client_secret] = env.AS_RS_CLIENT.split(':');
  clients.push({
    client_id, client_secret, grant_types: [], response_types: [], redirect_uris: [],
    token_endpoint_auth_method: 'client_secret_basic',
  });
}
if (env.AS_CC_CLIENT) {
  const [client_id, client_secret] = env.AS_CC_CLIENT.split(':');
  clients.push({
    client_id, client_secret, grant_types: ['client_credentials'], response_types: [],
    redirect_uris: [], token_endpoint_auth_method: 'client_secret_basic', scope: resourceScopes,
  });
}
if (env.AS_PREREG) {
  const [client_id, client_secret, ...rest] = env.AS_PREREG.split(':');
  clients.push({
    client_id, client_secret, application_type: 'native',
    grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
    redirect_uris: [rest.join(':')], token_endpoint_auth_method: 'client_secret_basic',
  });
}

if (env.AS_WEB_CLIENT) {
  const [client_id, client_secret, ...rest] = env.AS_WEB_CLIENT.split(':');
  clients.push({
    client_id, application_type: 'web', grant_types: ['authorization_code'],
    response_types: ['code'], redirect_uris: [rest.join(':')],
    ...(client_secret
      ? { client_secret, token_endpoint_auth_method: 'client_secret_basic' }
      : { token_endpoint_auth_method: 'none' }),
  });
}

const server = http.createServer();
// Node closes a keep-alive connection after 5 s idle by default; a client that reuses its
// pooled connection at that moment gets 'Server disconnected' (httpx's RemoteProtocolError),
// which a loaded machine made happen mid-sign-in. Authorization servers in the field keep
// idle connections longer (nginx 75 s); so does this one.
server.keepAliveTimeout = 120_000;
server.headersTimeout = 125_000;
await new Promise((resolve) => server.listen(Number(env.AS_PORT ?? 0), '127.0.0.1', resolve));
const { port } = server.address();
const issuer = `http://127.0.0.1:${port}`;

const provider = new Provider(issuer, {
  jwks: { keys: [{ ...signingKey, use: 'sig', alg: 'RS256', kid: crypto.randomUUID() }] },
  clients,
  // The resource scopes are listed so that a registration may name them; a registration
  // naming none may ask for any.
  scopes: ['openid', 'offline_access', ...resourceScopes.split(' ')],
  responseTypes: ['code'],
  pkce: { required: () => true },
  // oidc-provider issues a refresh token only for offline_access granted with
  // prompt=consent (OpenID Connect Core 11); here every client allowed the grant gets one.
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  extraTokenClaims: async (_ctx, token) => (token.accountId && orgs[token.accountId]
    ? { org: orgs[token.accountId] } : undefined),
  features: {
    devInteractions: { enabled: login === 'dev' },
    registration: { enabled: true, issueRegistrationAccessToken: false },
    clientCredentials: { enabled: Boolean(env.AS_CC_CLIENT || env.AS_CC_JWT_CLIENT) },
    revocation: { enabled: true },
    introspection: { enabled: Boolean(env.AS_RS_CLIENT) },
    resourceIndicators: {
      enabled: true,
      defaultResource: async (_ctx, _client, oneOf) => oneOf,
      useGrantedResource: async () => true,
      getResourceServerInfo: async (_ctx, resource) => {
        if (!resourcePattern.test(resource)) throw new errors.InvalidTarget();
        return {
          scope: resourceScopes,
          audience: resource,
          accessTokenTTL: atTtl,
          accessTokenFormat: env.AS_AT_FORMAT ?? 'jwt',
          ...((env.AS_AT_FORMAT ?? 'jwt') === 'jwt' ? { jwt: { sign: { alg: 'RS256' } } } : {}),
        };
      },
    },
  },
  ttl: {
    AccessToken: (_ctx, token) => token.resourceServer?.accessTokenTTL ?? atTtl,
    ClientCredentials: (_ctx, token) => token.resourceServer?.accessTokenTTL ?? atTtl,
    AuthorizationCode: 60,
    IdToken: 3600,
    Interaction: 600,
    Session: 3600,
    Grant: 86400,
    RefreshToken: Number(env.AS_RT_TTL ?? 86400),
  },
  findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
});
provider.on('server_error', (_ctx, err) => console.error('server_error', err));
// The company identity provider's token exchange (oidc-provider has none built in): the
// person's ID token verified (this issuer's, for the exchanging client, unexpired), and an
// ID-JAG for the authorization server named in `audience` and the resource asked for.
if (idpKey) {
  const { jwtVerify, SignJWT } = await import('jose');
  const publicKey = crypto.createPublicKey(idpKey);
  provider.registerGrantType(TOKEN_EXCHANGE, async (ctx) => {
    const { params } = ctx.oidc;
    if (params.subject_token_type !== 'urn:ietf:params:oauth:token-type:id_token'
        || params.requested_token_type !== 'urn:ietf:params:oauth:token-type:id-jag') {
      throw new errors.InvalidRequest('only an ID token for an ID-JAG is exchanged here');
    }
    let person;
    try {
      ({ payload: person } = await jwtVerify(params.subject_token ?? '', publicKey,
        { issuer, audience: idpClient }));
    } catch (e) {
      throw new errors.InvalidGrant(`the ID token is not usable: ${e.code ?? e.message}`);
    }
    if (!params.audience || !params.resource) throw new errors.InvalidRequest('audience and resource are needed');
    const scope = params.scope || undefined;
    const jag = await new SignJWT({ client_id: env.AS_JAG_CLIENT ?? 'gatehouse',
      resource: params.resource, ...(scope ? { scope } : {}) })
      .setProtectedHeader({ alg: 'ES256', typ: 'oauth-id-jag+jwt' })
      .setIssuer(issuer).setSubject(person.sub).setAudience(params.audience)
      .setIssuedAt().setExpirationTime('5m').setJti(crypto.randomUUID())
      .sign(idpKey);
    ctx.body = { access_token: jag, issued_token_type: 'urn:ietf:params:oauth:token-type:id-jag',
      token_type: 'N_A', expires_in: 300, ...(scope ? { scope } : {}) };
  }, ['subject_token', 'subject_token_type', 'requested_token_type', 'audience', 'resource', 'scope']);
}
// The JWT-bearer grant of a workload (oidc-provider has none built in): the assertion
// verified against the platform's key, for this issuer, unexpired; the token for the one
// resource asked for, as a client-credentials token is.
if (platformKey) {
  const { jwtVerify } = await import('jose');
  provider.registerGrantType(JWT_BEARER, async (ctx) => {
    const { client, params } = ctx.oidc;
    let claims;
    let typ;
    try {
      ({ payload: claims, protectedHeader: { typ } } = await jwtVerify(params.assertion ?? '',
        platformKey, { audience: issuer }));
    } catch (e) {
      throw new errors.InvalidGrant(`the workload's assertion is not usable: ${e.code ?? e.message}`);
    }
    const jag = typ === 'oauth-id-jag+jwt';
    if (jag && claims.client_id !== client.clientId) {
      throw new errors.InvalidGrant('the ID-JAG is for another client');
    }
    const resource = params.resource ?? (jag ? claims.resource : undefined);
    if (!resource || !resourcePattern.test(resource)) throw new errors.InvalidTarget();
    const asked = (params.scope ?? (jag ? claims.scope : undefined) ?? '').split(' ').filter(Boolean);
    const allowed = new Set(resourceScopes.split(' '));
    const token = new provider.ClientCredentials({ client,
      scope: asked.filter((s) => allowed.has(s)).join(' ') || undefined });
    token.resourceServer = new provider.ResourceServer(resource, {
      scope: resourceScopes, audience: resource, accessTokenTTL: atTtl,
      accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } });
    ctx.oidc.entity('ClientCredentials', token);
    const value = await token.save();
    ctx.body = { access_token: value, token_type: 'Bearer', expires_in: token.expiration,
      scope: token.scope };
  }, ['assertion', 'scope', 'resource']);
}
const event = (e) => console.log(JSON.stringify(e));
// The broken answers a test asks for, made from the provider's own (after it answered).
const metadataPaths = ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server'];
provider.use(async (ctx, next) => {
  await next();
  if (broken.metadata && metadataPaths.includes(ctx.path)) {
    if (broken.metadata === 'missing') { ctx.status = 404; ctx.body = 'Not Found'; }
    if (broken.metadata === 'malformed') { ctx.type = 'json'; ctx.body = '{"issuer": '; }
    if (broken.metadata === 'other-issuer' && ctx.status === 200) ctx.body = { ...ctx.body, issuer: 'http://127.0.0.1:9' };
    if (broken.metadata === 'no-s256' && ctx.status === 200) {
      const { code_challenge_methods_supported: _dropped, ...rest } = ctx.body;
      ctx.body = rest;
    }
  }
  if (broken.tokenResponse && ctx.path === '/token' && ctx.status === 200
      && ctx.oidc?.params?.grant_type === 'authorization_code') {
    if (broken.tokenResponse === 'no-access-token') {
      const { access_token: _dropped, ...rest } = ctx.body;
      ctx.body = rest;
    }
    if (broken.tokenResponse === 'token-type') ctx.body = { ...ctx.body, token_type: 'mac' };
  }
});
if (env.AS_LOG_REQUESTS === '1') {
  provider.use(async (ctx, next) => {
    await next();
    event({ event: 'request', method: ctx.method, path: ctx.path, query: ctx.query,
      body: ctx.oidc?.body ?? null, authorization: ctx.headers.authorization ?? null });
  });
}
provider.on('authorization.accepted', (ctx) => event({ event: 'authorize',
  client_id: ctx.oidc.params.client_id, scope: ctx.oidc.params.scope,
  resource: ctx.oidc.params.resource, redirect_uri: ctx.oidc.params.redirect_uri }));
provider.on('registration_create.success', (_ctx, client) => event({ event: 'register',
  client_id: client.clientId, application_type: client.applicationType,
  redirect_uris: client.redirectUris, grant_types: client.grantTypes }));
provider.on('grant.success', (ctx) => event({ event: 'token',
  grant_type: ctx.oidc.params.grant_type, client_id: ctx.oidc.client?.clientId,
  resource: ctx.oidc.params.resource }));
provider.on('grant.error', (ctx, err) => event({ event: 'token_error',
  grant_type: ctx.oidc.params?.grant_type, error: err.error }));
provider.on('grant.revoked', (_ctx, grantId) => event({ event: 'grant_revoked', grant_id: grantId }));
provider.on('revocation.success', () => event({ event: 'revoked' }));

// Login and consent without pages: the test "browser" follows redirects, with cookies.
async function autoInteraction(req, res) {
  const { prompt, params, session, grantId } = await provider.interactionDetails(req, res);
  if (deny) {
    return provider.interactionFinished(req, res,
      { error: 'access_denied', error_description: 'the person said no' }, { mergeWithLastSubmission: false });
  }
  if (prompt.name === 'login') {
    return provider.interactionFinished(req, res,
      { login: { accountId: autoAccount } }, { mergeWithLastSubmission: false });
  }
  const grant = grantId
    ? await provider.Grant.find(grantId)
    : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
  const d = prompt.details;
  if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
  if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(d.missingResourceScopes ?? {})) {
    grant.addResourceScope(indicator, scopes.join(' '));
  }
  return provider.interactionFinished(req, res,
    { consent: { grantId: await grant.save() } }, { mergeWithLastSubmission: true });
}

const callback = provider.callback();
server.on('request', (req, res) => {
  if (req.method === 'POST' && req.url.startsWith('/__test/fail-token')) {
    const asked = new URL(req.url, issuer).searchParams;
    failTokens = Number(asked.get('count') ?? 1);
    failHow = asked.get('how') ?? '503';
    res.end('ok');
    return;
  }
  if (req.method === 'POST' && req.url.startsWith('/__test/login') && (autoAccount || deny)) {
    const asked = new URL(req.url, issuer).searchParams;
    deny = asked.get('deny') === '1';
    autoAccount = asked.get('account') ?? autoAccount;
    res.end('ok');
    return;
  }
  if (req.method === 'POST' && req.url.startsWith('/__test/break')) {
    const asked = new URL(req.url, issuer).searchParams;
    broken.metadata = asked.get('metadata') ?? undefined;
    broken.tokenResponse = asked.get('token_response') ?? undefined;
    res.end('ok');
    return;
  }
  if ((req.url === '/token' || req.url.startsWith('/token?')) && failTokens > 0) {
    failTokens -= 1;
    event({ event: 'token_failed_on_purpose', how: failHow });
    if (failHow === 'drop') {
      req.socket.destroy();
      return;
    }
    res.statusCode = 503;
    res.end('Service Unavailable');
    return;
  }
  if ((autoAccount || deny) && req.url.startsWith('/interaction/')) {
    autoInteraction(req, res).catch((err) => {
      console.error('interaction failed', err);
      res.statusCode = 500; res.end(String(err));
    });
    return;
  }
  callback(req, res);
});
// The first line: where it listens (the tests read the address after "listening on ").
console.log(`listening on ${issuer}`);
