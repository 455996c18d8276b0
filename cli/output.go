package cli

import (
	"io"
	"sync"

	"github.com/lockscope/lockscope/present"
)

// printf is the one way the CLI writes text: it renders format with present.Sprintf, which
// escapes every argument that is text (keys, values, holders and errors from Redis; keys from
// the command line), so nothing from outside reaches the terminal unescaped. Messages and
// errors are built raw and escaped here, once. JSON output escapes through encoding/json and
// present.SafeText on the values (docs/cli.md). TestTextOutputGoesThroughPrintf keeps every
// other file of the package from writing to a stream directly.
func printf(w io.Writer, format string, args ...any) error {
	_, err := io.WriteString(w, string(present.Sprintf(format, args...)))
	return err
}

// writeRendered writes text already made safe piece by piece: rows of `ls` whose cells went
// through present.SafeText and JSON lines whose values did, built without Sprintf's
// reflection because there are a million of them.
func writeRendered(w io.Writer, b []byte) error {
	_, err := w.Write(b)
	return err
}

// lockedWriter serializes the writes of several goroutines to one stream (the exporter's
// census log, failover follower and serving line to stderr); printf still formats them.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
