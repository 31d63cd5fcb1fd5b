// A real OpenID Connect provider for the tests (oidc-provider, its development login form).
// Usage: node provider.mjs ACCOUNTS_JSON
// Environment: OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, OIDC_REDIRECT_URI, OIDC_POST_LOGOUT_URI.
// ACCOUNTS_JSON maps an account id to {"claims": {...}, "disabled": false}; it is read again at
// every look-up, so a test changes a user's groups, or disables the account, by rewriting it.
// Listens on a free loopback port and prints one JSON line: {"issuer": "http://127.0.0.1:PORT"}.
import fs from 'node:fs';
import http from 'node:http';

import Provider, { interactionPolicy } from 'oidc-provider';

// As a real provider does, a disabled account's session no longer signs it in anywhere: a
// silent request (prompt=none) gets login_required, an interactive one the login form again.
const policy = interactionPolicy.base();
policy.get('login').checks.add(new interactionPolicy.Check(
  'account_disabled',
  'the account is disabled',
  'login_required',
  (ctx) => (ctx.oidc.account?.disabled ? interactionPolicy.Check.REQUEST_PROMPT
    : interactionPolicy.Check.NO_NEED_TO_PROMPT),
));

const accountsFile = process.argv[2];
const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} must be set`);
  return value;
};

const server = http.createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [{
      client_id: env('OIDC_CLIENT_ID'),
      client_secret: env('OIDC_CLIENT_SECRET'),
      redirect_uris: [env('OIDC_REDIRECT_URI')],
      post_logout_redirect_uris: [env('OIDC_POST_LOGOUT_URI')],
      token_endpoint_auth_method: 'client_secret_post',
    }],
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['preferred_username', 'name', 'given_name', 'family_name'],
      groups: ['groups'],
    },
    cookies: { keys: ['test-only-cookie-key'] },
    interactions: { policy },
    features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
    pkce: { required: () => true },
    async findAccount(ctx, id) {
      const account = JSON.parse(fs.readFileSync(accountsFile, 'utf8'))[id];
      if (!account) return undefined;
      return {
        accountId: id, disabled: Boolean(account.disabled), claims: async () => ({ sub: id, ...account.claims }),
      };
    },
    // The hospital's own app: no consent screen, every requested scope is granted.
    async loadExistingGrant(ctx) {
      const grantId = ctx.oidc.result?.consent?.grantId
        || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
      if (grantId) return ctx.oidc.provider.Grant.find(grantId);
      const grant = new ctx.oidc.provider.Grant({
        clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId,
      });
      grant.addOIDCScope('openid email profile groups');
      await grant.save();
      return grant;
    },
  });
  server.on('request', provider.callback());
  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
});
