"""The gate before anything leaves: the one place that decides whether the notes' data may go.

Every way data leaves the server asks here first, naming the corpora its data comes from: a
dataset build and build again (its examples are the notes' text), a dataset download or export
folder, an annotation-tool export, the review team's export, a training launch (a model can
memorise identifiers, and its run may go to MLflow), and the API's downloads, exports and launches.

- Every corpus `deidentified` (imported through the de-identifier, made by it from another corpus,
  or marked so by a project admin): it passes; nothing more is recorded here.
- Otherwise it is refused (`Refused`, status 409), the reason naming the corpora: "Corpus X is not
  de-identified: de-identify it, or a project admin may confirm that its data may leave as it is."
- Unless the user is an admin of the project of each such corpus AND confirmed
  (`confirm_identifiable`): it passes, and one RELEASE_IDENTIFIABLE audit row says what was let go
  (the action, the object, the corpora's ids and names; never text).
- A confirmation from anyone else is refused (status 403), never taken.

The command line acts for no user: an operator with the server's shell, who may confirm with the
command's own `--confirm-identifiable` flag, audited the same way (actor "cli:<os user>").

A training run keeps its confirmation where MLflow logging finds it: the RELEASE_IDENTIFIABLE row
of the run itself (`released`). A run whose data is not de-identified and whose launch no admin
confirmed is never logged to MLflow (webapp.integrations.mlflow_log).

Marking a corpus de-identified (its notes were de-identified before they were imported) is a
project admin's, confirmed, and audited (MARK_DEIDENTIFIED); un-marking too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from django.db import transaction
from django.utils.translation import gettext as _

from webapp.audit.log import record
from webapp.audit.models import AuditEvent
from webapp.projects.roles import Role, roles_of

CONFIRM_FIELD = "confirm_identifiable"  # the form field, query parameter and API body field
TRUE_WORDS = ("1", "true", "on", "yes")


class Refused(Exception):
    """Data that is not de-identified may not leave (409: a project admin may confirm), or the
    user who confirmed may not (403). The message names the corpora, never their notes."""

    def __init__(self, reason: str, *, status: int, corpora=()):
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.corpora = tuple(corpora)


def is_operator(actor) -> bool:
    """The command line (no user: None or a label such as "command line")."""
    return not hasattr(actor, "is_authenticated")


def is_project_admin(actor, project_id) -> bool:
    """An admin of the project (a site admin is one of every project). An anonymous visitor never."""
    if is_operator(actor):
        return False
    return Role.ADMIN in roles_of(actor, project_id)


def confirmed(data: Mapping | None) -> bool:
    """Whether a form's or a query's data ticked the confirmation."""
    if not data:
        return False
    return str(data.get(CONFIRM_FIELD, "")).strip().lower() in TRUE_WORDS


@dataclass(frozen=True)
class Gate:
    """What the gate says about some corpora for one actor: pages show `reason` and, where
    `may_confirm`, the checkbox "Let it leave although ..."."""

    corpora: tuple
    pending: tuple  # the corpora that are not de-identified
    may_confirm: bool  # the actor is an admin of each pending corpus's project (or the command line)

    @property
    def open(self) -> bool:
        return not self.pending

    @property
    def names(self) -> str:
        return ", ".join(corpus.name for corpus in self.pending)

    @property
    def reason(self) -> str:
        if self.open:
            return ""
        if len(self.pending) == 1:
            return _(
                "Corpus %(names)s is not de-identified: de-identify it, or a project admin may confirm "
                "that its data may leave as it is."
            ) % {"names": self.names}
        return _(
            "Corpora %(names)s are not de-identified: de-identify them, or a project admin may confirm "
            "that their data may leave as they are."
        ) % {"names": self.names}

    @property
    def confirm_label(self) -> str:
        """The checkbox's words."""
        if len(self.pending) == 1:
            return _("Let it leave although corpus %(names)s is not de-identified (recorded in the audit log)") % {
                "names": self.names
            }
        return _("Let it leave although corpora %(names)s are not de-identified (recorded in the audit log)") % {
            "names": self.names
        }

    def check(self, actor, confirm: bool = False, what: str = "") -> bool:
        """Pass (True: only by the admin's confirmation, to be recorded) or raise Refused. A
        confirmation by someone who may not give it is audited as a refused permission."""
        if self.open:
            return False
        if not confirm:
            raise Refused(self.reason, status=409, corpora=self.pending)
        if not self.may_confirm:
            record(
                actor,
                AuditEvent.Action.PERMISSION_DENIED,
                None,
                reason="confirmed that data which is not de-identified may leave, without being a project admin",
                what=what,
                corpora=[corpus.pk for corpus in self.pending],
            )
            raise Refused(
                self.reason + " " + _("Only an admin of the project may confirm it; your confirmation was not taken."),
                status=403,
                corpora=self.pending,
            )
        return True

    def record(self, actor, what: str, obj, **details) -> AuditEvent:
        """The RELEASE_IDENTIFIABLE row of a confirmed passage: the action, the object, the corpora."""
        return record(
            actor,
            AuditEvent.Action.RELEASE_IDENTIFIABLE,
            obj,
            what=what,
            corpora=[corpus.pk for corpus in self.pending],
            corpus_names=[corpus.name for corpus in self.pending],
            **details,
        )


