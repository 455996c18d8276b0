package actions

import (
	"maps"
	"testing"
)

func TestCanonicalHash(t *testing.T) {
	cases := []struct {
		fields map[string]string
		want   string
	}{
		{map[string]string{}, "hash{}"},
		{map[string]string{"8743c9c0-0795-4907-87fd-6c719a6b4586:1": "2"}, "hash{8743c9c0-0795-4907-87fd-6c719a6b4586:1=2}"},
		{map[string]string{"b": "1", "a": "2"}, "hash{a=2,b=1}"},
		{map[string]string{"a=b,c": "{%}", "\x00\xff": "\n"}, "hash{%00%FF=%0A,a%3Db%2Cc=%7B%25%7D}"},
	}
	for _, c := range cases {
		got := CanonicalHash(c.fields)
		if got != c.want {
			t.Errorf("CanonicalHash(%q) = %q, want %q", c.fields, got, c.want)
		}
		back, ok := ParseCanonicalHash(got)
		if !ok || !maps.Equal(back, c.fields) {
			t.Errorf("ParseCanonicalHash(%q) = %q %v", got, back, ok)
		}
	}
	for _, bad := range []string{"", "hash{", "hash{a}", "hash{a=1,a=2}", "hash{a=%4}", "hash{a=%zz}", "hash{a=%4a}", "x{a=1}", "hash{a=b=c}"} {
		if _, ok := ParseCanonicalHash(bad); ok {
			t.Errorf("ParseCanonicalHash(%q) accepted", bad)
		}
	}
}

// FuzzParseCanonicalHash: no panic on any text, and what parses re-encodes to text that
// parses to the same content.
func FuzzParseCanonicalHash(f *testing.F) {
	for _, s := range []string{"hash{}", "hash{a=1}", "hash{a=%25,b=%7B}", "hash{%00=%FF}", "hash{a=1,a=1}", "plain"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fields, ok := ParseCanonicalHash(s)
		if !ok {
			return
		}
		again, ok := ParseCanonicalHash(CanonicalHash(fields))
		if !ok || !maps.Equal(fields, again) {
			t.Fatalf("%q -> %q -> %q", s, fields, again)
		}
	})
}

// FuzzCanonicalHashRoundTrip: any hash content survives encode + decode exactly.
func FuzzCanonicalHashRoundTrip(f *testing.F) {
	f.Add("uuid:1", "1", "", "")
	f.Add("a=b", ",", "{", "}")
	f.Fuzz(func(t *testing.T, f1, v1, f2, v2 string) {
		fields := map[string]string{f1: v1, f2: v2}
		back, ok := ParseCanonicalHash(CanonicalHash(fields))
		if !ok || !maps.Equal(fields, back) {
			t.Fatalf("%q -> %q -> %q", fields, CanonicalHash(fields), back)
		}
	})
}
