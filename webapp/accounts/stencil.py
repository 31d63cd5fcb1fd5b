"""A page fragment the same for every request of a key but for a few values: rendered once per
process and key with a stand-in in place of each such value, then given each request's values.

Rendering a template costs a page its URL reversals and translations every time, although the
top bar or a dialog differs between requests only in the user's name, the CSRF token or an id.
`Stencil(name).html(key, context, fills)` renders template `name` with `context` the first time a
key is asked for (the key must hold everything the context says: the language, the script
prefix, the role flags; the context built from the key alone), keeps it, and returns it with each
stand-in replaced by the request's markup in `fills` (already escaped). Keys are few (languages x
menus x flags), so what is kept stays small.
"""

import threading
from collections.abc import Callable

from django.template.defaulttags import CsrfTokenNode
from django.template.loader import get_template
from django.utils.safestring import SafeString, mark_safe


def stand_in(name: str) -> str:
    """A value no real one takes (NUL characters), in place of `name` while the stencil renders."""
    return f"\x00dsm-stand-in-{name}\x00"


CSRF_TOKEN = stand_in("csrf-token")
CSRF_INPUT = CsrfTokenNode().render({"csrf_token": CSRF_TOKEN})  # what {% csrf_token %} writes with it


def csrf_input(context) -> str:
    """The request's own `{% csrf_token %}` markup, for CSRF_INPUT (the request's masked token, the
    one every tag of the page writes: the csrf context processor keeps it)."""
    return CsrfTokenNode().render(context)


class Stencil:
    """`limit`: the most keys kept (the oldest written is dropped first), for keys that are not few."""

    def __init__(self, template_name: str, limit: int | None = None):
        self.template_name = template_name
        self.limit = limit
        self._kept: dict[tuple, str] = {}
        self._lock = threading.Lock()

    def html(self, key: tuple, context: Callable[[], dict], fills: dict[str, str]) -> SafeString:
        found = self._kept.get(key)
        if found is None:
            found = get_template(self.template_name).render(context()).strip()
            with self._lock:
                if self.limit is not None and len(self._kept) >= self.limit:
                    self._kept.pop(next(iter(self._kept)), None)
                self._kept[key] = found
        for standing, value in fills.items():
            found = found.replace(standing, value)
        return mark_safe(found)
