"""Where an elastic job records its members: the status fields, and the members they hold.

The scaling machinery (:mod:`etctl.common._scaling`) keeps an elastic job's members in its status;
a kind names the fields (:class:`MemberFields`, et-operator's :data:`WORKER_FIELDS` by default)
in its :class:`~etctl.common.ElasticMembers`, and :class:`Members` is what they hold at one read.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["WORKER_FIELDS", "MemberFields", "Members"]


@dataclass(frozen=True, slots=True, kw_only=True)
class MemberFields:
    """Where an elastic kind records its members in a job's status, as JSON field names.

    The scaling machinery writes only these fields (patches of ``/status`` guarded by their values
    as read, :meth:`owned`), and is their only writer; each is a top-level field of ``status``.
    The job controller renders the ``Scaling`` condition and the phase from them.

    Attributes:
        targets: the list of members the job should have (the plan pods are created from).
        current: the list of members in use (the hostfile), in index order.
        last_index: the highest member index ever used (an integer).
        scaler: the scaler being executed (``<Kind>:<namespace>/<name>``).
        phase: a phase field the job controller keeps equal to the latest condition that holds
            (et-operator's ``phase``), or None when the kind has none.
        replaced: a counter of the members replaced under new names (failed or vanished), written
            in the same patch as the targets that replace them, so it is exact and survives an
            operator restart (a kind whose restart budget spans replacements reads it), or None.
    """

    targets: str
    current: str
    last_index: str
    scaler: str
    phase: str | None = None
    replaced: str | None = None

    def owned(self) -> tuple[str, ...]:
        """The fields the scaling machinery writes (the phase is the job controller's)."""
        names = (self.targets, self.current, self.last_index, self.scaler, self.replaced)
        return tuple(name for name in names if name is not None)

    def decided(self) -> tuple[str, ...]:
        """The fields of the machinery's decisions on the members, which the job controller reads.

        They say which pods to have and whether a failed one is replaced. The job controller's
        status write is guarded by them too: a verdict from targets the machinery changed
        meanwhile (a failed worker just replaced) would be wrong, and a failure is final. The
        members in use and the scaler are not among them: what the job controller renders from
        those, the next reconcile renders again.
        """
        names = (self.targets, self.last_index, self.replaced)
        return tuple(name for name in names if name is not None)


@dataclass(frozen=True, slots=True, kw_only=True)
class Members:
    """An elastic job's members as its status records them, and where (see :class:`MemberFields`).

    Attributes:
        fields: the status fields that hold them.
        targets: the members the job should have, by pod name.
        current: the members in use, by pod name.
        last_index: the highest member index ever used (None: none yet).
        scaler: the scaler being executed, or None.
        replaced: members replaced so far (0 when the kind keeps no such counter).
    """

    fields: MemberFields
    targets: tuple[str, ...] = ()
    current: tuple[str, ...] = ()
    last_index: int | None = None
    scaler: str | None = None
    replaced: int = 0


WORKER_FIELDS = MemberFields(
    targets="targetWorkers",
    current="currentWorkers",
    last_index="lastWorkerIndex",
    scaler="currentScaler",
    phase="phase",
)
"""et-operator's status fields of an elastic job's members (``ElasticWorkersStatus``)."""
