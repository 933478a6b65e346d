"""moto's DynamoDB checks a new item's size once, not once for each of its attributes.

moto 5.2 keeps an item's attributes in a dict that, on every assignment, adds up the size of every
attribute already in it to refuse an item over DynamoDB's 400 KB: building an item of n attributes
costs n²/2 size computations, about half of a put's time for the service's items. Building one
adds the attributes and then checks the whole item once: the same refusal (a prefix of an item is
never larger than the item), at a cost linear in its size. tests/integration/
test_local_moto_conditions.py shows moto still needs it.
"""

from collections.abc import Callable
from typing import Any

from moto.dynamodb.exceptions import ItemSizeTooLarge
from moto.dynamodb.models import dynamo_type
from moto.dynamodb.models.dynamo_type import DynamoType, LimitedSizeDict
from moto.dynamodb.models.utilities import bytesize

from local_stack.moto_patching import replace

# moto's own limit (`LimitedSizeDict.__setitem__`): between the documented 400 KB and the observed 410.
ITEM_SIZE_LIMIT = 405000


def _size(key: str, value: Any) -> int:
    # As `LimitedSizeDict.__setitem__` counts an attribute.
    return bytesize(key) + (value.size() if type(value) is DynamoType else bytesize(str(value)))


def _checked_once(original: Callable[..., None]) -> Callable[..., None]:
    def __init__(
        self: Any, hash_key: DynamoType, range_key: DynamoType | None, attrs: dict[str, Any]
    ) -> None:
        self.hash_key = hash_key
        self.range_key = range_key
        self.attrs = LimitedSizeDict()
        for key, value in attrs.items():
            dict.__setitem__(self.attrs, key, DynamoType(value))
        if sum(_size(key, value) for key, value in self.attrs.items()) > ITEM_SIZE_LIMIT:
            raise ItemSizeTooLarge

    return __init__


def fix_moto_item_size() -> None:
    """Install once."""
    replace(
        dynamo_type.Item, "__init__", ("self", "hash_key", "range_key", "attrs"), _checked_once, by=__name__
    )
