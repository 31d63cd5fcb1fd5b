"""What every app's API router shares (each app's router is its `api.py`, mounted under /api/ by
webapp.api.api): the request bodies' base classes, the error answer, a page's form as one 400,
a download's zip.

A body is strict: a field it does not know is refused by name (a page's field name such as
`limit` where the API says `note_filter.limit` launches nothing), and a number is a JSON whole
number where a whole number is asked (`1e30` or `"3"` is refused, never rounded or read).
A launch carries `confirm`: a launch the pages would ask to confirm (webapp.lifecycle.estimates)
needs `"confirm": true` by API too, else a 409 that states the estimate. A launch whose data
leaves (a dataset build, a training run) carries `confirm_identifiable` too: a project admin's
`true` lets data of a corpus that is not de-identified go (webapp.deid.gate, audited); without it
such a launch is a 409 naming the corpora, and anyone else's `true` a 403.

Every refusal answers `{"detail": "..."}` (`Error`); a 400 for a body or parameter that does not
validate adds pydantic's `errors`, a 409 may add an `estimate` or the `corpora` that may not leave
(webapp.lifecycle.schemas.Conflict). Below every app: imports no app."""

from django.http import StreamingHttpResponse
from ninja import Schema
from ninja.errors import HttpError
from pydantic import ConfigDict, Field


class Body(Schema):
    model_config = ConfigDict(extra="forbid", strict=True)


class LaunchBody(Body):
    confirm: bool = False  # true: launch even when the estimate is above the pages' confirmation threshold


class ReleaseBody(LaunchBody):
    confirm_identifiable: bool = False  # a project admin's true: let data that is not de-identified go (audited)


class Error(Schema):
    """Every refusal: 400 (what is wrong, by field), 401, 403, 404, 409, 429."""

    detail: str = Field(description="What was refused and why, in words.")
    errors: list[dict] | None = Field(None, description="A 400 of validation: pydantic's own list, for programs.")


def validated(form):
    """The page's own form, filled from a JSON body: one validation for pages and API. Its
    problems come back as one 400 naming each field, as the page shows them beside the fields."""
    if not form.is_valid():
        said = [
            f"{field}: {message}" if field != "__all__" else message
            for field, messages in form.errors.items()
            for message in messages
        ]
        raise HttpError(400, " ".join(said))
    return form


def zip_download(stream, filename: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(stream, content_type="application/zip")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def download(content_type: str, what: str) -> dict:
    """An operation's `openapi_extra` for a file answer (a zip, CSV, JSONL): its 200 in the
    OpenAPI document, binary of that type."""
    content = {content_type: {"schema": {"type": "string", "format": "binary"}}}
    return {"responses": {200: {"description": what, "content": content}}}
