"""Terms never taken for identifiers: clinical eponyms (named after people, so a name finder
takes them for names) and a few words that look like names after a title.

The Detector always keeps these, per language, plus the project's DeidConfig.allow_list.
Matching is case-insensitive, accent-insensitive and on whole findings: a finding whose text is
one of these terms is dropped, and so is a name finding all of whose words are ("Guillain-Barré").

Eponyms that are also common surnames (Wilson, Turner, Gilbert, Barrett, Murphy, Baker) are left
out: an allowed term is kept everywhere, so "Mr Wilson" would stay. A project that wants them adds
them to its own allow-list.
"""

from __future__ import annotations

# eponyms used in all three languages ("morbo di Parkinson", "enfermedad de Crohn", "Crohn's")
EPONYMS = frozenset(
    {
        "Addison",
        "Adson",
        "Alport",
        "Alzheimer",
        "Apgar",
        "Apley",
        "Argyll Robertson",
        "Arnold-Chiari",
        "Asperger",
        "Babinski",
        "Barlow",
        "Barré",
        "Bartter",
        "Basedow",
        "Behçet",
        "Bell",
        "Bence Jones",
        "Blumberg",
        "Bouchard",
        "Braden",
        "Broca",
        "Brown-Séquard",
        "Brugada",
        "Budd-Chiari",
        "Buerger",
        "Burkitt",
        "Charcot",
        "Cheyne-Stokes",
        "Chiari",
        "Child-Pugh",
        "Colles",
        "Creutzfeldt-Jakob",
        "Crigler-Najjar",
        "Crohn",
        "Cushing",
        "Dandy-Walker",
        "De Quervain",
        "Di George",
        "DiGeorge",
        "Down",
        "Dubin-Johnson",
        "Duchenne",
        "Dupuytren",
        "Ehlers-Danlos",
        "Eisenmenger",
        "Epstein-Barr",
        "Fallot",
        "Fanconi",
        "Friedreich",
        "Glasgow",
        "Gleason",
        "Goodpasture",
        "Graves",
        "Guillain",
        "Guillain-Barré",
        "Hashimoto",
        "Heberden",
        "Henoch",
        "Hirschsprung",
        "Hodgkin",
        "Holter",
        "Horner",
        "Huntington",
        "Jakob",
        "Kaposi",
        "Kawasaki",
        "Kernig",
        "Klinefelter",
        "Korsakoff",
        "Kussmaul",
        "Lasègue",
        "Lyme",
        "Mallory-Weiss",
        "Marfan",
        "McBurney",
        "Meckel",
        "Meniere",
        "Ménière",
        "Nikolsky",
        "Paget",
        "Parkinson",
        "Raynaud",
        "Reiter",
        "Reye",
        "Romberg",
        "Schönlein",
        "Sjögren",
        "Stevens-Johnson",
        "Swan-Ganz",
        "Takayasu",
        "Tinel",
        "Tourette",
        "Trendelenburg",
        "Valsalva",
        "Virchow",
        "Von Willebrand",
        "Waldenström",
        "Wegener",
        "Wernicke",
        "Whipple",
        "Willebrand",
        "Wilms",
        "Wolff-Parkinson-White",
        "Zollinger-Ellison",
    }
)

# words that follow a title or role without being a name ("paziente Covid", "patient Zero")
PER_LANGUAGE = {
    "it": frozenset({"Covid", "Medico", "Ospedale", "Reparto", "Pronto Soccorso", "Asl", "Usl"}),
    "es": frozenset({"Covid", "Médico", "Hospital", "Servicio", "Urgencias"}),
    "en": frozenset({"Covid", "Hospital", "Ward", "Zero"}),
}


def default_allow_terms(language: str) -> frozenset[str]:
    """The shipped allow-list for a language: eponyms plus that language's own terms."""
    return EPONYMS | PER_LANGUAGE.get(language, frozenset())
