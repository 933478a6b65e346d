"""The workload of `bench/bench_cost.py`: users, their facts, turns and reads, and what observes it.

A turn is a user/assistant pair of about 40 and 100 words, the same for the same user and number.
The stub LLM answers with a summary close to the word budget, the size a model's answer has. The
`Observer` reads moto directly with requests the meter leaves out (`metering.UNMETERED_AGENT`), so
that waiting for jobs and measuring storage add nothing to the counts.
"""

import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from bench import metering
from hippocampus.adapters.dynamodb_table import EPISODE_PREFIX, FACT_PREFIX, JOB_SK, MEMORY_SK, job_pk
from hippocampus.contracts import prompt_format as fences
from hippocampus.contracts.limits import MAX_ITEMS
from local_stack.stack import LocalStack
from tests.e2e.e2e_support import Api, unique

FINAL = frozenset({"completed", "failed", "skipped"})
USER_LINES = (
    "I run a small bakery in Lyon with my sister Claire and we open at six every morning.",
    "We moved our online shop to Shopify last spring and I still handle every order myself.",
    "Please keep your answers short, I read them on my phone between two batches.",
    "My budget for new equipment this year is about eight thousand euros, no more.",
    "I am allergic to hazelnuts, so I never taste the praline orders myself.",
    "Next month we are hiring a part-time assistant for the weekend shifts.",
)
ASSISTANT_LINES = (
    "That sounds like a solid plan, and it fits what you told me about your schedule.",
    "A simple first step would be to list the three tasks that take most of your week.",
    "Many small shops start with a short pilot and adjust the offer after a month.",
    "You could ask your regular customers directly, they usually give honest feedback.",
    "Keep an eye on the margins of each product before you widen the range.",
    "If you want, I can draft a message you can send to your suppliers by email.",
)


def turn_item(user: str, number: int) -> dict[str, Any]:
    """A conversation turn of realistic length, the same for the same user and number."""
    rng = random.Random(f"{user}/{number}")
    user_text = " ".join(rng.sample(USER_LINES, 3)) + " What would you suggest?"
    pair = {"user": user_text, "assistant": " ".join(rng.sample(ASSISTANT_LINES, 5))}
    return {"id": f"turn-{number}", "user_assistant_pairs": [pair]}


class SummaryReply:
    """The stub's answer: the new content, then the old memory, cut a little under the word budget
    (the size of a model's summary); it counts the characters it answered."""

    def __init__(self, max_words: int) -> None:
        self.budget, self.chars, self._lock = max(5, max_words - 5), 0, threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []) if m["role"] == "user")
        new = _fenced(prompt, fences.NEW_CONTENT_BEGIN, fences.NEW_CONTENT_END)
        text = " ".join(new + _fenced(prompt, fences.OLD_MEMORY_BEGIN, fences.OLD_MEMORY_END))
        answer = " ".join([word for word in text.split() if len(word) <= 12][: self.budget]) + "."
        with self._lock:
            self.chars += len(answer)
        return answer


def _fenced(prompt: str, begin: str, end: str) -> list[str]:
    return re.findall(f"{re.escape(begin)}(.*?){re.escape(end)}", prompt, re.DOTALL)


class Observer:
    """Reads moto directly, with requests the meter leaves out: job status, the queue, storage."""

    def __init__(self, stack: LocalStack) -> None:
        assert stack.resources is not None
        self.resources = resources = stack.resources
        self.dynamodb, self.sqs, self.s3 = (
            metering.unmetered_client(service, stack.aws_endpoint, resources.region)
            for service in ("dynamodb", "sqs", "s3")
        )

    def status(self, tenant: str, job_id: str) -> str:
        key = {"pk": {"S": job_pk(tenant, job_id)}, "sk": {"S": JOB_SK}}
        response = self.dynamodb.get_item(TableName=self.resources.table_name, Key=key, ConsistentRead=True)
        return str(response["Item"]["status"]["S"]) if "Item" in response else "missing"

    def wait_final(self, tenant: str, job_ids: list[str], deadline: float) -> list[str]:
        pending = list(job_ids)
        while pending and time.monotonic() < deadline:
            time.sleep(0.05)
            pending = [job for job in pending if self.status(tenant, job) not in FINAL]
        return [self.status(tenant, job) for job in job_ids]

    def queue_settled(self) -> bool:
        names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        attributes = self.sqs.get_queue_attributes(QueueUrl=self.resources.queue_url, AttributeNames=names)
        return all(int(value) == 0 for value in attributes["Attributes"].values())

    def stored_bytes(self, tenant: str) -> Counter[str]:
        """What the tenant's users keep: per user (the memory and the facts), and what grows with their
        turns (episodes, job records and every other item, raw/, history/)."""
        stored: Counter[str] = Counter()
        for page in self.dynamodb.get_paginator("scan").paginate(TableName=self.resources.table_name):
            for item in (item for item in page["Items"] if item["pk"]["S"].startswith(f"T#{tenant}#")):
                sk = item["sk"]["S"]
                kind = "user items" if sk == MEMORY_SK or sk.startswith(FACT_PREFIX) else "job items"
                kind = "episodes" if sk.startswith(EPISODE_PREFIX) else kind
                # DynamoDB bills 100 bytes of overhead per item on top of its size.
                stored[kind] += metering.attributes_size(item) + 100
                stored[f"{kind} (count)"] += 1
        for prefix in ("raw/", "history/"):
            listing = self.s3.get_paginator("list_objects_v2")
            for page in listing.paginate(Bucket=self.resources.bucket_name, Prefix=f"{prefix}{tenant}/"):
                stored[prefix] += sum(entry["Size"] for entry in page.get("Contents", []))
        return stored


