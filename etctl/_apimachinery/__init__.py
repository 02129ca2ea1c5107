"""Kubernetes' API machinery rules, once, below every layer: quantities and CRD schemas.

The embedded API server (``etctl.testing``) applies these rules to what clients send, and the
product applies the same ones to what it generates and reads: the JobController sums a gang's
``minResources`` and validates them with :mod:`~etctl._apimachinery.quantity`, CRD generation
checks every schema with :mod:`~etctl._apimachinery.structural` before a cluster sees it, and the
CLI reads resource flags with the same parser. Two parsers of one syntax would disagree at the
edges; one cannot.

* :mod:`~etctl._apimachinery.quantity`: ``resource.Quantity``'s parsing, messages and canonical
  text, and exact sums by resource name;
* :mod:`~etctl._apimachinery.structural`: why kube-apiserver would refuse a CRD version's
  schema (OpenAPI rules, structural invariants, defaults), on
  :mod:`~etctl._apimachinery.openapichecks`, :mod:`~etctl._apimachinery.schemapath`,
  :mod:`~etctl._apimachinery.defaulting` (pruning and defaults) and
  :mod:`~etctl._apimachinery.validator` (a value against a schema, with
  :mod:`~etctl._apimachinery.formats` and :mod:`~etctl._apimachinery.resourcechecks`);
* :mod:`~etctl._apimachinery.fielderror`: field errors as the server words them (with
  :mod:`~etctl._apimachinery.gofmt`, Go's formatting of values).

It imports nothing of etctl but ``etctl._gostrings`` (an import contract), so the runtime, the
common layer and the embedded server may all stand on it.
"""

__all__: list[str] = []
