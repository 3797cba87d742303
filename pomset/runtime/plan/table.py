"""A runner's translator table: how it executes each plan kind. The runner registers its
own translators, and each extension (Kafka, templates, O+, DGS) registers its kinds' from
its own module, so the runner's core names none of them."""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from ...sdk.errors import PipelineConstructionError
from .kinds import KINDS
from .node import PlanNode

Translator = Callable[..., Any]


class UntranslatableError(PipelineConstructionError):
    """A plan node of a kind the runner has no translator for."""


class TranslatorTable:
    """Translators by plan kind, for the runner named `runner`."""

    def __init__(self, runner: str) -> None:
        self.runner = runner
        self._translators: Dict[str, Translator] = {}

    def register(self, kind: str, translator: Optional[Translator] = None) -> Any:
        """Translate nodes of `kind` with `translator(plan_node, *args, **kwargs)`; without
        `translator`, a decorator that registers the function it decorates."""
        if kind not in KINDS:
            raise ValueError(f"{self.runner}: no plan kind {kind!r} (known: {', '.join(KINDS)})")
        if translator is None:
            def decorate(fn: Translator) -> Translator:
                self._translators[kind] = fn
                return fn
            return decorate
        self._translators[kind] = translator
        return translator

    def translator(self, kind: str) -> Optional[Translator]:
        """The translator registered for `kind`, if any."""
        return self._translators.get(kind)

    def __contains__(self, kind: str) -> bool:
        return kind in self._translators

    def translate(self, node: PlanNode, *args: Any, **kwargs: Any) -> Any:
        """What the translator of the node's kind makes of it."""
        fn = self._translators.get(node.kind)
        if fn is None:
            raise UntranslatableError(
                f"the {self.runner} runner cannot run {type(node.transform).__name__} "
                f"({node.label}): no translator for plan kind {node.kind!r}")
        return fn(node, *args, **kwargs)
