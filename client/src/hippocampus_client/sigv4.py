"""HTTPS signed with SigV4 for `execute-api`, with botocore's own signer (docs/api.md "Authentication").

Every method of the deployed API requires IAM authorization. The credentials are the
environment's, as botocore finds them (variables, profile, SSO, container or instance role),
resolved on the first request and refreshed by botocore when they expire.
"""

import threading
from collections.abc import Generator
from typing import Any

import httpx2

from .aws import new_session, region_of, require_botocore
from .errors import ConfigurationError, HippocampusError, TransportError
from .http import HttpTransport

SERVICE = "execute-api"
_SIGNED_HEADERS = ("Authorization", "X-Amz-Date", "X-Amz-Security-Token")


class SigV4Auth(httpx2.Auth):
    """An `httpx2.Auth` that signs each request (its method, URL, host, content type and body)."""

    requires_request_body = True

    def __init__(self, region: str, session: Any = None, service: str = SERVICE) -> None:
        require_botocore()
        self.region = region
        self.service = service
        self._session = session
        self._credentials: Any = None
        self._lock = threading.Lock()

    def auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response, None]:
        self.sign(request)
        yield request

    def sign(self, request: httpx2.Request) -> None:
        from botocore.auth import SigV4Auth as Signer
        from botocore.awsrequest import AWSRequest

        headers = {"host": request.headers["host"]}
        if "content-type" in request.headers:
            headers["content-type"] = request.headers["content-type"]
        unsigned = AWSRequest(
            method=request.method, url=str(request.url), data=request.content, headers=headers
        )
        Signer(self._frozen_credentials(), self.service, self.region).add_auth(unsigned)
        for name in _SIGNED_HEADERS:
            if name in unsigned.headers:
                request.headers[name] = unsigned.headers[name]

    def _frozen_credentials(self) -> Any:
        try:
            with self._lock:
                if self._credentials is None:
                    self._credentials = (self._session or new_session()).get_credentials()
                if self._credentials is None:
                    raise ConfigurationError("no AWS credentials to sign the request with")
                return self._credentials.get_frozen_credentials()
        except HippocampusError:
            raise
        except Exception as error:  # botocore's credential providers raise their own types
            raise TransportError(f"could not load AWS credentials ({type(error).__name__})") from None


class SigV4Transport(HttpTransport):
    """The HTTP API of a deployed stack, signed: `SigV4Transport("https://…/dev/")`.

    The region comes from `region`, else the `execute-api` host name, else the environment
    (AWS_REGION, AWS_DEFAULT_REGION, the profile). `session` is a botocore session (default: a
    new one). Other keyword arguments are `HttpTransport`'s.
    """

    def __init__(
        self, endpoint: str, *, region: str | None = None, session: Any = None, **options: Any
    ) -> None:
        session = session if session is not None else new_session()
        auth = SigV4Auth(region_of(endpoint, region, session), session)
        super().__init__(endpoint, auth=auth, **options)
