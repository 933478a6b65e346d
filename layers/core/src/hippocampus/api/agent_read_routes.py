"""The read routes of an agent's scope (the get_memory function; docs/api.md "Agent scopes"):
the agent's memory read returns the user's shared memory with the agent's; the lists, history,
export and receipts are the agent's private scope, served by the user's services under its scope
key (contracts/scopes.py)."""

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayRouter

from hippocampus.api import openapi_responses as documented
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
from hippocampus.api.read_routes import Exports, IfNoneMatch, Lists, Reads, Receipts, Records
from hippocampus.api.responses import conditional_agent_memory_response
from hippocampus.contracts.limits import DEFAULT_HISTORY_LIMIT
from hippocampus.contracts.models import AgentMemoryBody, ExportDocument, HistoryResponse, Job, JobList
from hippocampus.contracts.recall import DEFAULT_LIST_LIMIT, EpisodeList, FactList
from hippocampus.contracts.receipts import DeletionReceipt
from hippocampus.contracts.records import DEFAULT_RECORD_LIST_LIMIT, RecordList
from hippocampus.contracts.routes import (
    AGENT_DELETION_PATH,
    AGENT_EPISODES_PATH,
    AGENT_EXPORT_PATH,
    AGENT_FACTS_PATH,
    AGENT_HISTORY_PATH,
    AGENT_JOB_PATH,
    AGENT_JOBS_PATH,
    AGENT_MEMORY_PATH,
    AGENT_RECORDS_PATH,
    powertools_path,
)
from hippocampus.contracts.scopes import agent_scope
from hippocampus.domain.reads.records import RecordQuery

router = APIGatewayRouter()
_TAGS = ["agents"]


@router.get(
    powertools_path(AGENT_MEMORY_PATH),
    summary="The user's shared memory and the agent's private one",
    operation_id="getAgentMemory",
    tags=_TAGS,
    responses=documented.GET_AGENT_MEMORY,
)
def get_agent_memory(
    tenant_id: TenantId, user_id: UserId, agent_id: AgentId, reads: Reads, if_none_match: IfNoneMatch = None
) -> Response[AgentMemoryBody | None]:
    return conditional_agent_memory_response(
        reads.read_agent_memory(tenant_id, user_id, agent_id), if_none_match
    )


@router.get(
    powertools_path(AGENT_HISTORY_PATH),
    summary="Past versions of the agent's summary, newest first",
    operation_id="getAgentHistory",
    tags=_TAGS,
    responses=documented.HISTORY,
)
def get_agent_history(
    tenant_id: TenantId,
    user_id: UserId,
    agent_id: AgentId,
    reads: Reads,
    limit: HistoryLimit = DEFAULT_HISTORY_LIMIT,
) -> HistoryResponse:
    return reads.get_history(tenant_id, agent_scope(user_id, agent_id), limit)


@router.get(
    powertools_path(AGENT_EXPORT_PATH),
    summary="Everything stored in the agent's private scope (in pages when long)",
    operation_id="exportAgentMemory",
    tags=_TAGS,
    responses=documented.EXPORT,
)
def export_agent_memory(
    tenant_id: TenantId, user_id: UserId, agent_id: AgentId, exports: Exports, cursor: ExportCursor = None
) -> ExportDocument:
    return exports.export(tenant_id, agent_scope(user_id, agent_id), cursor)


@router.get(
    powertools_path(AGENT_FACTS_PATH),
    summary="The agent's private facts, newest first",
    operation_id="listAgentFacts",
    tags=_TAGS,
    responses=documented.FACTS,
)
def list_agent_facts(
    tenant_id: TenantId,
    user_id: UserId,
    agent_id: AgentId,
    lists: Lists,
    limit: ListLimit = DEFAULT_LIST_LIMIT,
    cursor: ListCursor = None,
) -> FactList:
    return lists.list_facts(tenant_id, agent_scope(user_id, agent_id), limit, cursor)


@router.get(
    powertools_path(AGENT_EPISODES_PATH),
    summary="The agent's private episodes, newest first",
    operation_id="listAgentEpisodes",
    tags=_TAGS,
    responses=documented.EPISODES,
)
def list_agent_episodes(
    tenant_id: TenantId,
    user_id: UserId,
    agent_id: AgentId,
    lists: Lists,
    limit: ListLimit = DEFAULT_LIST_LIMIT,
    cursor: ListCursor = None,
) -> EpisodeList:
    return lists.list_episodes(tenant_id, agent_scope(user_id, agent_id), limit, cursor)


@router.get(
    powertools_path(AGENT_RECORDS_PATH),
    summary="The agent's private records, newest first",
    operation_id="listAgentRecords",
    tags=_TAGS,
    responses=documented.RECORDS,
)
def list_agent_records(
    tenant_id: TenantId,
    user_id: UserId,
    agent_id: AgentId,
    records: Records,
    limit: RecordLimit = DEFAULT_RECORD_LIST_LIMIT,
    cursor: ListCursor = None,
    as_of: AsOf = None,
    known_at: KnownAt = None,
    include_invalidated: IncludeInvalidated = False,
) -> RecordList:
    query = RecordQuery(limit, cursor, as_of, known_at, include_invalidated)
    return records.list_records(tenant_id, agent_scope(user_id, agent_id), query)


@router.get(
    powertools_path(AGENT_JOBS_PATH),
    summary="The jobs of the agent's private items, newest first",
    operation_id="listAgentJobs",
    tags=_TAGS,
    responses=documented.JOBS,
)
def list_agent_jobs(
    tenant_id: TenantId,
    user_id: UserId,
    agent_id: AgentId,
    lists: Lists,
    limit: ListLimit = DEFAULT_LIST_LIMIT,
    cursor: ListCursor = None,
) -> JobList:
    return lists.list_jobs(tenant_id, agent_scope(user_id, agent_id), limit, cursor)


@router.get(
    powertools_path(AGENT_JOB_PATH),
    summary="One job of the agent's items, private or shared",
    operation_id="getAgentJob",
    tags=_TAGS,
    responses=documented.AGENT_JOB,
)
def get_agent_job(
    tenant_id: TenantId, user_id: UserId, agent_id: AgentId, job_id: JobId, reads: Reads
) -> Job:
    return reads.get_scoped_job(tenant_id, agent_scope(user_id, agent_id), job_id)


@router.get(
    powertools_path(AGENT_DELETION_PATH),
    summary="What a delete in the agent's scope erased: a deletion receipt",
    operation_id="getAgentDeletion",
    tags=_TAGS,
    responses=documented.DELETION,
)
def get_agent_deletion(
    tenant_id: TenantId, user_id: UserId, agent_id: AgentId, receipt_id: ReceiptId, receipts: Receipts
) -> DeletionReceipt:
    return receipts.get_receipt(tenant_id, agent_scope(user_id, agent_id), receipt_id)
