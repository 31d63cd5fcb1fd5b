"""Helpers that need no Django: plain functions and dataclasses the apps share, tested with plain
unit tests under tests/webapp/lib/. Nothing here imports django, a model, a setting or an app;
callers pass what a helper needs (a folder, a limit, a fallback). `make lint` holds it to that
(.importlinter, "webapp.lib imports no Django"). A helper that needs Django lives beside it:
the database helpers in webapp/db/ (COPY, planner statistics), the files web and workers share
in webapp/shared_files.py, and a rule of one concept in the app that owns it."""
