"""OpenID Connect settings that need more than a typed reader (no Django here, read by settings).

OIDC_GROUP_ROLES is a JSON object mapping an identity-provider group to one of the app's roles:
{"dsm-clinicians": "clinician", "dsm-admins": "admin"}. Today a role is global; when projects
come, a value may name a project as well ({"group": {"project": "sepsis", "role": "clinician"}}),
so the value's form is the one place that grows. Anything else fails loudly at start-up.
"""

import json
from urllib.parse import urlsplit

ROLES = ("clinician", "researcher", "admin")  # webapp.accounts.roles.Role, without importing Django


class GroupRolesError(ValueError):
    pass


def parse_group_roles(raw: str) -> dict[str, str]:
    """'{"idp-group": "role", ...}' -> {group: role}; an unknown role or shape raises GroupRolesError."""
    try:
        mapping = json.loads(raw or "{}")
    except json.JSONDecodeError as exc:
        raise GroupRolesError(f"OIDC_GROUP_ROLES is not JSON: {exc.msg}") from None
    if not isinstance(mapping, dict):
        raise GroupRolesError('OIDC_GROUP_ROLES must be a JSON object: {"idp-group": "role"}')
    for group, role in mapping.items():
        if role not in ROLES:
            raise GroupRolesError(f"OIDC_GROUP_ROLES maps {group!r} to {role!r}: a role is one of {', '.join(ROLES)}")
    return mapping


def roles_for_groups(groups, mapping: dict[str, str]) -> frozenset[str]:
    """The roles the IdP groups grant. `groups` is the claim's value: a list, or one name."""
    if isinstance(groups, str):
        groups = [groups]
    if not isinstance(groups, list | tuple):
        return frozenset()
    return frozenset(mapping[group] for group in groups if isinstance(group, str) and group in mapping)


def origin(url: str) -> str:
    """'https://idp.example.org/realms/x/logout' -> 'https://idp.example.org' ('' for '')."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else ""
