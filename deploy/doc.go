// Package deploy holds the Kubernetes manifests of Four Kingdoms (base,
// components, overlays, dashboards) and the checks that keep them
// deployable without a cluster: Render builds an overlay with the kustomize
// API, and Schemas validates the rendered objects against the OpenAPI v3
// schemas a real API server published (deploy/check/openapi, dumped by
// `make deploy-check`). The tests of this package render every overlay and
// check every object against those schemas and the project's policies
// (docs/operations.md "Checks").
package deploy
