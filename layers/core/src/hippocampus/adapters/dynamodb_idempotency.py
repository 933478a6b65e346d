"""Powertools' DynamoDB idempotency records, kept in the user's index partition of the memory table.

There they are found, and erased, with the user's jobs when the user is forgotten
(docs/api.md "Forgetting a user"). Powertools' own layer does the work; this one only places the
records and keeps an erased record from being written back by a request that was in flight.
"""

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer
from aws_lambda_powertools.utilities.idempotency.persistence.base import BasePersistenceLayer
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import DataRecord
from botocore.exceptions import ClientError

from hippocampus.adapters.dynamodb_table import index_pk, is_condition_failure
from hippocampus.contracts.names import TABLE_PARTITION_KEY, TABLE_SORT_KEY, TABLE_TTL_ATTRIBUTE
from hippocampus.observability import logger


class UserIdempotencyRecords(DynamoDBPersistenceLayer):
    """The idempotency records of one user: partition `T#<t>#U#<u>#I`, sort key `ingest#<hash>`."""

    def __init__(self, table_name: str, client: Any, tenant_id: str, user_id: str) -> None:
        super().__init__(
            table_name=table_name,
            key_attr=TABLE_PARTITION_KEY,
            sort_key_attr=TABLE_SORT_KEY,
            static_pk_value=index_pk(tenant_id, user_id),
            expiry_attr=TABLE_TTL_ATTRIBUTE,  # the table's TTL removes expired records
            boto3_client=client,
        )

    def _update_record(self, data_record: DataRecord) -> None:
        # Powertools' own update (the same attributes), made conditional: a delete of the user may
        # have erased the in-progress record meanwhile, and an unconditional update would bring the
        # pre-delete response back.
        names = {"#data": self.data_attr, "#expiry": self.expiry_attr, "#status": self.status_attr}
        values: dict[str, Any] = {
            ":data": {"S": data_record.response_data},
            ":expiry": {"N": str(data_record.expiry_timestamp)},
            ":status": {"S": data_record.status},
        }
        expression = "SET #data = :data, #expiry = :expiry, #status = :status"
        if self.payload_validation_enabled:
            expression += ", #validation = :validation"
            names["#validation"] = self.validation_key_attr
            values[":validation"] = {"S": data_record.payload_hash}
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key=self._get_key(data_record.idempotency_key),
                UpdateExpression=expression,
                ConditionExpression="attribute_exists(#status)",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        except ClientError as error:
            if not is_condition_failure(error):
                raise
            logger.info("idempotency record erased by a delete of the user; the response is not kept")


def user_records(table_name: str, client: Callable[[], Any]) -> Callable[[str, str], BasePersistenceLayer]:
    """The factory IdempotentIngest calls per request (the records of the request's user)."""

    def records_of(tenant_id: str, user_id: str) -> BasePersistenceLayer:
        return UserIdempotencyRecords(table_name, client(), tenant_id, user_id)

    return records_of
