"""Helpers that need no Django: plain functions and dataclasses the apps share, tested with plain
unit tests under tests/webapp/lib/. Nothing here imports django, a model or a setting; callers
pass what a helper needs (a folder, a limit, a fallback)."""
