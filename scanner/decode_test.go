package scanner

import (
	"strings"
	"testing"
	"time"
)

func TestDecodeString(t *testing.T) {
	at := time.UnixMilli(1764400000123)
	tests := []struct {
		name, value string
		format      Format
		node, trace string
		acquired    time.Time
		reentry     int
		meta        string
	}{
		{"lockscope", "api-7:req-42:1764400000123:0123456789abcdef", FormatLockscope, "api-7", "req-42", at, 0, ""},
		{"lockscope no trace", "api-7:-:1764400000123:0123456789abcdef", FormatLockscope, "api-7", "", at, 0, ""},
		{"lockscope reentrant", "api-7:-:1764400000123:0123456789abcdef:12", FormatLockscope, "api-7", "", at, 12, ""},
		{"lockscope escaped", "host%3A80:t%25x:1764400000123:0123456789abcdef", FormatLockscope, "host:80", "t%x", at, 0, ""},
		{"lockscope raw ipv6 node", "2001:db8::7:-:1764400000123:0123456789abcdef", FormatLockscope, "2001:db8::7", "", at, 0, ""},
		{"lockscope host:port node", "10.0.0.5:8080:job-9:1764400000123:0123456789abcdef:2", FormatLockscope, "10.0.0.5:8080", "job-9", at, 2, ""},
		{"lockscope bad rand", "api-7:-:1764400000123:0123456789ABCDEF", FormatOpaque, "", "", time.Time{}, 0, ""},
		{"lockscope bad time", "api-7:-:yesterday:0123456789abcdef", FormatOpaque, "", "", time.Time{}, 0, ""},
		{"redsync", "q83vEjRWeJCrze8SNFZ4kA==", FormatRedsync, "", "", time.Time{}, 0, ""},
		{"redsync wrong length reads as bsm + metadata", "q83vEjRWeJCrze8SNFZ4kA=", FormatBSM, "", "", time.Time{}, 0, "="},
		{"bsm bare token", "q83vEjRWeJCrze8SNFZ4kA", FormatBSM, "", "", time.Time{}, 0, ""},
		{"bsm with metadata", "q83vEjRWeJCrze8SNFZ4kAworker=3", FormatBSM, "", "", time.Time{}, 0, "worker=3"},
		{"bsm url alphabet", "-_-_-_-_-_-_-_-_-_-_-w{}", FormatBSM, "", "", time.Time{}, 0, "{}"},
		{"bsm bad last bits", "q83vEjRWeJCrze8SNFZ4kB", FormatOpaque, "", "", time.Time{}, 0, ""},
		{"uuid", "3f2504e0-4f89-11d3-9a0c-0305e82c3301", FormatUUID, "", "", time.Time{}, 0, ""},
		{"uuid upper", "3F2504E0-4F89-11D3-9A0C-0305E82C3301", FormatUUID, "", "", time.Time{}, 0, ""},
		{"node-redlock hex", "0123456789abcdef0123456789abcdef", FormatHex, "", "", time.Time{}, 0, ""},
		{"hex 16", "deadbeefdeadbeef", FormatHex, "", "", time.Time{}, 0, ""},
		{"hex odd", "deadbeefdeadbeef1", FormatOpaque, "", "", time.Time{}, 0, ""},
		{"short number with a TTL", "1", FormatOpaque, "", "", time.Time{}, 0, ""},
		{"empty", "", FormatOpaque, "", "", time.Time{}, 0, ""},
		{"binary", "\x00\x01\xfe\xff", FormatOpaque, "", "", time.Time{}, 0, ""},
		{"text", "held by cron", FormatOpaque, "", "", time.Time{}, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := Lock{Value: tc.value} // as the reader fills it before decoding
			decodeString(&l, tc.value)
			if l.Format != tc.format || l.Node != tc.node || l.Trace != tc.trace || !l.AcquiredAt.Equal(tc.acquired) || l.Reentry != tc.reentry || l.Meta() != tc.meta {
				t.Errorf("decodeString(%q) = format %q node %q trace %q at %v reentry %d meta %q", tc.value, l.Format, l.Node, l.Trace, l.AcquiredAt, l.Reentry, l.Meta())
			}
		})
	}
}

