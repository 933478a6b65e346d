"""The condensation engine: old memory + current records + new items → one summary within the
budget and the operations on the records, in one structured answer.

One LLM call per batch of items (coalescing). An answer that breaks the schema is asked again once,
then its summary alone is kept; a plain-text answer (a model without structured outputs) is the
summary alone, without a second call. The summary is cleaned, held to `max_words` words and their
character bound (one firmer retry when time allows, then a cut at a sentence boundary), and an empty
answer is a malfunction, never a reason to replace or keep a memory (docs/architecture.md
"Condensation").
"""

import json
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace

from hippocampus.contracts.errors import ServiceError
from hippocampus.contracts.ports import LanguageModel, LlmResult, Tracing
from hippocampus.contracts.prompt_format import count_words, record_line
from hippocampus.contracts.records import ANSWER_SCHEMA, CondensationAnswer, MemoryRecord, RecordOperation
from hippocampus.domain.budget import (
    clean_answer,
    fit_budget,
    max_memory_chars,
    means_nothing_to_keep,
    within_budget,
)
from hippocampus.domain.clock import Clock, utc_now
from hippocampus.domain.condense.deadline import Deadline, require_time_for_a_call
from hippocampus.domain.condense.prompt import (
    FIRMER_CHARS_INSTRUCTION,
    FIRMER_INSTRUCTION,
    SCHEMA_RETRY_INSTRUCTION,
    SYSTEM_PROMPT,
    CondenseInput,
    PromptTemplate,
    combined_instructions,
    combined_user_name,
    render_items,
    spoken_date,
)
from hippocampus.observability import logger


class EmptyAnswer(ServiceError):
    """The prompt asks for the memory (or NOTHING_TO_KEEP) when nothing is new: empty is a malfunction."""

    code = "empty_llm_answer"


class UnreadableAnswer(ServiceError):
    """Twice an answer that is neither the schema's JSON nor holds a summary: SQS tries again later."""

    code = "unreadable_llm_answer"


@dataclass(frozen=True)
class Answer:
    """One answer read: its summary text and operations, and whether it broke the schema."""

    summary: str
    operations: tuple[RecordOperation, ...] = ()
    broken: bool = False


@dataclass(frozen=True)
class CondenseOutcome:
    memory: str | None
    word_count: int
    llm_calls: int
    budget_cut: bool
    prompt_tokens: int
    completion_tokens: int
    changed: bool
    retried: bool = False
    operations: tuple[RecordOperation, ...] = field(default=())
    # The answer broke the schema and was asked again.
    schema_retried: bool = False


