"""The IdP-group to role mapping, as plain functions."""

import pytest

from webapp.accounts.oidc_config import GroupRolesError, origin, parse_group_roles, roles_for_groups

MAPPING = {"ward-doctors": "clinician", "research-team": "researcher", "dsm-admins": "admin"}


def test_groups_grant_the_roles_they_map_to_and_other_groups_nothing():
    assert roles_for_groups(["all-staff", "ward-doctors", "dsm-admins"], MAPPING) == {"clinician", "admin"}
    assert roles_for_groups(["all-staff"], MAPPING) == frozenset()


def test_a_single_group_name_or_a_missing_claim_is_read_safely():
    assert roles_for_groups("research-team", MAPPING) == {"researcher"}
    assert roles_for_groups(None, MAPPING) == frozenset()
    assert roles_for_groups([{"odd": 1}, 7], MAPPING) == frozenset()


def test_an_empty_mapping_is_allowed_and_maps_nothing():
    assert parse_group_roles("") == {}
    assert parse_group_roles("{}") == {}


def test_a_role_that_is_not_one_of_the_apps_is_refused_naming_the_group():
    with pytest.raises(GroupRolesError, match="'ward' to 'superuser'"):
        parse_group_roles('{"ward": "superuser"}')


def test_origin_is_scheme_and_host():
    assert origin("https://login.microsoftonline.com/t/oauth2/v2.0/logout") == "https://login.microsoftonline.com"
    assert origin("") == ""
