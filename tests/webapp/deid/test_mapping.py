"""The kept mapping (webapp.deid.mapping): one encrypted row per project and patient hash, pairs
merged once each, the ciphertext holding no value, read back only with the key; a rotated key
re-encrypts a row when pairs are next merged into it; without a key nothing is kept."""

import pytest
from cryptography.fernet import Fernet, InvalidToken

from webapp.deid import mapping
from webapp.deid.models import SurrogateMapping


def test_pairs_are_merged_once_and_encrypted(project, mapping_key):
    assert mapping.merge(project.pk, "a1b2", [("Ottone Zanfrini", "Conte Lombardo")])
    assert mapping.merge(project.pk, "a1b2", [("Ottone Zanfrini", "Conte Lombardo"), ("RIC-123456", "TLU-563447")])
    assert not mapping.merge(project.pk, "a1b2", [("RIC-123456", "TLU-563447")])  # nothing new
    row = SurrogateMapping.objects.get()
    assert b"Zanfrini" not in bytes(row.ciphertext) and b"RIC-123456" not in bytes(row.ciphertext)
    assert mapping.pairs_of(project.pk, "a1b2") == [("Ottone Zanfrini", "Conte Lombardo"), ("RIC-123456", "TLU-563447")]
    assert mapping.pairs_of(project.pk, "other") == []


def test_a_new_key_first_reads_old_rows_and_encrypts_them_anew_on_the_next_merge(project, mapping_key, settings):
    mapping.merge(project.pk, "a1b2", [("Ottone Zanfrini", "Conte Lombardo")])
    new = Fernet.generate_key().decode()
    settings.DEID_MAPPING_KEY = f"{new},{mapping_key}"
    mapping.merge(project.pk, "a1b2", [("RIC-123456", "TLU-563447")])
    token = bytes(SurrogateMapping.objects.get().ciphertext)
    assert Fernet(new.encode()).decrypt(token)  # the new key alone reads it now
    with pytest.raises(InvalidToken):
        Fernet(mapping_key.encode()).decrypt(token)


def test_without_the_key_nothing_is_kept(project, settings):
    settings.DEID_MAPPING_KEY = ""
    assert not mapping.key_set()
    with pytest.raises(mapping.MappingKeyMissing):
        mapping.merge(project.pk, "a1b2", [("Ottone Zanfrini", "Conte Lombardo")])
    assert not SurrogateMapping.objects.exists()