class Condenser:
    """Merges a batch of one user's items into that user's memory with one LLM call."""

    def __init__(
        self,
        provider: LanguageModel,
        max_words: int,
        template: PromptTemplate | None = None,
        *,
        tracing: Tracing | None = None,
        log_content: bool = False,
        clock: Clock = utc_now,
    ) -> None:
        if max_words < 1:
            raise ValueError("max_words must be positive")
        self.provider = provider
        self.max_words = max_words
        self.template = template or PromptTemplate.built_in()
        self._tracing = tracing
        self._log_content = log_content
        self._clock = clock  # today's date, in the prompt

    def build_prompt(
        self, old_memory: str | None, items: Sequence[CondenseInput], records: Sequence[MemoryRecord] = ()
    ) -> str:
        return self.template.render(
            old_memory=old_memory,
            new_content=render_items(items),
            max_words=self.max_words,
            user_name=combined_user_name(items),
            custom_instructions=combined_instructions(items),
            today=self._clock(),
            records=render_records(records),
        )

    def condense(
        self,
        old_memory: str | None,
        items: Sequence[CondenseInput],
        deadline: Deadline | None = None,
        records: Sequence[MemoryRecord] = (),
    ) -> CondenseOutcome:
        """Provider errors and empty answers propagate: the caller fails the SQS record, and
        redelivery retries it. With `deadline`, no LLM call runs past `deadline.seconds_left()`.
        `records`: the user's current records the prompt lists (those operations may name)."""
        if not items:
            return self._keep(old_memory, calls=0, tokens=(0, 0))
        require_time_for_a_call(deadline)
        prompt = self.build_prompt(old_memory, items, records)
        first = self._call(prompt, deadline)
        calls, tokens = 1, (first.prompt_tokens, first.completion_tokens)
        answer = read_answer(first.text)
        if answer.broken:
            answer, calls, tokens = self._retry_broken(prompt, answer, tokens, deadline)
        summary = clean_answer(answer.summary)
        if means_nothing_to_keep(summary):
            outcome = self._keep(old_memory, calls=calls, tokens=tokens)
        elif not summary:
            self._event("condense.empty_answer", {"llm_calls": calls})
            raise EmptyAnswer("the LLM answered nothing; the memory was kept as it was")
        elif within_budget(summary, self.max_words):
            outcome = self._done(old_memory, summary, calls=calls, tokens=tokens, retried=False)
        else:
            outcome = self._retry_over_budget(old_memory, prompt, summary, tokens, deadline, calls)
        return replace(outcome, operations=answer.operations, schema_retried=calls > 1)

    def _retry_broken(
        self, prompt: str, answer: Answer, tokens: tuple[int, int], deadline: Deadline | None
    ) -> tuple[Answer, int, tuple[int, int]]:
        """One more call for an answer that broke the schema; then the summary of either alone."""
        self._event("condense.schema_retry", {})
        if deadline is None or deadline.allows_call():
            second = self._call(prompt + SCHEMA_RETRY_INSTRUCTION, deadline)
            tokens = (tokens[0] + second.prompt_tokens, tokens[1] + second.completion_tokens)
            retry = read_answer(second.text)
            if not retry.broken:
                return retry, 2, tokens
            answer = answer if answer.summary else retry
            calls = 2
        else:
            calls = 1
        if not answer.summary:
            raise UnreadableAnswer("the LLM's answer was unreadable twice; the memory was kept as it was")
        return Answer(answer.summary, (), broken=True), calls, tokens

    def _retry_over_budget(
        self,
        old: str | None,
        prompt: str,
        answer: str,
        tokens: tuple[int, int],
        deadline: Deadline | None,
        calls: int = 1,
    ) -> CondenseOutcome:
        """One call with a firmer instruction; the first answer, cut, whenever that call cannot help.
        The operations stay those of the first answer: the retry only shortens the summary."""
        self._event("condense.budget_retry", self._size(answer))
        if deadline is not None and not deadline.allows_call():
            self._event("condense.budget_retry_skipped", {"reason": "no time left"})
            return self._done(old, answer, calls=calls, tokens=tokens, retried=False)
        try:
            second = self._call(prompt + self._firmer(answer), deadline)
        except Exception as error:
            # The first answer is a valid summary: cut it, rather than fail the items for the retry.
            logger.warning(
                "condense.budget_retry_failed",
                extra={"provider": self.provider.name, "error_type": type(error).__name__},
            )
            return self._done(old, answer, calls=calls + 1, tokens=tokens, retried=True)
        tokens = (tokens[0] + second.prompt_tokens, tokens[1] + second.completion_tokens)
        retry = clean_answer(read_answer(second.text).summary)
        # An empty second answer must not wipe anything: fall back to (a cut of) the first one.
        if retry and not means_nothing_to_keep(retry):
            answer = retry
        return self._done(old, answer, calls=calls + 1, tokens=tokens, retried=True)

    def _firmer(self, answer: str) -> str:
        words = count_words(answer)
        if words > self.max_words:
            return FIRMER_INSTRUCTION.format(words=words, max_words=self.max_words)
        return FIRMER_CHARS_INSTRUCTION.format(
            chars=len(answer), max_chars=max_memory_chars(self.max_words), max_words=self.max_words
        )

    def _size(self, answer: str) -> dict[str, int]:
        return {
            "words": count_words(answer),
            "chars": len(answer),
            "max_words": self.max_words,
            "max_chars": max_memory_chars(self.max_words),
        }

    def _done(
        self,
        old: str | None,
        answer: str,
        *,
        calls: int,
        tokens: tuple[int, int],
        retried: bool,
    ) -> CondenseOutcome:
        memory, cut = fit_budget(answer, self.max_words)
        if cut:
            self._event("condense.budget_cut", self._size(answer))
        return _outcome(memory, cut, calls, tokens, changed=memory != (old or "").strip(), retried=retried)

    def _keep(self, old: str | None, *, calls: int, tokens: tuple[int, int]) -> CondenseOutcome:
        """Keep the old memory; still hold it to the budget (max_words may have been lowered)."""
        memory, cut = fit_budget(old.strip(), self.max_words) if old and old.strip() else (old, False)
        return _outcome(memory, cut, calls, tokens, changed=cut)

    def _call(self, prompt: str, deadline: Deadline | None) -> LlmResult:
        span = (
            self._tracing.span("llm.complete", provider=self.provider.name)
            if self._tracing
            else nullcontext()
        )
        with span:
            timeout_s = deadline.seconds_left() if deadline is not None else None
            result = self.provider.complete(SYSTEM_PROMPT, prompt, timeout_s=timeout_s, schema=ANSWER_SCHEMA)
        if self._log_content:
            self._event("condense.llm_answer", {"answer": result.text})
        return result

    def _event(self, event: str, fields: Mapping[str, object]) -> None:
        # Ids and counts only; the answer itself is added solely under MEMORY_LOG_CONTENT=true.
        logger.info(event, extra={"provider": self.provider.name, **fields})


def _outcome(
    memory: str | None,
    cut: bool,
    calls: int,
    tokens: tuple[int, int],
    *,
    changed: bool,
    retried: bool = False,
) -> CondenseOutcome:
    return CondenseOutcome(
        memory=memory,
        word_count=count_words(memory),
        llm_calls=calls,
        budget_cut=cut,
        prompt_tokens=tokens[0],
        completion_tokens=tokens[1],
        changed=changed,
        retried=retried,
    )


def read_answer(text: str) -> Answer:
    """The summary and operations of an answer. JSON (in a code fence or not) must match the schema,
    else it is `broken` (its `summary` string kept when it has one); plain text is the summary alone."""
    body = clean_answer(text)
    if not body.startswith("{"):
        return Answer(body)  # a model without structured outputs: the summary alone
    try:
        data = json.loads(body)
    except ValueError:
        return Answer("", broken=True)
    try:
        parsed = CondensationAnswer.model_validate(data)
    except ValueError:
        summary = data.get("summary") if isinstance(data, dict) else None
        return Answer(summary if isinstance(summary, str) else "", broken=True)
    return Answer(parsed.summary, tuple(parsed.operations))


def render_records(records: Sequence[MemoryRecord]) -> str:
    """The records as the prompt lists them, one a line (`contracts/prompt_format.record_line`)."""
    return "\n".join(
        record_line(record.id, record.category, spoken_date(record.valid_from, with_time=False), record.text)
        for record in records
    )