@dataclass(frozen=True)
class Workload:
    users: int
    turns: int
    burst: int
    facts: int
    reads: int
    history: int  # turns each user already has, sent before the measured ones
    think_ms: int  # pause after a burst's jobs are final, before the next burst

    def __str__(self) -> str:
        return (
            f"workload: {self.users} users with {self.history} turns behind them, then {self.facts} facts and "
            f"{self.turns} turns each, in bursts of {self.burst} {self.think_ms} ms apart, {self.reads} "
            "read(s) before each turn"
        )


@dataclass
class Tally:
    api_requests: int = 0
    failed_requests: int = 0
    statuses: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def call(self, api: Api, method: str, path: str, body: dict[str, Any] | None = None) -> list[str]:
        """One API request; the ids of the jobs it created."""
        response = api.request(method, path, json=body)
        with self.lock:
            self.api_requests += 1
            self.failed_requests += response.status_code >= 300
        return [job["job_id"] for job in response.json()["jobs"]] if response.status_code == 202 else []


class Replay:
    """The workload's users, replayed by `clients` concurrent clients; each phase (`history()`,
    `turns()`) stops waiting for jobs after `max_seconds`."""

    def __init__(
        self, url: str, observer: Observer, work: Workload, clients: int, max_seconds: float
    ) -> None:
        self.url, self.observer, self.work, self.clients = url, observer, work, clients
        self.max_seconds, self.deadline = max_seconds, 0.0
        self.tenant, self.users = unique("cost"), [unique("user") for _ in range(work.users)]

    def history(self) -> None:
        """Each user's earlier turns, in requests of MAX_ITEMS, until their jobs are final."""

        def send(user: str) -> None:
            api, tally = Api(self.url), Tally()
            for start in range(0, self.work.history, MAX_ITEMS):
                items = [
                    turn_item(user, -1 - n) for n in range(start, min(start + MAX_ITEMS, self.work.history))
                ]
                jobs = tally.call(api, "POST", Api.memory_path(self.tenant, user), {"items": items})
                self.observer.wait_final(self.tenant, jobs, self.deadline)

        self._each_user(send)

    def turns(self) -> Tally:
        """Each user's facts, then its turns in bursts, with its reads, until every job is final."""
        tally = Tally()
        self._each_user(lambda user: self._user_turns(user, tally))
        while not self.observer.queue_settled() and time.monotonic() < self.deadline:
            time.sleep(0.1)  # the event source deletes a batch's messages once its invocation returned
        return tally

    def _user_turns(self, user: str, tally: Tally) -> None:
        work, api, path = self.work, Api(self.url), Api.memory_path(self.tenant, user)
        if work.facts:
            facts = [
                {"id": f"fact-{i}", "text": USER_LINES[i % len(USER_LINES)], "infer": False}
                for i in range(work.facts)
            ]
            tally.call(api, "POST", path, {"items": facts})
        for start in range(0, work.turns, work.burst):
            jobs: list[str] = []
            for number in range(start, min(start + work.burst, work.turns)):
                for _ in range(work.reads):
                    tally.call(api, "GET", path)
                jobs += tally.call(api, "POST", path, {"items": [turn_item(user, number)]})
            statuses = self.observer.wait_final(self.tenant, jobs, self.deadline)
            with tally.lock:
                tally.statuses += statuses
            # A user reads the answer before the next turn: the condensation that finished the burst's
            # jobs has returned by then, and does not take the next turn along.
            time.sleep(work.think_ms / 1000)

    def _each_user(self, step: Callable[[str], None]) -> None:
        self.deadline = time.monotonic() + self.max_seconds
        with ThreadPoolExecutor(max_workers=self.clients) as pool:
            for future in [pool.submit(step, user) for user in self.users]:
                future.result()
