"""The local stack: the whole service on one machine, with no AWS account.

See docs/architecture.md, "Local stack".

- moto's server plays AWS (DynamoDB and its streams, S3, SQS, EventBridge, Secrets Manager)
  (`moto_endpoint.py`), provisioned from the CDK app's own resource specs and settings (`aws.py`,
  `defaults.py`, `infra/resources.py`);
- the real handlers run in worker processes, one per execution environment, with a Lambda
  context (`runtime.py`, `lambda_worker.py`, `lambda_context.py`);
- an HTTP server (`http_server.py`) hands requests to the API Gateway emulation
  (`apigateway.py`), which turns them into REST proxy events; SQS's API is forwarded to moto
  (`sqs_proxy.py`), so `hippocampus events` follows the events queue on the stack's port;
- moto's defects the service would trip over are fixed, each in a module of its own checked at
  start by `moto_patching.py`: `moto_fifo.py`, `moto_dispatch.py`, `moto_dynamodb.py`,
  `moto_attribute_values.py`, `moto_conditions.py`, `moto_item_size.py`, `moto_streams.py`,
  `moto_sqs_counts.py`, `moto_sqs.py`;
- a poller plays the condenser's SQS event source mapping (`event_source.py`), letting the
  callers' requests go first (`foreground.py`), and another the events function's stream event
  source mapping (`stream_source.py`);
- `events.py` builds the API Gateway events, SQS records and stream records, for the stack and the tests.
- what moto holds is kept in a data directory across restarts and kills (`durable.py`: a snapshot
  and a write-ahead journal, `journal.py`; the records of moto's changes, `moto_state.py`,
  `moto_sqs.py`, `changes.py`; docs/operations.md "Local stack"), unless `--in-memory`.

Run it with `python -m local_stack` (that is what `make dev` does). This package imports
nothing at import time, so a worker process starts light.
"""
