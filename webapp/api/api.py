"""The NinjaAPI under /api/: token auth on every endpoint, the schema at /api/openapi.json and
its docs page at /api/docs (ninja's Swagger UI from its vendored static files; no CDN), both for
a signed-in user or a token's holder.

Refusals: 400 (a body or a parameter that does not validate, each problem named by its field: an
unknown field, a wrong type, a number out of range), 401 (no, unknown, revoked or expired token),
403 (a read-only token writing, or the role lacks the capability in the object's project: the
pages' 403, audited), 404 (another project's object, or none), 409 (data of a corpus that is not
de-identified, unconfirmed: webapp.deid.gate; anyone but a project admin confirming it is a 403),
429 with Retry-After (the token's rate limit)."""

from django.core.exceptions import PermissionDenied
from django.http import Http404
from ninja import NinjaAPI
from ninja.errors import ValidationError

from webapp.api import tokens, work
from webapp.api.auth import BearerToken, signed_in_or_token
from webapp.audit.models import AuditEvent
from webapp.corpus import api as corpus
from webapp.datasets import api as datasets
from webapp.deid import gate
from webapp.deid_ops import api as deid_ops
from webapp.evaluation import api as evaluation
from webapp.interchange import api as interchange
from webapp.lifecycle.schemas import Unconfirmed
from webapp.pipeline import api as pipeline
from webapp.projects import api as projects
from webapp.review import api as review
from webapp.training import api as training

api = NinjaAPI(
    title="DecSelfMask Studio API",
    version="1",
    description="Personal tokens (Authorization: Bearer dsm_...) act as their owner in the projects they name.",
    auth=BearerToken(),
    docs_decorator=signed_in_or_token,
    urls_namespace="api",
)
# Each app's own router (webapp/<app>/api.py: its operations and their schemas), all at /api/;
# cancel and resume of every kind of long work in one place (webapp.api.work).
for app in (projects, corpus, pipeline, review, evaluation, deid_ops, datasets, training, interchange, work):
    api.add_router("", app.router)


@api.exception_handler(tokens.TokenRefused)
def _refused(request, exc: tokens.TokenRefused):
    response = api.create_response(request, {"detail": str(exc)}, status=exc.status)
    if exc.retry_after:
        response["Retry-After"] = str(exc.retry_after)
    return response


@api.exception_handler(ValidationError)
def _invalid(request, exc: ValidationError):
    """A 400 like every other refusal of the API, its detail naming each field ("Unknown field
    limit.", "note_filter.limit: Input should be greater than or equal to 1."); `errors` keeps
    pydantic's own list for programs."""
    said = []
    for error in exc.errors:
        source, *loc = error.get("loc") or ("body",)
        loc = loc[1:] if source == "body" else loc  # ("body", the parameter's name, field, ...)
        where = ".".join(str(part) for part in loc) or source
        if error.get("type") == "extra_forbidden":
            said.append(f"Unknown field {where}.")
        else:
            said.append(f"{where}: {error.get('msg', 'invalid')}.")
    return api.create_response(request, {"detail": " ".join(said), "errors": exc.errors}, status=400)


@api.exception_handler(Unconfirmed)
def _unconfirmed(request, exc: Unconfirmed):
    """A launch the pages would ask to confirm, sent without `"confirm": true`: 409 with the
    page's question and the estimate, nothing launched (webapp.lifecycle.schemas)."""
    return api.create_response(request, exc.answer(), status=409)


@api.exception_handler(gate.Refused)
def _not_deidentified(request, exc: gate.Refused):
    """The gate's refusal (webapp.deid.gate): 409 with the reason and what a project admin sends to
    let it leave; 403 for a confirmation from anyone else (audited by the gate)."""
    detail = exc.reason
    if exc.status == 409:
        detail += f" A project admin sends the same request with {gate.CONFIRM_FIELD}=true to let it leave."
    body = {"detail": detail, "corpora": [{"id": c.pk, "name": c.name} for c in exc.corpora]}
    return api.create_response(request, body, status=exc.status)


@api.exception_handler(PermissionDenied)
def _denied(request, exc):
    from webapp.audit.log import record

    record(request.user, AuditEvent.Action.PERMISSION_DENIED, None, path=request.path, reason=str(exc))
    return api.create_response(request, {"detail": str(exc) or "Not allowed."}, status=403)


@api.exception_handler(Http404)
def _missing(request, exc):
    return api.create_response(request, {"detail": "Not found."}, status=404)
