"""What every request body of the API shares.

A body is strict: a field it does not know is refused by name (a page's field name such as
`limit` where the API says `note_filter.limit` launches nothing), and a number is a JSON whole
number where a whole number is asked (`1e30` or `"3"` is refused, never rounded or read).
A launch carries `confirm`: a launch the pages would ask to confirm (webapp.lifecycle.estimates)
needs `"confirm": true` by API too, else a 409 that states the estimate. A launch whose data
leaves (a dataset build, a training run) carries `confirm_identifiable` too: a project admin's
`true` lets data of a corpus that is not de-identified go (webapp.deid.gate, audited); without it
such a launch is a 409 naming the corpora, and anyone else's `true` a 403."""

from ninja import Schema
from pydantic import ConfigDict


class Body(Schema):
    model_config = ConfigDict(extra="forbid", strict=True)


class LaunchBody(Body):
    confirm: bool = False  # true: launch even when the estimate is above the pages' confirmation threshold


class ReleaseBody(LaunchBody):
    confirm_identifiable: bool = False  # a project admin's true: let data that is not de-identified leave (audited)
