"""The local stack's function environment: moto for the stores, AWS itself for a model moto does
not play (Bedrock, Comprehend), with the user's own credentials (docs/configuration.md "Running
locally")."""

import pytest

from local_stack.aws import DUMMY_ACCESS_KEY_ID, Resources
from local_stack.environment import aws_region, runtime_environment

MOTO = "http://127.0.0.1:5999"
RESOURCES_FIELDS = ("eu-west-1", "table", "bucket", "queue-url", "queue-arn", "dlq-url", "dlq-arn")
RESOURCES = Resources(*RESOURCES_FIELDS)
USER = {"AWS_ACCESS_KEY_ID": "AKIAREAL", "AWS_REGION": "eu-west-1"}


def test_everything_goes_to_moto_with_dummy_credentials_by_default():
    runtime = runtime_environment({**USER, "MEMORY_PII": "mask"}, RESOURCES, MOTO, {})
    assert runtime.set["AWS_ENDPOINT_URL"] == MOTO
    assert runtime.set["AWS_ACCESS_KEY_ID"] == DUMMY_ACCESS_KEY_ID
    assert aws_region(USER) == "us-east-1"


@pytest.mark.parametrize("model", [{"MEMORY_PII_DETECTOR": "comprehend"}, {"MEMORY_LLM_PROVIDER": "bedrock"}])
def test_comprehend_and_bedrock_are_reached_for_real_with_the_users_credentials(model):
    user = {**USER, **model}
    runtime = runtime_environment(user, RESOURCES, MOTO, {})
    assert "AWS_ENDPOINT_URL" in runtime.unset and "AWS_ENDPOINT_URL" not in runtime.set
    assert runtime.set["AWS_ENDPOINT_URL_DYNAMODB"] == MOTO  # the stores stay on moto
    assert "AWS_ACCESS_KEY_ID" not in runtime.set  # the user's own are kept
    assert aws_region(user) == "eu-west-1"


def test_the_events_function_is_told_the_bus_and_reaches_streams_and_eventbridge_on_moto():
    resources = Resources(*RESOURCES_FIELDS, event_bus_name="hippocampus-dev")
    for user in (USER, {**USER, "MEMORY_LLM_PROVIDER": "bedrock"}):  # with Bedrock too: only it is AWS's
        runtime = runtime_environment(user, resources, MOTO, {"MEMORY_EVENT_BUS_NAME": ""})
        assert runtime.set["MEMORY_EVENT_BUS_NAME"] == "hippocampus-dev"
        assert runtime.set["AWS_ENDPOINT_URL_EVENTBRIDGE"] == MOTO
        assert runtime.set["AWS_ENDPOINT_URL_DYNAMODB_STREAMS"] == MOTO
