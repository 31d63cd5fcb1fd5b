"""The IdP-group to project-role mapping, as plain functions."""

import json

import pytest

from webapp.accounts.oidc_config import GroupRolesError, grants_for_groups, origin, parse_group_roles

MAPPING = parse_group_roles(
    '{"ward-doctors": "icu:clinician", "research-team": ["icu:researcher", "ed:researcher"], "dsm-admins": "icu:admin"}'
)


def test_groups_grant_the_project_roles_they_map_to_and_other_groups_nothing():
    assert grants_for_groups(["all-staff", "ward-doctors", "dsm-admins"], MAPPING) == {
        ("icu", "clinician"),
        ("icu", "admin"),
    }
    assert grants_for_groups(["all-staff"], MAPPING) == frozenset()


def test_a_group_may_grant_roles_in_several_projects():
    assert grants_for_groups(["research-team"], MAPPING) == {("icu", "researcher"), ("ed", "researcher")}


def test_a_single_group_name_or_a_missing_claim_is_read_safely():
    assert grants_for_groups("ward-doctors", MAPPING) == {("icu", "clinician")}
    assert grants_for_groups(None, MAPPING) == frozenset()
    assert grants_for_groups([{"odd": 1}, 7], MAPPING) == frozenset()


def test_an_empty_mapping_is_allowed_and_maps_nothing():
    assert parse_group_roles("") == {}
    assert parse_group_roles("{}") == {}


def test_a_role_that_is_not_one_of_the_apps_is_refused_naming_the_group():
    with pytest.raises(GroupRolesError, match="'ward' to 'icu:superuser'"):
        parse_group_roles('{"ward": "icu:superuser"}')


def test_a_role_without_its_project_is_refused_saying_the_form():
    with pytest.raises(GroupRolesError, match="a value is 'project-slug:role'"):
        parse_group_roles('{"ward": "clinician"}')


def test_origin_is_scheme_and_host():
    assert origin("https://login.microsoftonline.com/t/oauth2/v2.0/logout") == "https://login.microsoftonline.com"
    assert origin("") == ""


def test_every_role_of_the_enum_may_be_granted_and_no_other():
    from webapp.projects.roles import Role

    mapping = parse_group_roles(json.dumps({f"group-{role}": f"icu:{role}" for role in Role}))
    assert {grant for grants in mapping.values() for grant in grants} == {("icu", role.value) for role in Role}
    with pytest.raises(GroupRolesError, match="a role is one of " + ", ".join(Role)):
        parse_group_roles('{"ward": "icu:owner"}')
