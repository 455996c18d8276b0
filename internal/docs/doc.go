// Package docs owns lockscope's promises about its documentation: every Go snippet in
// README.md and docs/ is the body of a runnable example of some package of the module, so
// that what a user copies compiles and has run (docs_test.go explains the markers and
// -update-docs); and the alert rules in docs/prometheus/ load in Prometheus and do what
// their unit tests say (prometheus_test.go). It has no code; its tests keep the promises.
package docs
