"""Kept mappings: one patient's original -> surrogate pairs, encrypted, merged as notes are
de-identified (a project whose policy says keep_mapping).

The pairs are one Fernet token per (project, patient hash) row (deid.SurrogateMapping), the JSON
`{"pairs": [[original, surrogate], ...]}` encrypted with DEID_MAPPING_KEY; the patient is named
by the keyed hash its notes' metadata carry (webapp.deid.policy.patient_hash), never by value.
The key comes from the environment only: without it nothing is kept and a policy that asks to
keep is refused (webapp.deid_ops.forms). Several keys, comma-separated: the first encrypts, each
decrypts (MultiFernet), so a key is rotated by putting the new one first; a row is encrypted
with the new key the next time pairs are merged into it.

Nothing here logs; an error names the row's id at most. A mapping never leaves with an export
and has no page: it is read by code that must undo a surrogate (a hospital's re-identification
under its own rules), with the key in hand.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext as _

from webapp.deid.models import SurrogateMapping


class MappingKeyMissing(RuntimeError):
    """A mapping is to be kept or read, but DEID_MAPPING_KEY is not set."""

    def __init__(self):
        super().__init__(
            _(
                "DEID_MAPPING_KEY is not set: the original -> surrogate mapping cannot be encrypted. Set it (a "
                "Fernet key) on the web app and every worker, or turn 'keep the mapping' off in the project's policy."
            )
        )


def key_set() -> bool:
    return bool(_keys())


def _keys() -> list[str]:
    return [key.strip() for key in (settings.DEID_MAPPING_KEY or "").split(",") if key.strip()]


def _fernet():
    from cryptography.fernet import Fernet, MultiFernet

    keys = _keys()
    if not keys:
        raise MappingKeyMissing
    return MultiFernet([Fernet(key) for key in keys])


def encrypt(pairs: Iterable[tuple[str, str]]) -> bytes:
    body = json.dumps({"pairs": [[str(o), str(s)] for o, s in pairs]}, ensure_ascii=False)
    return _fernet().encrypt(body.encode("utf-8"))


def decrypt(token: bytes) -> list[tuple[str, str]]:
    """The pairs of a token; cryptography's InvalidToken when no key given decrypts it."""
    body = json.loads(_fernet().decrypt(bytes(token)).decode("utf-8"))
    return [(original, surrogate) for original, surrogate in body["pairs"]]


def merge(project_id: int, patient_hash: str, pairs: Iterable[tuple[str, str]]) -> bool:
    """Add `pairs` to the patient's row (made if missing), in the caller's transaction (or one of
    its own): the row is locked, decrypted, extended, encrypted again. Returns whether it changed."""
    new = [(str(o), str(s)) for o, s in pairs if str(o)]
    if not new:
        return False
    with transaction.atomic():
        row = SurrogateMapping.objects.select_for_update().filter(project_id=project_id, patient_hash=patient_hash)
        row = row.first()
        if row is None:
            SurrogateMapping.objects.get_or_create(
                project_id=project_id, patient_hash=patient_hash, defaults={"ciphertext": encrypt([])}
            )
            row = SurrogateMapping.objects.select_for_update().get(project_id=project_id, patient_hash=patient_hash)
        kept = decrypt(row.ciphertext)
        known = set(kept)
        added = [pair for pair in dict.fromkeys(new) if pair not in known]
        if not added:
            return False
        row.ciphertext = encrypt(kept + added)
        row.save(update_fields=["ciphertext", "updated"])
    return True


def pairs_of(project_id: int, patient_hash: str) -> list[tuple[str, str]]:
    """The kept pairs of one patient ([] when none are kept). Needs the key."""
    row = SurrogateMapping.objects.filter(project_id=project_id, patient_hash=patient_hash).first()
    return decrypt(row.ciphertext) if row is not None else []
