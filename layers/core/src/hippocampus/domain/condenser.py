"""The condensation engine: old memory + new items → one summary within the word budget.

One LLM call per batch of items (coalescing); the answer is cleaned, held to `max_words` (one firmer
retry, then a cut at a sentence boundary) and never replaces a memory with nothing
(docs/architecture.md "Condensation").
"""

from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass

from hippocampus.contracts.ports import LanguageModel, LlmResult, Tracing
from hippocampus.contracts.prompt_format import count_words
from hippocampus.domain.budget import clean_answer, fit_budget
from hippocampus.domain.prompt import (
    FIRMER_INSTRUCTION,
    SYSTEM_PROMPT,
    CondenseInput,
    PromptTemplate,
    combined_instructions,
    combined_user_name,
    render_items,
)
from hippocampus.observability import logger


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
    ) -> None:
        if max_words < 1:
            raise ValueError("max_words must be positive")
        self.provider = provider
        self.max_words = max_words
        self.template = template or PromptTemplate.built_in()
        self._tracing = tracing
        self._log_content = log_content

    def build_prompt(self, old_memory: str | None, items: Sequence[CondenseInput]) -> str:
        return self.template.render(
            old_memory=old_memory,
            new_content=render_items(items),
            max_words=self.max_words,
            user_name=combined_user_name(items),
            custom_instructions=combined_instructions(items),
        )

    def condense(self, old_memory: str | None, items: Sequence[CondenseInput]) -> CondenseOutcome:
        """Provider errors propagate: the caller fails the SQS record and redelivery retries."""
        if not items:
            return self._keep(old_memory, calls=0, tokens=(0, 0))
        prompt = self.build_prompt(old_memory, items)
        first = self._call(prompt)
        tokens = (first.prompt_tokens, first.completion_tokens)
        answer = clean_answer(first.text)
        if not answer:
            self._event("condense.empty_answer", {"llm_calls": 1})
            return self._keep(old_memory, calls=1, tokens=tokens)
        if count_words(answer) <= self.max_words:
            return self._done(old_memory, answer, calls=1, tokens=tokens, retried=False)

        self._event("condense.budget_retry", {"words": count_words(answer), "max_words": self.max_words})
        firmer = FIRMER_INSTRUCTION.format(words=count_words(answer), max_words=self.max_words)
        second = self._call(prompt + firmer)
        tokens = (tokens[0] + second.prompt_tokens, tokens[1] + second.completion_tokens)
        # An empty second answer must not wipe anything: fall back to (a cut of) the first one.
        answer = clean_answer(second.text) or answer
        return self._done(old_memory, answer, calls=2, tokens=tokens, retried=True)

    def _done(
        self, old: str | None, answer: str, *, calls: int, tokens: tuple[int, int], retried: bool
    ) -> CondenseOutcome:
        memory, cut = fit_budget(answer, self.max_words)
        if cut:
            self._event("condense.budget_cut", {"words": count_words(answer), "max_words": self.max_words})
        return _outcome(memory, cut, calls, tokens, changed=memory != (old or "").strip(), retried=retried)

    def _keep(self, old: str | None, *, calls: int, tokens: tuple[int, int]) -> CondenseOutcome:
        """Keep the old memory; still hold it to the budget (max_words may have been lowered)."""
        memory, cut = fit_budget(old.strip(), self.max_words) if old and old.strip() else (old, False)
        return _outcome(memory, cut, calls, tokens, changed=cut)

    def _call(self, prompt: str) -> LlmResult:
        span = (
            self._tracing.span("llm.complete", provider=self.provider.name)
            if self._tracing
            else nullcontext()
        )
        with span:
            result = self.provider.complete(SYSTEM_PROMPT, prompt)
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
