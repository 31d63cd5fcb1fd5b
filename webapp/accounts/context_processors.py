from webapp.projects.roles import Capability, has_capability, is_site_admin


def roles(request):
    user = getattr(request, "user", None)
    if user is None:
        return {}
    return {"can": {cap.value: has_capability(user, cap) for cap in Capability}, "site_admin": is_site_admin(user)}
