package ui

import (
	"strings"
	"time"

	"github.com/lockscope/lockscope/present"
	"github.com/lockscope/lockscope/scanner"
)

// matcher is a compiled `/` filter: words separated by spaces, all of which a lock must
// match. A word is
//
//	format:NAME   the lock's format starts with NAME (format:redisson, format:red)
//	holder:TEXT   the holder node contains TEXT; holder:- is an unknown holder
//	meta:TEXT     a bsm lock's metadata contains TEXT (meta: alone: it has metadata)
//	is:FLAG       stuck (held longer than --stuck-after), noexpiry (no TTL), waiters
//	              (someone is queued, as the scanner read the wait queue)
//	group:NAME    the key is in the contention overview's group NAME (its rule, its
//	              folding into _other); %20 in NAME is a space, %25 a percent sign
//	a glob        with * ? or [: a Redis-style glob against the key (lock:order:*)
//	other text    a substring of the key, the holder node or the trace id
//
// and -WORD matches the locks WORD does not. Text is compared case-insensitively, globs as
// the scanner's MATCH does.
type matcher struct {
	raw     string
	terms   []term
	problem string // why a word matches nothing (an unknown flag), for the filter line
	// groupOf is a key's group for group: words (the view build's, viewBuild.groupOf); nil:
	// they match nothing.
	groupOf func(key string) string
}

type termKind uint8

const (
	termText termKind = iota
	termGlob
	termFormat
	termHolder
	termMeta
	termStuck
	termNoExpiry
	termWaiters
	termGroup
	termNothing // an unknown flag
)

// term is one word of a filter.
type term struct {
	kind   termKind
	text   string // lower-cased, or the glob as typed
	negate bool
}

// filterHelp is the filter syntax in short, for the `?` help.
const filterHelp = "/ filter: words that must all match (-word: must not)\n" +
	"  text (key, holder, trace)   glob lock:order:*   meta:TEXT (bsm)\n" +
	"  format:redisson   holder:host-1   holder:- (unknown)\n" +
	"  is:stuck   is:noexpiry   is:waiters   group:NAME"

// groupWord starts the filter word of a key group.
const groupWord = "group:"

// groupNameReplacer writes a group name as one filter word and reads it back: a group may
// hold spaces (a key's segment does), which separate words.
var groupNameReplacer = struct{ escape, unescape *strings.Replacer }{
	strings.NewReplacer("%", "%25", " ", "%20"), strings.NewReplacer("%25", "%", "%20", " "),
}

// groupFilter is the filter word of group name.
func groupFilter(name string) string { return groupWord + groupNameReplacer.escape.Replace(name) }

// filterFlags are the flags is: takes, by name.
var filterFlags = map[string]termKind{"stuck": termStuck, "noexpiry": termNoExpiry, "waiters": termWaiters}

func newMatcher(filter string) matcher {
	m := matcher{raw: filter}
	for _, word := range strings.Fields(filter) {
		t := term{kind: termText}
		if len(word) > 1 && word[0] == '-' {
			t.negate, word = true, word[1:]
		}
		name, arg, hasPrefix := strings.Cut(word, ":")
		switch {
		case hasPrefix && name == "format":
			t.kind, t.text = termFormat, strings.ToLower(arg)
		case hasPrefix && name == "holder":
			t.kind, t.text = termHolder, strings.ToLower(arg)
		case hasPrefix && name == "meta":
			t.kind, t.text = termMeta, strings.ToLower(arg)
		case hasPrefix && name+":" == groupWord:
			t.kind, t.text = termGroup, groupNameReplacer.unescape.Replace(arg)
		case hasPrefix && name == "is":
			kind, ok := filterFlags[strings.ToLower(arg)]
			if !ok {
				kind = termNothing
				m.problem = "is:" + arg + " is no flag (is:stuck, is:noexpiry, is:waiters)"
			}
			t.kind = kind
		case strings.ContainsAny(word, "*?["):
			t.kind, t.text = termGlob, word
		default:
			t.text = strings.ToLower(word)
		}
		m.terms = append(m.terms, t)
	}
	return m
}

// empty reports whether the filter lets everything through.
func (m matcher) empty() bool { return len(m.terms) == 0 }

// match reports whether l passes every word of the filter at now.
func (m matcher) match(l *scanner.Lock, now time.Time, stuckAfter time.Duration) bool {
	for i := range m.terms {
		if m.terms[i].match(l, now, stuckAfter, m.groupOf) == m.terms[i].negate {
			return false
		}
	}
	return true
}

func (t *term) match(l *scanner.Lock, now time.Time, stuckAfter time.Duration, groupOf func(string) string) bool {
	switch t.kind {
	case termGroup:
		return groupOf != nil && groupOf(l.Key) == t.text
	case termGlob:
		return scanner.MatchGlob(t.text, l.Key)
	case termFormat:
		return strings.HasPrefix(string(l.Format), t.text)
	case termHolder:
		if t.text == present.Unknown {
			return l.Node == ""
		}
		return containsFold(l.Node, t.text)
	case termMeta:
		meta := l.Meta()
		return meta != "" && containsFold(meta, t.text)
	case termStuck:
		return present.Stuck(l, now, stuckAfter)
	case termNoExpiry: // a semaphore's key has no TTL by design: its permits expire
		return l.NoExpiry && (!l.IsSemaphore() || l.MaybeNaiveLock())
	case termWaiters:
		return l.HasWaiters && l.Waiters > 0
	case termNothing:
		return false
	}
	return containsFold(l.Key, t.text) || containsFold(l.Node, t.text) || containsFold(l.Trace, t.text)
}

// containsFold is strings.Contains(strings.ToLower(s), lowerNeedle) without allocating for
// ASCII text, which lock keys nearly always are: it runs once per lock per filter change.
func containsFold(s, lowerNeedle string) bool {
	if len(lowerNeedle) > len(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return strings.Contains(strings.ToLower(s), lowerNeedle)
		}
	}
	n := len(lowerNeedle)
	for i := 0; i+n <= len(s); i++ {
		j := 0
		for ; j < n; j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != lowerNeedle[j] {
				break
			}
		}
		if j == n {
			return true
		}
	}
	return false
}
