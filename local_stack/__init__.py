"""The local stack: the whole service on one machine, with no AWS account (DESIGN §6).

- moto's server plays AWS (DynamoDB, S3, SQS, Secrets Manager), provisioned with the same
  resources and settings as the CDK app (`aws.py`, `defaults.py`);
- the real handlers run in worker processes, one per execution environment, with a
  Lambda-like context (`runtime.py`, `lambda_worker.py`);
- an HTTP server turns requests into API Gateway REST proxy events (`apigateway.py`);
- a poller plays the condenser's SQS event source mapping (`event_source.py`).

Run it with `python -m local_stack` (that is what `make dev` does). This package imports
nothing at import time, so a worker process starts light.
"""
