"""People: who signs in (local accounts, the identity provider: oidc.py), the users page, and who
is in which project: membership.py (the one place that changes memberships, audited) with the
project pages and the create_project and add_member commands. The rules those memberships give
(roles, which rows a user sees) are the projects app's, below this one and the audit log."""
