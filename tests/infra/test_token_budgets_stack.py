"""Token budgets in the deployment (`tenant_token_budgets`): what the condenser and get_memory are
told, the two alarms of each tenant named, what the roles may do with the budget items, and the
errors of the key.

Three stacks, each synthesized once per process (`synthesize_once`): the default (`default_synth`,
no budget), `{"acme": 200000, "*": 50000}`, and tenants whose ids hold `.@:-`, given on the command
line as the CDK CLI passes them (a JSON string).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest
from aws_cdk.assertions import Match

from hippocampus.contracts.budgets import TokenBudgets
from hippocampus.contracts.limits import IDENTIFIER_PATTERN
from hippocampus.observability import TENANT_DIMENSION, TENANT_JOBS_DEFERRED, TENANT_USAGE
from infra import monitoring
from infra.config import MAX_BUDGETED_TENANTS, ConfigError, load_config
from infra.monitoring import tenant_construct_id
from infra.specs import ResourceNames, function_environments
from tests.infra.helpers import (
    FUNCTIONS,
    Synth,
    acknowledgments,
    assert_acknowledgments_used_and_explained,
    assert_cfn_lint_clean,
    assert_nag_clean,
    cli_context,
    context_with,
    granted,
    render,
    synthesize_once,
)

VARIABLE = "MEMORY_TENANT_DAILY_TOKENS"
BUDGETS = {"acme": 200_000, "*": 50_000}
BUDGETS_JSON = '{"*":50000,"acme":200000}'  # compact, keys sorted
TOLD = ("condenser", "get_memory")  # the gate and the release; the usage route
# Tenant ids that differ only by the characters a construct id drops.
ODD_TENANTS = {"acme.eu": 1_000, "acme-eu": 2_000, "acme@eu:1": 3_000, "acmeeu": 4_000}
DEFAULT_ALARMS = 8


@pytest.fixture(scope="module")
def budgets(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    result = synthesize_once(tmp_path_factory, context_with(tenant_token_budgets=BUDGETS))
    assert result.error is None, result.error
    return result


@pytest.fixture(scope="module")
def odd_tenants(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    override = '{"acme.eu": 1000, "acme-eu": 2000, "acme@eu:1": 3000, "acmeeu": 4000}'
    result = synthesize_once(tmp_path_factory, cli_context(tenant_token_budgets=override))
    assert result.error is None, result.error
    return result


def tenant_alarms(synth: Synth) -> dict[str, dict[str, Any]]:
    """The tenants' alarms: name → properties."""
    found = synth.template.find_resources(
        "AWS::CloudWatch::Alarm", {"Properties": {"AlarmName": Match.string_like_regexp("-tenant-")}}
    )
    return {alarm["Properties"]["AlarmName"]: alarm["Properties"] for alarm in found.values()}


def dashboard_body(synth: Synth) -> str:
    (dashboard,) = synth.template.find_resources("AWS::CloudWatch::Dashboard").values()
    return render(dashboard["Properties"]["DashboardBody"])


def tenant_metric_stat(name: str, tenant: str, period: int) -> dict[str, Any]:
    return {
        "Metric": {
            "Namespace": "Hippocampus",
            "MetricName": name,
            "Dimensions": [{"Name": "service", "Value": "hippocampus"}, {"Name": "tenant", "Value": tenant}],
        },
        "Period": period,
        "Stat": "Sum",
    }


