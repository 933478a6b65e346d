"""Domain: the use cases, by feature (ingest/, condense/, recall/, reads/), written against the ports only;
what several share (the clock, job identity, the summary's budget, the history) beside them.

No module here imports an adapter, boto3, botocore, a Powertools event type or the environment
(tests/unit/test_architecture.py enforces it); the composition root hands the adapters in.
"""
