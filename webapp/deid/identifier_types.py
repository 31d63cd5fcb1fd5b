"""The identifier types in words: ml.deid.types.TYPES ("NAME", "NHS_NUMBER", ...) are the codes the
detector, the counts, the tags in the text ("[NAME]"), the API and the audit log use; a page shows
each by its label in the reader's language, with the code beside it for a curator who reads the tags
or the API. This is the one table of them (a test checks that it names every type of ml.deid). A
code not listed (a type of an older detector) is shown as stored.
"""

from django.utils import translation as django_translation

from webapp.lib.known_text import pgettext

LABELS = {
    "NAME": pgettext("identifier type", "Name"),
    "CODICE_FISCALE": pgettext("identifier type", "Italian tax code"),
    "DNI_NIE": pgettext("identifier type", "Spanish identity number (DNI/NIE)"),
    "NHS_NUMBER": pgettext("identifier type", "NHS number"),
    "SSN": pgettext("identifier type", "US social security number"),
    "PHONE": pgettext("identifier type", "Phone number"),
    "EMAIL": pgettext("identifier type", "Email address"),
    "URL": pgettext("identifier type", "Web address"),
    "IP_ADDRESS": pgettext("identifier type", "IP address"),
    "IBAN": pgettext("identifier type", "Bank account (IBAN)"),
    "ADDRESS": pgettext("identifier type", "Postal address"),
    "DATE": pgettext("identifier type", "Date"),
    "AGE": pgettext("identifier type", "Age"),
    "RECORD_NUMBER": pgettext("identifier type", "Record or accession number"),
    "DENY_LIST": pgettext("identifier type", "Deny-list term"),
}


def label(code, translation=django_translation):
    """The type's label in the active language (`translation`: django.utils.translation or what has
    its pgettext); the code as stored when it is not a known type."""
    known = LABELS.get(code) if isinstance(code, str) else None
    return code if known is None else translation.pgettext(known.context, known.template)


def choices(codes) -> list[tuple[str, str]]:
    """(code, label) of each code, for a chooser."""
    return [(code, label(code)) for code in codes]