def error_of(context: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        load_config(context)
    return str(caught.value)


# ----------------------------------------------------------------------------- without CDK


def test_the_condenser_and_get_memory_are_told_the_budgets_and_nothing_is_told_without_them() -> None:
    resources = ResourceNames("t", "b", "q", "d")
    none = function_environments(load_config({}), resources)
    assert [name for name, env in none.items() if VARIABLE in env] == []
    told = function_environments(load_config({"hippocampus": {"tenant_token_budgets": BUDGETS}}), resources)
    assert {name: env[VARIABLE] for name, env in told.items() if VARIABLE in env} == dict.fromkeys(
        TOLD, BUDGETS_JSON
    )
    # What the functions parse at cold start: acme's own budget, "*" for every other tenant.
    parsed = TokenBudgets.parse(told["condenser"][VARIABLE])
    assert (dict(parsed.by_tenant), parsed.default) == ({"acme": 200_000}, 50_000)
    # Nothing else changes.
    for name, env in told.items():
        assert {k: v for k, v in env.items() if k != VARIABLE} == none[name], name


def test_the_alarms_watch_the_metrics_the_condenser_emits() -> None:
    assert monitoring.TENANT_DIMENSION == TENANT_DIMENSION
    assert {monitoring.TENANT_PROMPT_TOKENS, monitoring.TENANT_COMPLETION_TOKENS} < set(TENANT_USAGE)
    assert monitoring.TENANT_JOBS_DEFERRED == TENANT_JOBS_DEFERRED


def test_construct_ids_of_tenants_are_stable_and_never_shared() -> None:
    assert tenant_construct_id("acme") == "acme"
    assert tenant_construct_id("a.b@c:d-e") == "a_2eb_40c_3ad_2de"
    ids = ["a.b", "a-b", "a@b", "a:b", "ab", "AB", "a_2eb", "a.b.", "a..b"]
    assert len({tenant_construct_id(tenant) for tenant in ids}) == len(ids)
    assert all(re.fullmatch(r"[A-Za-z0-9_]+", tenant_construct_id(tenant)) for tenant in ids)


def test_a_json_object_given_on_the_command_line_is_read() -> None:
    config = load_config(cli_context(tenant_token_budgets='{"acme": 200000, "*": 50000}'))
    assert config.tenant_token_budgets == BUDGETS
    assert config.tenant_daily_tokens == BUDGETS_JSON
    assert config.budgeted_tenants == {"acme": 200_000}
    assert load_config({}).tenant_token_budgets == {} and load_config({}).tenant_daily_tokens is None


@pytest.mark.parametrize(
    ("budgets", "expected"),
    [
        ({"acme": 0}, "hippocampus.tenant_token_budgets.acme: Input should be greater than or equal to 1"),
        ({"*": -5}, "hippocampus.tenant_token_budgets.*: Input should be greater than or equal to 1"),
        ({"acme": 1.5}, "hippocampus.tenant_token_budgets.acme: Input should be a valid integer"),
        ({"acme": 200000.0}, "hippocampus.tenant_token_budgets.acme: Input should be a valid integer"),
        ({"acme": "200000"}, "hippocampus.tenant_token_budgets.acme: Input should be a valid integer"),
        ({"acme": True}, "hippocampus.tenant_token_budgets.acme: Input should be a valid integer"),
        ({"bad id": 5}, "hippocampus.tenant_token_budgets: tenant id 'bad id' must match"),
        ({"-acme": 5}, "hippocampus.tenant_token_budgets: tenant id '-acme' must match"),
        ({"acme\n": 5}, "hippocampus.tenant_token_budgets: tenant id 'acme\\n' must match"),
        ({"": 5}, "hippocampus.tenant_token_budgets: tenant id '' must match"),
        ({"**": 5}, "hippocampus.tenant_token_budgets: tenant id '**' must match"),
        (200000, "hippocampus.tenant_token_budgets: must be an object of tenant id to tokens"),
        ("acme", "hippocampus.tenant_token_budgets: must be an object of tenant id to tokens"),
        ([["acme", 5]], "hippocampus.tenant_token_budgets: must be an object of tenant id to tokens"),
    ],
)
def test_a_bad_budget_or_tenant_id_is_refused_naming_the_key(budgets: object, expected: str) -> None:
    message = error_of({"hippocampus": {"tenant_token_budgets": budgets}})
    assert message.startswith(f"invalid deployment configuration: {expected}"), message
    if "must match" in expected:
        assert IDENTIFIER_PATTERN in message


def test_too_many_tenants_or_too_long_a_variable_is_refused_naming_the_key() -> None:
    many = {f"t{i}": 1 for i in range(MAX_BUDGETED_TENANTS + 1)}
    assert f"hippocampus.tenant_token_budgets: names {MAX_BUDGETED_TENANTS + 1} tenants: at most" in error_of(
        {"hippocampus": {"tenant_token_budgets": many}}
    )
    # "*" is no tenant named: the most named tenants and "*" load.
    most = {f"t{i}": 1 for i in range(MAX_BUDGETED_TENANTS)} | {"*": 1}
    assert len(load_config({"hippocampus": {"tenant_token_budgets": most}}).budgeted_tenants) == len(most) - 1
    long_ids = {"x" * 120 + str(i): 1_000_000 for i in range(20)}
    message = error_of({"hippocampus": {"tenant_token_budgets": long_ids}})
    assert "hippocampus.tenant_token_budgets: is " in message and VARIABLE in message, message


# ----------------------------------------------------------------------------- the default stack


def test_by_default_no_function_is_told_a_budget_and_no_tenant_has_an_alarm(default_synth: Synth) -> None:
    for name in FUNCTIONS:
        assert VARIABLE not in default_synth.environment(name), name
    assert tenant_alarms(default_synth) == {}
    default_synth.template.resource_count_is("AWS::CloudWatch::Alarm", DEFAULT_ALARMS)
    body = dashboard_body(default_synth)
    assert TENANT_JOBS_DEFERRED not in body and "Token budgets" not in body


# ----------------------------------------------------------------------------- {"acme": 200000, "*": 50000}


def test_the_condenser_and_get_memory_are_told_the_budgets_exactly(budgets: Synth) -> None:
    for name in FUNCTIONS:
        assert budgets.environment(name).get(VARIABLE) == (BUDGETS_JSON if name in TOLD else None), name


def test_acme_alarms_when_its_tokens_reach_its_budget(budgets: Synth) -> None:
    (topic,) = budgets.template.find_resources("AWS::SNS::Topic")
    budgets.template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "AlarmName": "hippocampus-dev-tenant-acme-token-budget",
            "Metrics": [
                {"Id": Match.any_value(), "Expression": "prompt + completion", "ReturnData": True},
                {
                    "Id": "prompt",
                    "MetricStat": tenant_metric_stat("TenantPromptTokens", "acme", 86400),
                    "ReturnData": False,
                },
                {
                    "Id": "completion",
                    "MetricStat": tenant_metric_stat("TenantCompletionTokens", "acme", 86400),
                    "ReturnData": False,
                },
            ],
            "Threshold": 200_000,
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            "EvaluationPeriods": 1,
            "TreatMissingData": "notBreaching",
            "AlarmActions": [{"Ref": topic}],
            "OKActions": [{"Ref": topic}],
            # The default sliding window: the 24 hours before each evaluation (docs/operations.md).
            "EvaluationWindow": Match.absent(),
        },
    )


