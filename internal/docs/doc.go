// Package docs owns one promise about lockscope's documentation: every Go snippet in
// README.md and docs/ is the body of a runnable example of some package of the module, so
// that what a user copies compiles and has run. It has no code; its test keeps the promise
// (docs_test.go explains the markers and -update-docs).
package docs
