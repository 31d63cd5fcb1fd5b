"""Write audit entries. Callers pass ids, counts and names, never note text.

Who acted (actor_name):
- a user: their username (and the row links to them);
- no user, or a label such as "command line": the operating-system user of the process, as
  "cli:<os user>" for a command (with the command's name in details when it ran through
  manage.py) or "worker:<os user>" for a Celery worker; a label given goes to details["as"];
- a failed login: the username tried if an account has it, else "(unknown username)": it may
  be a password typed into the wrong field (the request's client address goes to `ip`).

Refused imports keep the number of problems and the categories of the first reasons. A category
is the start of a reason's message with what came from the file taken out: quoted values (ids,
names, labels) and numbers are replaced, and the message is cut at its first ":", "(" or ";" (after
which messages list field names, column names or a parser's words) and to a few words. So
"note 'n7' already exists with different text (content hash differs)" is recorded as
"note … already exists with different text"; the full reasons stay with the import (its page,
or the command's output).
"""

import getpass
import ipaddress
import os
import re
import sys
from collections.abc import Iterable
from pathlib import Path

from axes.helpers import get_client_ip_address

from webapp.audit.models import AuditEvent
from webapp.audit.request_context import current_address
from webapp.projects.scoping import project_id_of

MAX_REASONS = 3
MAX_REASON_WORDS = 7
_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_NUMBER = re.compile(r"(?<![\w-])\d+(?![\w-])")  # "line 3", not "UTF-8"
_DETAIL = re.compile(r"[:(;]")


def record(actor, action: str, obj=None, *, ip: str | None = None, **details) -> AuditEvent:
    """Record that `actor` (a User; None or a label for the command line or a worker) did
    `action` to `obj`. `ip`: the client's address; by default the address of the request
    being served, if any (webapp.audit.request_context)."""
    user = actor if getattr(actor, "is_authenticated", False) else None
    if user is not None:
        name = user.get_username()
    elif hasattr(actor, "is_authenticated"):  # an anonymous visitor of a page
        name = "anonymous"
    else:
        name, process = process_actor()
        details = {**process, **({"as": str(actor)} if actor else {}), **details}
    return AuditEvent.objects.create(
        actor=user,
        actor_name=name[:150],
        action=action,
        project_id=_project_id(obj),
        object_type=obj._meta.label if obj is not None else "",
        object_id=str(obj.pk) if obj is not None else "",
        ip=ip or current_address(),
        details=details,
    )


def _project_id(obj) -> int | None:
    """The project an audited object belongs to, so its project's admins see the row."""
    if obj is None:
        return None
    if obj._meta.label == "projects.Project":
        return obj.pk
    if hasattr(obj, "project_id"):
        return obj.project_id
    if hasattr(type(obj), "project_paths"):
        return project_id_of(obj)
    return None


def record_refused_import(actor, corpus: str, kind: str, problem_count: int, reasons: Iterable) -> AuditEvent:
    """Record that an import into `corpus` was refused: `kind` "notes" or "annotations", the number
    of problems, and the categories of the first `reasons` (Problem objects, whose `text` is the
    message without the "file line N:" that str(problem) puts first, or bare messages)."""
    return record(
        actor,
        AuditEvent.Action.IMPORT_REFUSED,
        None,
        corpus=corpus,
        kind=kind,
        problems=problem_count,
        reasons=reason_categories(reasons),
    )


def record_anonymous(name: str, action: str, *, ip: str | None = None, **details) -> AuditEvent:
    """Record an event of someone not logged in, named by what they claimed (a failed login)."""
    return AuditEvent.objects.create(actor_name=(name or "")[:150], action=action, ip=ip or None, details=details)


def reason_categories(reasons: Iterable, limit: int = MAX_REASONS) -> list[str]:
    """The first `limit` distinct reason categories, in order."""
    categories: list[str] = []
    for reason in reasons:
        category = reason_category(getattr(reason, "text", reason))  # a Problem's message, in English
        if category not in categories:
            categories.append(category)
            if len(categories) == limit:
                break
    return categories


def reason_category(message) -> str:
    """ "duplicate id 'n7' (first on line 3)" -> "duplicate id …"."""
    text = _NUMBER.sub("N", _QUOTED.sub("…", str(message)))
    return " ".join(_DETAIL.split(text, maxsplit=1)[0].split()[:MAX_REASON_WORDS])


def client_ip(request) -> str | None:
    """The client's address as django-axes sees it (one rule for lockouts and the audit log)."""
    if request is None:
        return None
    address = get_client_ip_address(request)
    try:
        return str(ipaddress.ip_address(address)) if address else None
    except ValueError:
        return None


def process_actor() -> tuple[str, dict]:
    """Who acts when no user does: the operating-system user, and the command when we know it."""
    os_user = os_username()
    path = Path(sys.argv[0]) if sys.argv and sys.argv[0] else Path()
    program = path.parent.name if path.name == "__main__.py" else path.name  # "python -m celery": celery
    if program == "celery":
        return f"worker:{os_user}", {}
    if program in ("manage.py", "django-admin", "django") and len(sys.argv) > 1:
        return f"cli:{os_user}", {"command": sys.argv[1][:60]}
    return f"cli:{os_user}", {}


def os_username() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name and a uid missing from /etc/passwd (containers)
        return f"uid{os.getuid()}"
