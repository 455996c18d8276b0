package keygroup

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestGroup(t *testing.T) {
	tests := []struct {
		spec, key, want string
	}{
		{"segment:2", "lock:orders:42", "orders"},
		{"segment:2", "lock:orders", "orders"},
		{"segment:2", "lock", None},
		{"segment:2", "lock::42", None},
		{"segment:2", "", None},
		{"segment:1", "lock:orders:42", "lock"},
		{"segment:3", "lock:orders:42", "42"},
		{"segment:4", "lock:orders:42", None},
		{"prefix:lock:orders:,lock:", "lock:orders:42", "lock:orders:"},
		{"prefix:lock:,lock:orders:", "lock:orders:42", "lock:orders:"},
		{"prefix:lock:,lock:orders:", "lock:users:1", "lock:"},
		{"prefix:lock:,lock:orders:", "mutex:1", None},
		{"regex:^app/([a-z]+)/", "app/billing/7", "billing"},
		{"regex:^app/([a-z]+)/", "web/billing/7", None},
		{"regex:^x(a*)y", "xy", None},
		{"regex:(a)|(b)", "b", None},
		{"segment:2", "lock:\xff\x00b:1", "??b"},
		{"segment:2", "lock:café:1", "café"},
		{"segment:2", "lock:" + strings.Repeat("g", 100) + ":1", strings.Repeat("g", MaxLen)},
		{"segment:2", "lock:" + strings.Repeat("é", 40), strings.Repeat("é", MaxLen/2)},
	}
	for _, tc := range tests {
		r, err := Parse(tc.spec)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.spec, err)
		}
		if got := r.Group(tc.key); got != tc.want {
			t.Errorf("%s: Group(%q) = %q, want %q", tc.spec, tc.key, got, tc.want)
		}
	}
}

// TestSafe: a name from elsewhere becomes what Group returns.
func TestSafe(t *testing.T) {
	for name, want := range map[string]string{
		"orders": "orders", "": None, "bad\xff": "bad?", "new\nline": "new?line",
		strings.Repeat("x", 100): strings.Repeat("x", MaxLen),
	} {
		if got := Safe(name); got != want {
			t.Errorf("Safe(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestDefaultIsSegment2(t *testing.T) {
	if got := Default.Group("lock:orders:42"); got != "orders" {
		t.Errorf("Default.Group = %q, want orders", got)
	}
	parsed, err := Parse(Default.String())
	if err != nil || parsed.Group("a:b:c") != Default.Group("a:b:c") {
		t.Errorf("Parse(Default.String()) = %v, %v; not the default rule", parsed, err)
	}
}

func TestParseRejects(t *testing.T) {
	for _, spec := range []string{"", "segment", "segment:0", "segment:-1", "segment:x", "prefix:", "prefix:,,", "regex:(", "regex:abc", "glob:*"} {
		if r, err := Parse(spec); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", spec, r)
		}
	}
}

func TestGroupOfPlainKeyDoesNotAllocate(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = Default.Group("lock:orders:42") }); n != 0 {
		t.Errorf("Group of a plain key allocates %v times", n)
	}
}

func TestFolder(t *testing.T) {
	f := NewFolder(2)
	for _, step := range []struct{ in, want string }{
		{"a", "a"}, {"b", "b"}, {"c", Other}, {"a", "a"}, {"d", Other}, {"c", Other}, {Other, Other}, {"b", "b"},
	} {
		if got := f.Fold(step.in); got != step.want {
			t.Errorf("Fold(%q) = %q, want %q", step.in, got, step.want)
		}
	}
	if got := f.Folded(); got != 2 {
		t.Errorf("Folded() = %d, want 2 (c and d)", got)
	}
}

// TestFolderBoundsDistinctGroups: 100,000 distinct keys, each in its own group, come out as at
// most max+1 distinct groups, from concurrent callers.
func TestFolderBoundsDistinctGroups(t *testing.T) {
	const max, keys, workers = 100, 100_000, 4
	f := NewFolder(max)
	var mu sync.Mutex
	out := map[string]bool{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			seen := map[string]bool{}
			for i := w; i < keys; i += workers {
				seen[f.Fold(Default.Group(fmt.Sprintf("lock:g%d:1", i)))] = true
			}
			mu.Lock()
			defer mu.Unlock()
			for g := range seen {
				out[g] = true
			}
		})
	}
	wg.Wait()
	if len(out) != max+1 || !out[Other] {
		t.Errorf("%d distinct groups out (Other among them: %v), want %d", len(out), out[Other], max+1)
	}
	if got := f.Folded(); got != keys-max {
		t.Errorf("Folded() = %d, want %d", got, keys-max)
	}
}

func TestNewFolderRejectsNoRoom(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewFolder(0) did not panic")
		}
	}()
	NewFolder(0)
}

// FuzzGroup: whatever the key and rule, a group is a non-empty, printable, valid UTF-8 label of
// at most MaxLen bytes.
func FuzzGroup(f *testing.F) {
	f.Add("segment:2", "lock:orders:42")
	f.Add("prefix:lock:o,lock:", "lock:\xff\x00")
	f.Add("regex:^(.*)$", strings.Repeat("é", 50))
	f.Fuzz(func(t *testing.T, spec, key string) {
		r, err := Parse(spec)
		if err != nil {
			r = Default
		}
		g := r.Group(key)
		if g == "" || len(g) > MaxLen || !utf8.ValidString(g) {
			t.Fatalf("%s: Group(%q) = %q: empty, longer than %d or invalid UTF-8", r, key, g, MaxLen)
		}
		for _, c := range g {
			if !unicode.IsPrint(c) {
				t.Fatalf("%s: Group(%q) = %q holds non-printable %U", r, key, g, c)
			}
		}
	})
}

// TestFoldedCountIsBounded: past MaxFoldedCounted distinct folded groups the count (and the
// memory behind it) stops growing.
func TestFoldedCountIsBounded(t *testing.T) {
	f := NewFolder(1)
	f.Fold("kept")
	for i := range MaxFoldedCounted + 1000 {
		f.Fold(fmt.Sprintf("g%d", i))
	}
	if got := f.Folded(); got != MaxFoldedCounted {
		t.Errorf("Folded() = %d, want %d", got, MaxFoldedCounted)
	}
	if len(f.folded) != MaxFoldedCounted {
		t.Errorf("%d hashes kept, want %d", len(f.folded), MaxFoldedCounted)
	}
}
