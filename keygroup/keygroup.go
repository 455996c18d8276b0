// Package keygroup is the one owner of "which group a lock key belongs to": the label
// `lockscope exporter` puts on its per-group metrics, the TUI's contention overview and the
// default name of locklib's metrics adapters. It depends on the standard library only.
//
// A rule is what an operator writes (Parse): "segment:N", "prefix:P1,P2,..." or "regex:RE".
// A Folder caps how many distinct groups come out of it, so that keys nobody planned for (a
// segment holding an id) cannot blow up a metrics system's series count.
package keygroup

import (
	"errors"
	"fmt"
	"hash/maphash"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// None is the group of a key that has no part the rule asks for.
const None = "_"

// Other is the group every group past a Folder's cap folds into.
const Other = "_other"

// MaxLen bounds a group's length in bytes: a group is a label value, not a copy of the key.
const MaxLen = 64

type kind uint8

const (
	bySegment kind = iota
	byPrefix
	byRegex
)

// Rule maps a key to its group. The zero Rule is not valid; use Default or Parse.
type Rule struct {
	kind     kind
	segment  int            // bySegment: 1-based
	prefixes []string       // byPrefix: longest first
	re       *regexp.Regexp // byRegex: has a capture group
	spec     string
}

// Default is "segment:2": lock:orders:42 → orders.
var Default = Rule{kind: bySegment, segment: 2, spec: "segment:2"}

// Parse reads an operator's rule:
//   - "segment:N": the Nth ':'-separated segment of the key, 1-based ("segment:2":
//     lock:orders:42 → orders);
//   - "prefix:P1,P2,...": the longest listed prefix the key starts with;
//   - "regex:RE": the text of RE's first capture group in the key's leftmost match.
//
// A key with no such part (too few segments, an empty one, no listed prefix, no match) is in
// group None.
func Parse(spec string) (Rule, error) {
	name, arg, ok := strings.Cut(spec, ":")
	if !ok {
		return Rule{}, fmt.Errorf("key group rule %q: want segment:N, prefix:P1,P2,... or regex:RE", spec)
	}
	switch name {
	case "segment":
		n, err := strconv.Atoi(arg)
		if err != nil || n < 1 {
			return Rule{}, fmt.Errorf("key group rule %q: the segment must be a number from 1", spec)
		}
		return Rule{kind: bySegment, segment: n, spec: spec}, nil
	case "prefix":
		var prefixes []string
		for p := range strings.SplitSeq(arg, ",") {
			if p != "" {
				prefixes = append(prefixes, p)
			}
		}
		if len(prefixes) == 0 {
			return Rule{}, fmt.Errorf("key group rule %q: no prefix listed", spec)
		}
		sort.SliceStable(prefixes, func(i, j int) bool { return len(prefixes[i]) > len(prefixes[j]) })
		return Rule{kind: byPrefix, prefixes: prefixes, spec: spec}, nil
	case "regex":
		re, err := regexp.Compile(arg)
		if err != nil {
			return Rule{}, fmt.Errorf("key group rule %q: %w", spec, err)
		}
		if re.NumSubexp() < 1 {
			return Rule{}, fmt.Errorf("key group rule %q: the regex needs a capture group, the group's text", spec)
		}
		return Rule{kind: byRegex, re: re, spec: spec}, nil
	}
	return Rule{}, fmt.Errorf("key group rule %q: unknown kind %q (segment, prefix or regex)", spec, name)
}

// String is the rule as Parse reads it.
func (r Rule) String() string { return r.spec }

// Group is key's group: never "", None when the key has no part the rule asks for. The result
// is safe to show and to use as a label value: valid UTF-8, every non-printable rune replaced
// by '?', at most MaxLen bytes. It may share memory with key.
func (r Rule) Group(key string) string {
	var g string
	switch r.kind {
	case bySegment:
		g = segment(key, r.segment)
	case byPrefix:
		for _, p := range r.prefixes {
			if strings.HasPrefix(key, p) {
				g = p
				break
			}
		}
	case byRegex:
		if m := r.re.FindStringSubmatchIndex(key); m != nil && m[2] >= 0 {
			g = key[m[2]:m[3]]
		}
	}
	return Safe(g)
}

// Safe makes a name that does not come from Group (a key-to-name function's) what Group's
// results are: printable UTF-8 of at most MaxLen bytes, None when empty. It allocates only
// when it changes the name.
func Safe(name string) string {
	if name == "" {
		return None
	}
	return safe(name)
}

// segment is the nth (1-based) ':'-separated segment of key, "" when it has fewer.
func segment(key string, n int) string {
	for ; n > 1; n-- {
		i := strings.IndexByte(key, ':')
		if i < 0 {
			return ""
		}
		key = key[i+1:]
	}
	if i := strings.IndexByte(key, ':'); i >= 0 {
		key = key[:i]
	}
	return key
}

// safe makes g valid, printable UTF-8 of at most MaxLen bytes, without allocating when it is
// already so.
func safe(g string) string {
	if isSafe(g) {
		return g
	}
	var b strings.Builder
	for _, r := range g {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			r = '?'
		}
		if b.Len()+utf8.RuneLen(r) > MaxLen {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isSafe(g string) bool {
	if len(g) > MaxLen {
		return false
	}
	for i := 0; i < len(g); i++ {
		if c := g[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}

// Folder caps distinct groups: the first max distinct groups it sees pass through, later new
// ones fold into Other. It is safe for concurrent use.
type Folder struct {
	mu     sync.Mutex
	max    int
	passed map[string]struct{}
	// folded holds a hash of each distinct folded group (a fixed 8 bytes each, whatever the
	// group's length), only to count them, up to MaxFoldedCounted.
	folded map[uint64]struct{}
	seed   maphash.Seed
}

// NewFolder returns a Folder that passes max distinct groups through; max < 1 is an error
// of the caller's and panics.
func NewFolder(max int) *Folder {
	if max < 1 {
		panic(errors.New("keygroup.NewFolder: max must be at least 1"))
	}
	return &Folder{max: max, passed: map[string]struct{}{}, folded: map[uint64]struct{}{}, seed: maphash.MakeSeed()}
}

// Fold returns group when it is one of the first max distinct groups seen, else Other.
// Other itself always passes (it is the fold, not a group competing for a place).
func (f *Folder) Fold(group string) string {
	if group == Other {
		return Other
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.passed[group]; ok {
		return group
	}
	if len(f.passed) < f.max {
		f.passed[strings.Clone(group)] = struct{}{}
		return group
	}
	if len(f.folded) < MaxFoldedCounted {
		f.folded[maphash.String(f.seed, group)] = struct{}{}
	}
	return Other
}

// MaxFoldedCounted bounds Folded: keys with an id where the group is (lock:<uuid>) would
// otherwise grow a long-running process's count of distinct folded groups forever. Counting
// up to it costs at most a few MiB.
const MaxFoldedCounted = 1 << 17

// Folded counts the distinct groups folded into Other so far, up to MaxFoldedCounted (then
// it stays there: at least that many).
func (f *Folder) Folded() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.folded)
}
