"""botocore, imported only when a transport needs AWS (the `[aws]` extra, client/README.md "Install").

The plain HTTP client must work without botocore installed, so nothing here runs at import.
"""

import os
import re
from typing import Any
from urllib.parse import urlsplit

from .errors import ConfigurationError, MissingDependencyError

EXTRA_HINT = "install the AWS extra: pip install 'hippocampus-client[aws]' (or pip install './client[aws]')"
# https://<api-id>.execute-api.<region>.amazonaws.com[.cn]/<stage>/ (the `ApiUrl` stack output)
_API_HOST = re.compile(r"\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(?:\.cn)?$")


def require_botocore() -> Any:
    """The `botocore.session` module, or a clear error naming the extra that brings it."""
    try:
        import botocore.session
    except ImportError:
        raise MissingDependencyError(
            f"botocore is needed to sign requests or invoke functions: {EXTRA_HINT}"
        ) from None
    return botocore.session


def new_session() -> Any:
    """A botocore session: the environment's credentials and region, as the AWS CLI finds them."""
    return require_botocore().get_session()


def region_of(endpoint: str | None, region: str | None, session: Any) -> str:
    """The region: given, else the API's host name, else AWS_REGION / AWS_DEFAULT_REGION / the profile."""
    if region:
        return region
    host = urlsplit(endpoint or "").hostname or ""
    match = _API_HOST.search(host)
    if match:
        return match.group(1)
    found = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if not found and session is not None:
        found = session.get_config_variable("region")
    if not found:
        raise ConfigurationError("no AWS region: pass region=..., or set AWS_REGION")
    return str(found)
