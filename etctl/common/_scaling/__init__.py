"""Elastic scaling shared by every elastic job kind: ScaleIn/ScaleOut and the scaling machinery.

* :mod:`~etctl.common._scaling.api`: the ScaleIn and ScaleOut models and CRDs, and the status of an
  elastic job's worker membership.
"""
