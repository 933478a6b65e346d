"""The stack's size against CloudFormation's 500 resources (docs/configuration.md "The stack's size"):
budgeted tenants and webhooks are checked together, at the costs infra/config.py states; the largest
configuration it accepts synthesizes within the limit, and one more tenant or webhook is refused.

One stack synthesized here: every setting that adds resources on, tenants and webhooks at the limit,
and version reporting on, as the CDK CLI synthesizes it (its CDKMetadata is a resource too).
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from constructs import IConstruct

from infra.config import (
    MAX_BUDGETED_TENANTS,
    MAX_WEBHOOKS,
    RESOURCES_PER_BUDGETED_TENANT,
    RESOURCES_PER_WEBHOOK,
    SPARE_RESOURCES,
    STACK_MAX_RESOURCES,
    STACK_OTHER_RESOURCES,
    TENANT_AND_WEBHOOK_RESOURCES,
    ConfigError,
    load_config,
)
from tests.infra.helpers import Synth, context_with, synthesize

# Every setting that adds resources to the stack, on; no other setting adds any (a few remove some).
LARGEST_SETTINGS: dict[str, Any] = {
    "pii": "mask",
    "pii_detector": "comprehend",  # three policies (the `patterns` detector adds one layer)
    "snapstart": True,  # a version and an alias of get_memory and recall
    "removal_policy": "destroy",  # the buckets' auto-delete custom resource, its function and role
    "alarm_email": "alarms@example.com",  # its subscription
}
JOINT_KEYS = "hippocampus.tenant_token_budgets and hippocampus.webhooks: "


def tenants(count: int) -> dict[str, int]:
    return {f"tenant-{i}": 1_000 for i in range(count)}


def webhooks(count: int) -> list[dict[str, str]]:
    return [
        {"name": f"hook-{i}", "url": f"https://hooks.example.com/{i}", "secret_name": "hooks/key"}
        for i in range(count)
    ]


def settings(tenant_count: int, webhook_count: int, **others: Any) -> dict[str, Any]:
    return {"tenant_token_budgets": tenants(tenant_count), "webhooks": webhooks(webhook_count), **others}


def cost(tenant_count: int, webhook_count: int) -> int:
    return tenant_count * RESOURCES_PER_BUDGETED_TENANT + webhook_count * RESOURCES_PER_WEBHOOK


def most_tenants(webhook_count: int) -> int:
    """The most tenants named that the config accepts beside this many webhooks."""
    fit = (
        TENANT_AND_WEBHOOK_RESOURCES - webhook_count * RESOURCES_PER_WEBHOOK
    ) // RESOURCES_PER_BUDGETED_TENANT
    return min(MAX_BUDGETED_TENANTS, fit)


# The accepted tenants and webhooks that cost the most resources, with the most webhooks of those.
LARGEST_TENANTS, LARGEST_WEBHOOKS = max(
    ((most_tenants(w), w) for w in range(MAX_WEBHOOKS + 1)), key=lambda pair: (cost(*pair), pair[1])
)


def error_of(values: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as caught:
        load_config({"hippocampus": values})
    return str(caught.value)


def resources_under(construct: IConstruct) -> int:
    return sum(isinstance(child, cdk.CfnResource) for child in construct.node.find_all())


@pytest.fixture(scope="module")
def largest(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    context = context_with(**settings(LARGEST_TENANTS, LARGEST_WEBHOOKS, **LARGEST_SETTINGS))
    result = synthesize(tmp_path_factory.mktemp("cdk-largest"), context | {"aws:cdk:version-reporting": True})
    assert result.error is None, result.error
    return result


# ----------------------------------------------------------------------------- without CDK


def test_the_limit_leaves_the_spare_resources() -> None:
    assert TENANT_AND_WEBHOOK_RESOURCES == STACK_MAX_RESOURCES - SPARE_RESOURCES - STACK_OTHER_RESOURCES
    assert SPARE_RESOURCES >= 20
    # The individual caps no longer fit together; each alone still does.
    assert cost(MAX_BUDGETED_TENANTS, MAX_WEBHOOKS) > TENANT_AND_WEBHOOK_RESOURCES
    assert cost(MAX_BUDGETED_TENANTS, 0) <= TENANT_AND_WEBHOOK_RESOURCES
    assert cost(0, MAX_WEBHOOKS) <= TENANT_AND_WEBHOOK_RESOURCES


@pytest.mark.parametrize("webhook_count", sorted({0, 1, 10, LARGEST_WEBHOOKS, MAX_WEBHOOKS}))
def test_the_most_tenants_beside_each_number_of_webhooks_load(webhook_count: int) -> None:
    count = most_tenants(webhook_count)
    # "*" names no tenant: it has no alarm and costs nothing.
    budgets = tenants(count) | {"*": 5}
    config = load_config(
        {"hippocampus": {"tenant_token_budgets": budgets, "webhooks": webhooks(webhook_count)}}
    )
    assert (len(config.budgeted_tenants), len(config.webhooks)) == (count, webhook_count)


@pytest.mark.parametrize(
    ("tenant_count", "webhook_count"),
    [
        (most_tenants(MAX_WEBHOOKS) + 1, MAX_WEBHOOKS),
        (LARGEST_TENANTS + 1, LARGEST_WEBHOOKS),
        (LARGEST_TENANTS, LARGEST_WEBHOOKS + 1),
    ],
)
def test_one_over_the_joint_limit_is_refused_naming_both_keys_and_the_numbers(
    tenant_count: int, webhook_count: int
) -> None:
    needed = cost(tenant_count, webhook_count)
    assert needed > TENANT_AND_WEBHOOK_RESOURCES
    message = error_of(settings(tenant_count, webhook_count))
    assert message == (
        f"invalid deployment configuration: {JOINT_KEYS}{tenant_count} tenants named and {webhook_count} "
        f"webhooks need {needed} resources: at most {TENANT_AND_WEBHOOK_RESOURCES} fit (each budgeted "
        f"tenant costs {RESOURCES_PER_BUDGETED_TENANT} resources, each webhook {RESOURCES_PER_WEBHOOK}, the "
        f"rest of the stack up to {STACK_OTHER_RESOURCES}, {SPARE_RESOURCES} are kept spare, and a "
        f"CloudFormation stack holds at most {STACK_MAX_RESOURCES}); name fewer tenants (give the others "
        '"*") or list fewer webhooks'
    )


def test_the_individual_caps_are_reported_first() -> None:
    too_many_tenants = error_of(settings(MAX_BUDGETED_TENANTS + 1, MAX_WEBHOOKS))
    expected = f"hippocampus.tenant_token_budgets: names {MAX_BUDGETED_TENANTS + 1} tenants: at most"
    assert expected in too_many_tenants
    assert JOINT_KEYS not in too_many_tenants
    too_many_webhooks = error_of(settings(0, MAX_WEBHOOKS + 1))
    assert (
        f"hippocampus.webhooks: lists {MAX_WEBHOOKS + 1} webhooks: at most {MAX_WEBHOOKS}"
        in too_many_webhooks
    )


# ----------------------------------------------------------------------------- the largest accepted stack


def test_the_largest_accepted_configuration_is_at_the_limit() -> None:
    assert cost(LARGEST_TENANTS, LARGEST_WEBHOOKS) == TENANT_AND_WEBHOOK_RESOURCES
    load_config({"hippocampus": settings(LARGEST_TENANTS, LARGEST_WEBHOOKS, **LARGEST_SETTINGS)})


def test_the_largest_accepted_configuration_synthesizes_with_the_spare_resources_left(largest: Synth) -> None:
    count = len(largest.template.to_json()["Resources"])
    assert count == STACK_OTHER_RESOURCES + cost(LARGEST_TENANTS, LARGEST_WEBHOOKS)
    assert count == STACK_MAX_RESOURCES - SPARE_RESOURCES
    largest.template.resource_count_is("AWS::CDK::Metadata", 1)


def test_each_budgeted_tenant_and_each_webhook_costs_what_the_config_says(largest: Synth) -> None:
    stack = largest.stack
    assert len(stack.change_events.webhooks) == LARGEST_WEBHOOKS
    for name in stack.change_events.webhooks:
        webhook = stack.change_events.node.find_child(f"Webhook-{name}")
        assert resources_under(webhook) == RESOURCES_PER_WEBHOOK, name
    alarms = stack.monitoring.budget_alarms
    assert sum(resources_under(alarm) for alarm in alarms) == LARGEST_TENANTS * RESOURCES_PER_BUDGETED_TENANT
