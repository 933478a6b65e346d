"""Routes of the read path (the get_memory function): health, memory, history, jobs, the export, the
lists of a user's facts, episodes and records, the tenant's users and its LLM usage; and the same in
an agent's scope (docs/api.md "Agent scopes")."""

from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.event_handler.openapi.params import Header
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from hippocampus.api import openapi_responses as documented
from hippocampus.api.dependencies import unwired
from hippocampus.api.params import (
    AgentId,
    AsOf,
    ExportCursor,
    HistoryLimit,
    IncludeInvalidated,
    JobId,
    KnownAt,
    ListCursor,
    ListLimit,
    ReceiptId,
    RecordLimit,
    TenantId,
    UserId,
)
from hippocampus.api.responses import conditional_agent_memory_response, conditional_memory_response
from hippocampus.api.scoped_routes import AGENT_TAGS, scoped_route
from hippocampus.contracts.budgets import TenantUsage
from hippocampus.contracts.limits import DEFAULT_HISTORY_LIMIT
from hippocampus.contracts.models import (
    AgentMemoryBody,
    ExportDocument,
    HealthResponse,
    HistoryResponse,
    Job,
    JobList,
    MemoryBody,
    UserList,
)
from hippocampus.contracts.recall import DEFAULT_LIST_LIMIT, EpisodeList, FactList
from hippocampus.contracts.receipts import DeletionReceipt
from hippocampus.contracts.records import DEFAULT_RECORD_LIST_LIMIT, RecordList
from hippocampus.contracts.routes import (
    AGENT_JOB_PATH,
    AGENT_MEMORY_PATH,
    DELETION_PATH,
    EPISODES_PATH,
    EXPORT_PATH,
    FACTS_PATH,
    HEALTH_PATH,
    HISTORY_PATH,
    JOB_PATH,
    JOBS_PATH,
    MEMORY_PATH,
    RECORDS_PATH,
    USAGE_PATH,
    USERS_PATH,
    powertools_path,
)
from hippocampus.contracts.scopes import agent_scope
from hippocampus.domain.reads.export import ExportService
from hippocampus.domain.reads.lists import ListService
from hippocampus.domain.reads.receipts import ReceiptService
from hippocampus.domain.reads.records import RecordQuery, RecordService
from hippocampus.domain.reads.service import ReadService
from hippocampus.domain.reads.usage import UsageService

router = APIGatewayRouter()


def read_service() -> ReadService:
    unwired("read_service")


def export_service() -> ExportService:
    unwired("export_service")


def list_service() -> ListService:
    unwired("list_service")


def record_service() -> RecordService:
    unwired("record_service")


def receipt_service() -> ReceiptService:
    unwired("receipt_service")


def usage_service() -> UsageService:
    unwired("usage_service")


Reads = Annotated[ReadService, Depends(read_service)]
Records = Annotated[RecordService, Depends(record_service)]
Receipts = Annotated[ReceiptService, Depends(receipt_service)]
Lists = Annotated[ListService, Depends(list_service)]
Exports = Annotated[ExportService, Depends(export_service)]
Usage = Annotated[UsageService, Depends(usage_service)]
IfNoneMatch = Annotated[
    str | None, Header(alias="If-None-Match", description="304 while the memory still has this ETag")
]


@router.get(
    HEALTH_PATH, summary="Liveness", operation_id="getHealth", tags=["health"], responses=documented.HEALTH
)
def health() -> HealthResponse:
    return HealthResponse()


@router.get(
    powertools_path(MEMORY_PATH),
    summary="The user's memory",
    operation_id="getMemory",
    tags=["memory"],
    responses=documented.GET_MEMORY,
)
def get_memory(
    tenant_id: TenantId, user_id: UserId, reads: Reads, if_none_match: IfNoneMatch = None
) -> Response[MemoryBody | None]:
    return conditional_memory_response(reads.read_memory(tenant_id, user_id), if_none_match)


@scoped_route(
    router,
    "GET",
    HISTORY_PATH,
    summary="Past versions, newest first",
    agent_summary="Past versions of the agent's summary, newest first",
    operation_id="getHistory",
    tags=["memory"],
    responses=documented.HISTORY,
)
def get_history(
    tenant_id: TenantId, user_id: UserId, reads: Reads, limit: HistoryLimit = DEFAULT_HISTORY_LIMIT
) -> HistoryResponse:
    return reads.get_history(tenant_id, user_id, limit)


@scoped_route(
    router,
    "GET",
    EXPORT_PATH,
    summary="Everything stored about the user (in pages when long)",
    agent_summary="Everything stored in the agent's private scope (in pages when long)",
    operation_id="exportMemory",
    tags=["memory"],
    responses=documented.EXPORT,
)
def export_memory(
    tenant_id: TenantId, user_id: UserId, exports: Exports, cursor: ExportCursor = None
) -> ExportDocument:
    return exports.export(tenant_id, user_id, cursor)


