"""Forms whose choices (corpora, jobs, datasets, models, tasks) must offer only what the user may
act on: the access layer again, so a crafted POST naming another project's object fails
validation like any unknown choice."""

from webapp.accounts.roles import Capability


class ScopedChoicesForm:
    """Mixin (first among the bases): pass `user=`; every model choice field whose model a project
    owns is limited to the rows where the user has `scope_capability`."""

    scope_capability = Capability.VIEW

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user
        for field in self.fields.values():
            queryset = getattr(field, "queryset", None)
            if queryset is not None and hasattr(queryset.model, "project_paths"):
                field.queryset = queryset.visible_to(user, self.scope_capability)
