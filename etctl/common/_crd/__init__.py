"""CustomResourceDefinitions generated from the job API models.

A :class:`CustomResource` describes one kind (group, names, scope, versions with their pydantic
model, printer columns and subresources); :func:`crd_manifest` turns it into an
``apiextensions.k8s.io/v1`` CustomResourceDefinition whose schemas come from
:func:`etctl.common.openapi_schema`. Nothing in ``manifests/base/crds/`` is written by hand:

    etctl crds [manifests/base/crds]          # write one YAML file per CRD
    etctl crds --check [manifests/base/crds]  # exit 1 if the files are stale

The CLI renders, writes and checks those files (``etctl.cli._crdfiles``) for every kind of the
job plugin registry (the ``etctl.jobs`` entry-point group): every registered kind's
``custom_resources``, so a third-party job package gets its CRDs generated the same way.

Invariants checked when a description is built or rendered, so a broken CRD never reaches a
cluster: names are valid and lower-case, exactly one version is the storage version, printer
columns and scale-subresource paths point at schema fields of the right type, and every schema is
structural.
"""

from etctl.common._crd.resource import (
    CRDVersion,
    CustomResource,
    PrinterColumn,
    ScaleSubresource,
    crd_manifest,
)
from etctl.common._openapi import openapi_schema

__all__ = [
    "CRDVersion",
    "CustomResource",
    "PrinterColumn",
    "ScaleSubresource",
    "crd_manifest",
    "openapi_schema",
]
