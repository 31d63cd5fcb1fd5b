"""The app's URL patterns, for the tests that walk every page (the access matrix, the language walk)."""

from django.urls import URLPattern, URLResolver, get_resolver


def named_routes(patterns=None, prefix="", namespace=""):
    """(route, name with its namespace) of every named URL pattern."""
    for p in patterns if patterns is not None else get_resolver().url_patterns:
        if isinstance(p, URLResolver):
            inner = f"{namespace}:{p.namespace}" if namespace and p.namespace else (p.namespace or namespace)
            yield from named_routes(p.url_patterns, prefix + str(p.pattern), inner or "")
        elif isinstance(p, URLPattern) and p.name:
            yield prefix + str(p.pattern), f"{namespace}:{p.name}" if namespace else p.name
