"""A real OpenID Connect provider for tests: tests/oidc/provider.mjs (oidc-provider on Node),
started on a free loopback port with one client and the accounts a test writes.

Needs `node` and `npm ci --prefix tests/oidc`. Without them the tests that use it are skipped
here and fail in CI (DSM_REQUIRE_OIDC_PROVIDER=1, set by .ci/run), like the browser tests.
"""

import json
import os
import select
import shutil
import subprocess
from pathlib import Path

import pytest
import requests

HERE = Path(__file__).resolve().parent
CLIENT_ID = "decselfmask"
CLIENT_SECRET = "test-only-client-secret"


class Provider:
    def __init__(self, process, issuer: str, accounts_file: Path):
        self.process = process
        self.issuer = issuer
        self.accounts_file = accounts_file
        self.discovery = requests.get(f"{issuer}/.well-known/openid-configuration", timeout=10).json()

    def set_accounts(self, accounts: dict) -> None:
        """{account id: {"claims": {...}, "disabled": bool}}; read again at every look-up."""
        self.accounts_file.write_text(json.dumps(accounts))

    def app_settings(self) -> dict:
        """The app's settings for this provider, as README says to set them from discovery."""
        return {
            "OIDC_RP_CLIENT_ID": CLIENT_ID,
            "OIDC_RP_CLIENT_SECRET": CLIENT_SECRET,
            "OIDC_OP_AUTHORIZATION_ENDPOINT": self.discovery["authorization_endpoint"],
            "OIDC_OP_TOKEN_ENDPOINT": self.discovery["token_endpoint"],
            "OIDC_OP_USER_ENDPOINT": self.discovery["userinfo_endpoint"],
            "OIDC_OP_JWKS_ENDPOINT": self.discovery["jwks_uri"],
            "OIDC_OP_LOGOUT_ENDPOINT": self.discovery["end_session_endpoint"],
        }


def start(app_url: str, accounts: dict, tmp_path: Path) -> Provider:
    """Start the provider for the app at `app_url` (its callback and login page registered)."""
    node = shutil.which("node")
    if node is None or not (HERE / "node_modules" / "oidc-provider").is_dir():
        message = "the test OpenID provider needs node and `npm ci --prefix tests/oidc`"
        if os.environ.get("DSM_REQUIRE_OIDC_PROVIDER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    accounts_file = tmp_path / "oidc-accounts.json"
    accounts_file.write_text(json.dumps(accounts))
    env = {
        **os.environ,
        "OIDC_CLIENT_ID": CLIENT_ID,
        "OIDC_CLIENT_SECRET": CLIENT_SECRET,
        "OIDC_REDIRECT_URI": f"{app_url}/oidc/callback/",
        "OIDC_POST_LOGOUT_URI": f"{app_url}/login/",
    }
    process = subprocess.Popen(
        [node, str(HERE / "provider.mjs"), str(accounts_file)],
        cwd=HERE,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    ready, _, _ = select.select([process.stdout], [], [], 30)
    line = process.stdout.readline() if ready else ""
    if not line:
        process.kill()
        raise RuntimeError(f"the test OpenID provider did not start (exit {process.poll()})")
    return Provider(process, json.loads(line)["issuer"], accounts_file)


def stop(provider: Provider) -> None:
    provider.process.terminate()
    try:
        provider.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        provider.process.kill()
        provider.process.wait()