def test_acme_alarms_when_its_turns_are_parked(budgets: Synth) -> None:
    (topic,) = budgets.template.find_resources("AWS::SNS::Topic")
    budgets.template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "AlarmName": "hippocampus-dev-tenant-acme-jobs-deferred",
            "Namespace": "Hippocampus",
            "MetricName": "TenantJobsDeferred",
            "Dimensions": [{"Name": "service", "Value": "hippocampus"}, {"Name": "tenant", "Value": "acme"}],
            "Statistic": "Sum",
            "Period": 300,
            "Threshold": 1,
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
            "EvaluationPeriods": 1,
            "TreatMissingData": "notBreaching",
            "AlarmActions": [{"Ref": topic}],
            "OKActions": [{"Ref": topic}],
        },
    )


def test_only_the_named_tenant_has_alarms_not_every_other_one(budgets: Synth) -> None:
    assert set(tenant_alarms(budgets)) == {
        "hippocampus-dev-tenant-acme-token-budget",
        "hippocampus-dev-tenant-acme-jobs-deferred",
    }
    budgets.template.resource_count_is("AWS::CloudWatch::Alarm", DEFAULT_ALARMS + 2)
    assert "*" not in render(list(tenant_alarms(budgets).values()))


def test_the_dashboard_shows_parked_turns_of_every_tenant_and_acmes_alarms(budgets: Synth) -> None:
    body = dashboard_body(budgets)
    search = "SEARCH('{Hippocampus,service,tenant} MetricName=\\\"TenantJobsDeferred\\\"', 'Sum', 300)"
    assert search in body
    widget = re.search(r'"title":"Token budgets","alarms":\[([^]]*)\]', body)
    assert widget is not None
    arns = widget.group(1).split(",")
    alarm_ids = budgets.template.find_resources(
        "AWS::CloudWatch::Alarm", {"Properties": {"AlarmName": Match.string_like_regexp("-tenant-acme-")}}
    )
    assert sorted(arns) == sorted(f'"${{{logical_id}.Arn}}"' for logical_id in alarm_ids)


