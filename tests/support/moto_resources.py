"""The deployed resources, created inside `mock_aws` with the local stack's provisioning code."""

from local_stack import aws as local_aws
from local_stack.defaults import load as load_defaults


def create_resources() -> local_aws.Resources:
    # endpoint None: the default AWS endpoints, which mock_aws intercepts.
    return local_aws.provision(None, "us-east-1", load_defaults().config)
