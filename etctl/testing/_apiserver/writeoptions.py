"""The options of a create, update or patch, as a request gives them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from etctl.testing._apiserver.admissionrequest import Admission

__all__ = ["WriteOptions"]


@dataclass(slots=True)
class WriteOptions:
    """Options of a create, update or patch.

    Attributes:
        dry_run: run everything, commit nothing (``dryRun=All``).
        field_manager: the ``fieldManager`` of the request.
        field_validation: ``Strict``, ``Warn`` (the default), or ``Ignore`` for unknown fields.
        user_agent: the client's ``User-Agent`` (names the manager of non-apply writes).
        applying: set by server-side apply, whose result already records its manager.
        warnings: filled with the warnings the request produced (``Warning`` headers).
        admission: the request's admission (webhooks), for requests that arrive over HTTP;
            None for the internal API.
    """

    dry_run: bool = False
    field_manager: str = ""
    field_validation: str = ""
    user_agent: str = ""
    applying: bool = False
    warnings: list[str] = field(default_factory=list)
    admission: Admission | None = None

    @property
    def manager(self) -> str:
        """Who the write's fields belong to: ``fieldManager``, else the user agent's product."""
        return self.field_manager or self.user_agent.split("/", 1)[0] or "unknown"