def test_budgets_grant_nothing_more_the_roles_already_cover_the_budget_items(
    budgets: Synth, default_synth: Synth
) -> None:
    """The usage item, the ledger and the registry are items of the memory table, which the roles
    already use table-wide: TransactWriteItems is authorised by the item actions it carries."""
    for name in FUNCTIONS:
        assert granted(budgets, budgets.role_id(name)) == granted(default_synth, default_synth.role_id(name))
    table = "${" + budgets.logical_id("AWS::DynamoDB::Table", {}) + ".Arn}"
    needs = {
        # The gate: usage GetItem and UpdateItem (ADD); deferral: Query, BatchGetItem, Put/Update in a
        # transaction; the release: Query of the registry and the ledgers, Delete/Update/Put.
        "condenser": {"GetItem", "Query", "BatchGetItem", "PutItem", "UpdateItem", "DeleteItem"},
        # The usage route: the usage item and the registry's count.
        "get_memory": {"GetItem"},
        # A user's deletion erases the user's parked turns: Query, then Delete and Update together.
        "ingest": {"Query", "DeleteItem", "UpdateItem"},
    }
    for name, actions in needs.items():
        grants = granted(budgets, budgets.role_id(name))
        for action in actions:
            assert table in grants.get(f"dynamodb:{action}", set()), (name, action)


def test_budgets_pass_cdk_nag_and_cfn_lint_with_no_new_acknowledgment(
    budgets: Synth, default_synth: Synth
) -> None:
    assert_nag_clean(budgets)
    assert_acknowledgments_used_and_explained(budgets)
    assert_cfn_lint_clean(budgets)

    def rules(synth: Synth) -> Counter[str]:
        return Counter(re.sub(r"<[^>]+>", "<ref>", rule_id) for _, rule_id, _ in acknowledgments(synth))

    assert rules(budgets) == rules(default_synth)


# ----------------------------------------------------------------------------- tenant ids with .@:-


def test_tenants_whose_ids_differ_in_punctuation_get_their_own_alarms(odd_tenants: Synth) -> None:
    alarms = tenant_alarms(odd_tenants)
    assert set(alarms) == {
        f"hippocampus-dev-tenant-{tenant}-{kind}"
        for tenant in ODD_TENANTS
        for kind in ("token-budget", "jobs-deferred")
    }
    for tenant, budget in ODD_TENANTS.items():
        properties = alarms[f"hippocampus-dev-tenant-{tenant}-token-budget"]
        assert properties["Threshold"] == budget
        dimensions = {m["MetricStat"]["Metric"]["Dimensions"][1]["Value"] for m in properties["Metrics"][1:]}
        assert dimensions == {tenant}
    assert odd_tenants.environment("condenser")[VARIABLE] == (
        '{"acme-eu":2000,"acme.eu":1000,"acme@eu:1":3000,"acmeeu":4000}'
    )


def test_odd_tenant_ids_pass_cfn_lint(odd_tenants: Synth) -> None:
    assert_nag_clean(odd_tenants)
    assert_cfn_lint_clean(odd_tenants)
