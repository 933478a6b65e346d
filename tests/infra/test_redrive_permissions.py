"""The condenser's redrive of its DLQ (docs/operations.md "The dead-letter queue"): exactly the SQS
actions it calls, each on the one queue it calls it on, and no other function gets any of them."""

from __future__ import annotations

import json

from tests.infra.helpers import FUNCTIONS, Synth, granted

ON_THE_DLQ = {
    "sqs:ReceiveMessage",
    "sqs:DeleteMessage",
    "sqs:ChangeMessageVisibility",
    "sqs:GetQueueAttributes",
}


def queue_arns(synth: Synth) -> tuple[str, str]:
    """The rendered ARNs of the ingest queue and of its DLQ."""
    by_name = {
        json.dumps(queue["Properties"].get("QueueName", "")): logical
        for logical, queue in synth.template.find_resources("AWS::SQS::Queue").items()
    }
    (dlq,) = [logical for name, logical in by_name.items() if "ingest-dlq" in name]
    (queue,) = [logical for name, logical in by_name.items() if "ingest" in name and logical != dlq]
    return "${" + queue + ".Arn}", "${" + dlq + ".Arn}"


def test_the_condenser_sends_to_the_ingest_queue_and_takes_from_the_dlq_only(default_synth: Synth) -> None:
    queue, dlq = queue_arns(default_synth)
    grants = granted(default_synth, default_synth.role_id("condenser"))
    assert grants["sqs:SendMessage"] == {queue}  # SendMessageBatch is authorised by SendMessage
    on_dlq = {action for action, resources in grants.items() if dlq in resources}
    assert on_dlq == ON_THE_DLQ
    for action in ON_THE_DLQ:
        assert grants[action] <= {queue, dlq}, action  # the event source consumes the ingest queue
    assert "sqs:PurgeQueue" not in grants and "sqs:StartMessageMoveTask" not in grants


def test_no_other_function_may_touch_the_dlq(default_synth: Synth) -> None:
    _, dlq = queue_arns(default_synth)
    for name in FUNCTIONS:
        if name == "condenser":
            continue
        grants = granted(default_synth, default_synth.role_id(name))
        assert not [action for action, resources in grants.items() if dlq in resources], name


def test_the_condenser_is_told_both_queues(default_synth: Synth) -> None:
    variables = default_synth.environment("condenser")
    queue, dlq = (arn.removeprefix("${").removesuffix(".Arn}") for arn in queue_arns(default_synth))
    assert variables["MEMORY_QUEUE_URL"] == {"Ref": queue}
    assert variables["MEMORY_DLQ_URL"] == {"Ref": dlq}
