"""An in-process Kubernetes API server: storage, verbs, watch, and the API machinery it needs."""
