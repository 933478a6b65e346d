"""The condensation engine: old memory + new items → one summary within the budget.

One LLM call per batch of items (coalescing); the answer is cleaned, held to `max_words` words and
their character bound (one firmer retry when time allows, then a cut at a sentence boundary), and
an empty answer is a malfunction, never a reason to replace or keep a memory
(docs/architecture.md "Condensation").
"""

from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass

from hippocampus.contracts.errors import ServiceError
from hippocampus.contracts.ports import LanguageModel, LlmResult, Tracing
from hippocampus.contracts.prompt_format import count_words
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
    SYSTEM_PROMPT,
    CondenseInput,
    PromptTemplate,
    combined_instructions,
    combined_user_name,
    render_items,
)
from hippocampus.observability import logger


class EmptyAnswer(ServiceError):
    """The prompt asks for the memory (or NOTHING_TO_KEEP) when nothing is new: empty is a malfunction."""

    code = "empty_llm_answer"


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

    def build_prompt(self, old_memory: str | None, items: Sequence[CondenseInput]) -> str:
        return self.template.render(
            old_memory=old_memory,
            new_content=render_items(items),
            max_words=self.max_words,
            user_name=combined_user_name(items),
            custom_instructions=combined_instructions(items),
            today=self._clock(),
        )

    def condense(
        self, old_memory: str | None, items: Sequence[CondenseInput], deadline: Deadline | None = None
    ) -> CondenseOutcome:
        """Provider errors and empty answers propagate: the caller fails the SQS record, and
        redelivery retries it. With `deadline`, no LLM call runs past `deadline.seconds_left()`."""
        if not items:
            return self._keep(old_memory, calls=0, tokens=(0, 0))
        require_time_for_a_call(deadline)
        prompt = self.build_prompt(old_memory, items)
        first = self._call(prompt, deadline)
        tokens = (first.prompt_tokens, first.completion_tokens)
        answer = clean_answer(first.text)
        if means_nothing_to_keep(answer):
            return self._keep(old_memory, calls=1, tokens=tokens)
        if not answer:
            self._event("condense.empty_answer", {"llm_calls": 1})
            raise EmptyAnswer("the LLM answered nothing; the memory was kept as it was")
        if within_budget(answer, self.max_words):
            return self._done(old_memory, answer, calls=1, tokens=tokens, retried=False)
        return self._retry_over_budget(old_memory, prompt, answer, tokens, deadline)

    def _retry_over_budget(
        self, old: str | None, prompt: str, answer: str, tokens: tuple[int, int], deadline: Deadline | None
    ) -> CondenseOutcome:
        """One call with a firmer instruction; the first answer, cut, whenever that call cannot help."""
        self._event("condense.budget_retry", self._size(answer))
        if deadline is not None and not deadline.allows_call():
            self._event("condense.budget_retry_skipped", {"reason": "no time left"})
            return self._done(old, answer, calls=1, tokens=tokens, retried=False)
        try:
            second = self._call(prompt + self._firmer(answer), deadline)
        except Exception as error:
            # The first answer is a valid summary: cut it, rather than fail the items for the retry.
            logger.warning(
                "condense.budget_retry_failed",
                extra={"provider": self.provider.name, "error_type": type(error).__name__},
            )
            return self._done(old, answer, calls=2, tokens=tokens, retried=True)
        tokens = (tokens[0] + second.prompt_tokens, tokens[1] + second.completion_tokens)
        retry = clean_answer(second.text)
        # An empty second answer must not wipe anything: fall back to (a cut of) the first one.
        if retry and not means_nothing_to_keep(retry):
            answer = retry
        return self._done(old, answer, calls=2, tokens=tokens, retried=True)

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
        self, old: str | None, answer: str, *, calls: int, tokens: tuple[int, int], retried: bool
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
            result = self.provider.complete(SYSTEM_PROMPT, prompt, timeout_s=timeout_s)
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
