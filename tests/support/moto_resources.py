"""The deployed resources, created inside `mock_aws` with the local stack's provisioning code."""

from local_stack import aws as local_aws


def create_resources() -> local_aws.Resources:
    # endpoint None: the default AWS endpoints, which mock_aws intercepts.
    return local_aws.provision(None, "us-east-1", local_aws.Retention(30, 365))  # type: ignore[arg-type]
