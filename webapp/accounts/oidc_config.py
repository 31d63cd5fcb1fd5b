"""OpenID Connect settings that need more than a typed reader (read by settings: nothing here
needs Django's apps loaded; the Role enum imports only django.core.exceptions).

OIDC_GROUP_ROLES is a JSON object mapping an identity-provider group to a role in a project, as
"project-slug:role", or to a list of them:
{"icu-doctors": "icu-sepsis:clinician", "dsm-research": ["icu-sepsis:researcher", "ed-triage:researcher"]}.
The roles are the Role enum's (webapp.projects.roles; clinician, researcher, curator, admin: a
project's admin), read from it, not copied. Site admins are not granted by the provider: they are
local accounts (the break-glass admin) or made by another site admin. Anything else fails loudly
at start-up.
"""

import json
import re
from urllib.parse import urlsplit

from webapp.projects.roles import Role

ROLES = tuple(role.value for role in Role)
GRANT = re.compile(r"^(?P<project>[-a-zA-Z0-9_]+):(?P<role>[a-z]+)$")

Grant = tuple[str, str]  # (project slug, role)


class GroupRolesError(ValueError):
    pass


def parse_group_roles(raw: str) -> dict[str, tuple[Grant, ...]]:
    """'{"idp-group": "project:role" or [...], ...}' -> {group: ((project, role), ...)}; an unknown
    role or shape raises GroupRolesError saying which group and why."""
    try:
        mapping = json.loads(raw or "{}")
    except json.JSONDecodeError as exc:
        raise GroupRolesError(f"OIDC_GROUP_ROLES is not JSON: {exc.msg}") from None
    if not isinstance(mapping, dict):
        raise GroupRolesError('OIDC_GROUP_ROLES must be a JSON object: {"idp-group": "project:role"}')
    parsed = {}
    for group, value in mapping.items():
        values = value if isinstance(value, list) else [value]
        grants = []
        for item in values:
            match = GRANT.match(item) if isinstance(item, str) else None
            if match is None:
                raise GroupRolesError(
                    f"OIDC_GROUP_ROLES maps {group!r} to {item!r}: a value is 'project-slug:role' (or a list of them)"
                )
            if match["role"] not in ROLES:
                raise GroupRolesError(
                    f"OIDC_GROUP_ROLES maps {group!r} to {item!r}: a role is one of {', '.join(ROLES)}"
                )
            grants.append((match["project"], match["role"]))
        parsed[group] = tuple(grants)
    return parsed


def grants_for_groups(groups, mapping: dict[str, tuple[Grant, ...]]) -> frozenset[Grant]:
    """The (project, role) pairs the IdP groups grant. `groups` is the claim's value: a list, or one name."""
    if isinstance(groups, str):
        groups = [groups]
    if not isinstance(groups, list | tuple):
        return frozenset()
    return frozenset(
        grant for group in groups if isinstance(group, str) and group in mapping for grant in mapping[group]
    )


def origin(url: str) -> str:
    """'https://idp.example.org/realms/x/logout' -> 'https://idp.example.org' ('' for '')."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""
