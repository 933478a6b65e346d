"""Success responses shared by the read and write routes."""

from aws_lambda_powertools.event_handler import Response, content_types

from hippocampus.contracts.models import MemoryBody


def memory_response(body: MemoryBody, status: int = 200) -> Response[MemoryBody]:
    """The memory body with its version as a strong ETag."""
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=body,
        headers={"ETag": f'"{body.version}"'},
    )
