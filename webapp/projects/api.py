"""The API's projects (mounted under /api/ by webapp.api.api): the ones the token may act in."""

from ninja import Router, Schema

from webapp.projects.models import Project

router = Router(tags=["projects"])


class ProjectOut(Schema):
    id: int
    slug: str
    name: str


@router.get("/projects", response=list[ProjectOut], summary="The projects the token may act in")
def list_projects(request):
    return Project.objects.filter(pk__in=list(request.user._dsm_memberships))
