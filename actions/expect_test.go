package actions

import (
	"errors"
	"testing"

	"github.com/lockscope/lockscope/scanner"
)

func TestExpectFor(t *testing.T) {
	cases := []struct {
		lock scanner.Lock
		want string
		err  error
	}{
		{scanner.Lock{Key: "k", Type: "string", Value: lockValue}, lockValue, nil},
		{scanner.Lock{Key: "k", Type: "hash", Value: "uuid-1:7=2\nuuid-2:9=1"}, "hash{uuid-1:7=2,uuid-2:9=1}", nil},
		{scanner.Lock{Key: "k", Type: "string", Value: "cut", Truncated: true}, "", ErrInexactValue},
		{scanner.Lock{Key: "k", Type: "string", Format: scanner.FormatUnknown}, "", ErrInexactValue},
		{scanner.Lock{Key: "k", Type: "hash", Value: "a=1\na=2"}, "", ErrInexactValue},
		{scanner.Lock{Key: "k", Type: "list"}, "", ErrInexactValue},
	}
	for _, c := range cases {
		got, err := ExpectFor(c.lock)
		if got != c.want || !errors.Is(err, c.err) {
			t.Errorf("ExpectFor(%+v) = %q, %v; want %q, %v", c.lock, got, err, c.want, c.err)
		}
	}
}