def gate_for(corpora: Iterable, actor) -> Gate:
    """The gate for data from `corpora` (Corpus objects; None and repeats are left out)."""
    unique = {corpus.pk: corpus for corpus in corpora if corpus is not None}
    chosen = tuple(unique[pk] for pk in sorted(unique))
    pending = tuple(corpus for corpus in chosen if not corpus.deidentified)
    may = is_operator(actor) or all(is_project_admin(actor, corpus.project_id) for corpus in pending)
    return Gate(chosen, pending, bool(pending) and may)


def release(corpora: Iterable, actor, confirm: bool, *, what: str, obj, **details) -> Gate:
    """Let data of `corpora` leave as `what` (e.g. "dataset download") of `obj`, or raise Refused.
    A passage on the admin's confirmation writes its RELEASE_IDENTIFIABLE row now."""
    gate = gate_for(corpora, actor)
    if gate.check(actor, confirm, what):
        gate.record(actor, what, obj, **details)
    return gate


def released(obj) -> bool:
    """Whether an admin (or the command line) let `obj`'s data leave although it is not
    de-identified: its RELEASE_IDENTIFIABLE row (a training run's launch, for MLflow)."""
    return AuditEvent.objects.filter(
        action=AuditEvent.Action.RELEASE_IDENTIFIABLE, object_type=obj._meta.label, object_id=str(obj.pk)
    ).exists()


# ---------------------------------------------------------------- marking a corpus de-identified


def mark_deidentified(corpus, actor, *, confirm: bool, deidentified: bool = True) -> bool:
    """A project admin says the corpus's notes were de-identified before they were imported
    (`deidentified=False`: takes it back). Marking needs the confirmation; both are audited
    (MARK_DEIDENTIFIED). Returns whether the corpus changed; raises Refused."""
    if not is_operator(actor) and not is_project_admin(actor, corpus.project_id):
        raise Refused(
            _("Only an admin of the project may mark corpus %(corpus)s as de-identified or not.")
            % {"corpus": corpus.name},
            status=403,
            corpora=[corpus],
        )
    if deidentified and not confirm:
        raise Refused(
            _(
                "Confirm that the notes of corpus %(corpus)s were de-identified before they were imported: "
                "once marked, its data leaves without asking."
            )
            % {"corpus": corpus.name},
            status=409,
            corpora=[corpus],
        )
    with transaction.atomic():
        changed = (
            # The corpus's own class: this package sits below the corpus app and imports none of it
            type(corpus)
            .objects.filter(pk=corpus.pk)
            .exclude(deidentified=deidentified)
            .update(deidentified=deidentified)
        )
        if changed:
            record(actor, AuditEvent.Action.MARK_DEIDENTIFIED, corpus, deidentified=deidentified, name=corpus.name)
    corpus.deidentified = deidentified
    return bool(changed)
