// Package present decides how lockscope shows locks, for the CLI and the TUI alike: how
// durations, ages and TTLs read, which flags a lock carries and what they are called, the
// sort orders, the table's columns, and how text read from Redis is made safe for a
// terminal. The scanner returns data as read; the outputs call this package when they render.
//
// Both outputs must agree on every format: cli and ui have no formatting of their own for
// these, and present_test.go pins the shared behaviour.
package present
