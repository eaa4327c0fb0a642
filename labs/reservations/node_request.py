"""What a booking asks for: named nodes, a count for the portal to pick, or the whole lab (exactly one)."""

from __future__ import annotations

import dataclasses

from accounts.errors import InvalidInput


@dataclasses.dataclass(frozen=True)
class NodeRequest:
    """Exactly one of: named nodes, a count for the portal to pick, or the whole lab."""

    names: tuple[str, ...] = ()
    count: int | None = None
    all_nodes: bool = False

    def __post_init__(self) -> None:
        # The one check of the rule, for the API, the booking form and every other caller.
        if sum((bool(self.names), self.count is not None, self.all_nodes)) != 1:
            raise InvalidInput(
                "Give exactly one of: nodes (names), node_count, or all_nodes: true.",
                fields={"nodes": "Give exactly one of: nodes (names), node_count, or all_nodes: true."},
            )

    @property
    def kind(self) -> str:
        return "all" if self.all_nodes else ("count" if self.count is not None else "named")