@scoped_route(
    router,
    "GET",
    FACTS_PATH,
    summary="The user's facts, newest first",
    agent_summary="The agent's private facts, newest first",
    operation_id="listFacts",
    tags=["memory"],
    responses=documented.FACTS,
)
def list_facts(
    tenant_id: TenantId,
    user_id: UserId,
    lists: Lists,
    limit: ListLimit = DEFAULT_LIST_LIMIT,
    cursor: ListCursor = None,
) -> FactList:
    return lists.list_facts(tenant_id, user_id, limit, cursor)


@scoped_route(
    router,
    "GET",
    EPISODES_PATH,
    summary="The user's episodes, newest first",
    agent_summary="The agent's private episodes, newest first",
    operation_id="listEpisodes",
    tags=["memory"],
    responses=documented.EPISODES,
)
def list_episodes(
    tenant_id: TenantId,
    user_id: UserId,
    lists: Lists,
    limit: ListLimit = DEFAULT_LIST_LIMIT,
    cursor: ListCursor = None,
) -> EpisodeList:
    return lists.list_episodes(tenant_id, user_id, limit, cursor)


@scoped_route(
    router,
    "GET",
    RECORDS_PATH,
    summary="The user's records, newest first",
    agent_summary="The agent's private records, newest first",
    operation_id="listRecords",
    tags=["memory"],
    responses=documented.RECORDS,
)
def list_records(
    tenant_id: TenantId,
    user_id: UserId,
    records: Records,
    limit: RecordLimit = DEFAULT_RECORD_LIST_LIMIT,
    cursor: ListCursor = None,
    as_of: AsOf = None,
    known_at: KnownAt = None,
    include_invalidated: IncludeInvalidated = False,
) -> RecordList:
    query = RecordQuery(limit, cursor, as_of, known_at, include_invalidated)
    return records.list_records(tenant_id, user_id, query)


@router.get(
    powertools_path(JOB_PATH),
    summary="One ingestion job",
    operation_id="getJob",
    tags=["jobs"],
    responses=documented.JOB,
)
def get_job(tenant_id: TenantId, job_id: JobId, reads: Reads) -> Job:
    return reads.get_job(tenant_id, job_id)


@router.get(
    powertools_path(AGENT_MEMORY_PATH),
    summary="The user's shared memory and the agent's private one",
    operation_id="getAgentMemory",
    tags=AGENT_TAGS,
    responses=documented.GET_AGENT_MEMORY,
)
def get_agent_memory(
    tenant_id: TenantId, user_id: UserId, agent_id: AgentId, reads: Reads, if_none_match: IfNoneMatch = None
) -> Response[AgentMemoryBody | None]:
    read = reads.read_agent_memory(tenant_id, user_id, agent_id)
    return conditional_agent_memory_response(read, if_none_match)


@router.get(
    powertools_path(AGENT_JOB_PATH),
    summary="One job of the agent's items, private or shared",
    operation_id="getAgentJob",
    tags=AGENT_TAGS,
    responses=documented.AGENT_JOB,
)
def get_agent_job(
    tenant_id: TenantId, user_id: UserId, agent_id: AgentId, job_id: JobId, reads: Reads
) -> Job:
    """A principal granted one agent reaches no tenant-level route: it polls its jobs here."""
    return reads.get_scoped_job(tenant_id, agent_scope(user_id, agent_id), job_id)


@scoped_route(
    router,
    "GET",
    JOBS_PATH,
    summary="The user's ingestion jobs, newest first",
    agent_summary="The jobs of the agent's private items, newest first",
    operation_id="listJobs",
    tags=["jobs"],
    responses=documented.JOBS,
)
def list_jobs(
    tenant_id: TenantId,
    user_id: UserId,
    lists: Lists,
    limit: ListLimit = DEFAULT_LIST_LIMIT,
    cursor: ListCursor = None,
) -> JobList:
    return lists.list_jobs(tenant_id, user_id, limit, cursor)


@router.get(
    powertools_path(USERS_PATH),
    summary="The tenant's users with memory stored, by user id",
    operation_id="listUsers",
    tags=["users"],
    responses=documented.USERS,
)
def list_users(
    tenant_id: TenantId, lists: Lists, limit: ListLimit = DEFAULT_LIST_LIMIT, cursor: ListCursor = None
) -> UserList:
    return lists.list_users(tenant_id, limit, cursor)


@router.get(
    powertools_path(USAGE_PATH),
    summary="The tenant's LLM calls and tokens today (UTC), against its token budget",
    operation_id="getUsage",
    tags=["users"],
    responses=documented.USAGE,
)
def get_usage(tenant_id: TenantId, usage: Usage) -> TenantUsage:
    return usage.usage(tenant_id)


@scoped_route(
    router,
    "GET",
    DELETION_PATH,
    summary="What a delete erased: a deletion receipt",
    agent_summary="What a delete in the agent's scope erased: a deletion receipt",
    operation_id="getDeletion",
    tags=["memory"],
    responses=documented.DELETION,
)
def get_deletion(
    tenant_id: TenantId, user_id: UserId, receipt_id: ReceiptId, receipts: Receipts
) -> DeletionReceipt:
    return receipts.get_receipt(tenant_id, user_id, receipt_id)