func TestDecodeHash(t *testing.T) {
	owner := "3f2504e0-4f89-11d3-9a0c-0305e82c3301:57"
	tests := []struct {
		name    string
		fields  []hashField
		format  Format
		reentry int
		owners  int
	}{
		{"redisson", []hashField{{owner, "1"}}, FormatRedisson, 1, 1},
		{"redisson reentered", []hashField{{owner, "4"}}, FormatRedisson, 4, 1},
		{"redisson read lock", []hashField{{owner, "1"}, {"3f2504e0-4f89-11d3-9a0c-0305e82c3302:9", "2"}}, FormatRedisson, 3, 2},
		{"not a count", []hashField{{owner, "x"}}, FormatOpaque, 0, 0},
		{"not an owner", []hashField{{"name", "1"}}, FormatOpaque, 0, 0},
		{"no thread", []hashField{{"3f2504e0-4f89-11d3-9a0c-0305e82c3301:", "1"}}, FormatOpaque, 0, 0},
		{"empty", nil, FormatOpaque, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var l Lock
			decodeHash(&l, tc.fields)
			if l.Format != tc.format || l.Reentry != tc.reentry || len(l.Owners) != tc.owners {
				t.Errorf("decodeHash = format %q reentry %d owners %v", l.Format, l.Reentry, l.Owners)
			}
			if tc.format == FormatRedisson && l.Node != owner {
				t.Errorf("holder %q, want the first owner", l.Node)
			}
		})
	}
}

func TestMatchGlob(t *testing.T) {
	tests := []struct {
		pattern, key string
		want         bool
	}{
		{"lock:*", "lock:a", true},
		{"lock:*", "lock:", true},
		{"lock:*", "lockx", false},
		{"lock:*", "fence:{lock:a}", false},
		{"lock:?", "lock:ab", false},
		{"lock:[ab]*", "lock:b/c", true},
		{"lock:[^ab]", "lock:a", false},
		{"lock:[a-c]", "lock:b", true},
		{`lock:\*`, "lock:*", true},
		{`lock:\*`, "lock:x", false},
		{"*:order:*", "lock:order:1", true},
		{"lock:[ab", "lock:a", true},
	}
	for _, tc := range tests {
		if got := MatchGlob(tc.pattern, tc.key); got != tc.want {
			t.Errorf("MatchGlob(%q, %q) = %v, want %v", tc.pattern, tc.key, got, tc.want)
		}
	}
}

var knownFormats = map[Format]bool{
	FormatLockscope: true, FormatRedisson: true, FormatRedsync: true, FormatBSM: true, FormatUUID: true,
	FormatHex: true, FormatOpaque: true, FormatNotALock: true, FormatUnknown: true,
}

// FuzzDecodeString: any bytes decode to a known format without a panic, and what a decoder
// extracts is a part of the value.
func FuzzDecodeString(f *testing.F) {
	f.Fuzz(func(t *testing.T, v string) {
		l := Lock{Value: v}
		decodeString(&l, v)
		if !knownFormats[l.Format] {
			t.Fatalf("unknown format %q for %q", l.Format, v)
		}
		if l.Format == FormatBSM && l.Meta() != v[bsmTokenLen:] {
			t.Fatalf("bsm metadata %q is not the rest of %q", l.Meta(), v)
		}
		if l.Format == FormatBSM && l.Token()+l.Meta() != v {
			t.Fatalf("bsm token %q and metadata %q do not make up %q", l.Token(), l.Meta(), v)
		}
		if l.Format != FormatLockscope && (l.Node != "" || l.Trace != "" || !l.AcquiredAt.IsZero()) && l.Format != FormatRedisson {
			t.Fatalf("format %q claims a holder for %q", l.Format, v)
		}
		if l.Format == FormatLockscope && l.AcquiredAt.IsZero() {
			t.Fatalf("lockscope value %q without a time", v)
		}
	})
}

// FuzzDecodeHash: any field/value pair decodes without a panic, redisson only when valid.
func FuzzDecodeHash(f *testing.F) {
	f.Fuzz(func(t *testing.T, name, value string) {
		var l Lock
		decodeHash(&l, []hashField{{name, value}})
		if l.Format != FormatRedisson && l.Format != FormatOpaque {
			t.Fatalf("format %q", l.Format)
		}
		if l.Format == FormatRedisson && (len(l.Owners) != 1 || l.Owners[0].ID != name || l.Node != name) {
			t.Fatalf("owners %v for %q", l.Owners, name)
		}
		text, _ := hashText([]hashField{{name, value}})
		if len(text) > ValueCap {
			t.Fatalf("hash text of %d bytes exceeds the cap", len(text))
		}
	})
}

// FuzzMatchGlob: no panic on any pattern; a pattern without special characters is equality.
func FuzzMatchGlob(f *testing.F) {
	f.Fuzz(func(t *testing.T, pattern, key string) {
		got := MatchGlob(pattern, key)
		if !strings.ContainsAny(pattern, `*?[\`) && got != (pattern == key) {
			t.Fatalf("MatchGlob(%q, %q) = %v", pattern, key, got)
		}
		if strings.HasSuffix(pattern, "*") && !strings.ContainsAny(pattern[:len(pattern)-1], `*?[\`) && got != strings.HasPrefix(key, pattern[:len(pattern)-1]) {
			t.Fatalf("prefix pattern %q on %q = %v", pattern, key, got)
		}
	})
}
