package locklib

import (
	"reflect"
	"testing"
	"time"
)

// New takes Options only: a Redlock-only option, which New would have to ignore, must not
// compile there, while NewRedlock takes both kinds.
func TestRedlockOnlyOptionsAreNoOptions(t *testing.T) {
	option := reflect.TypeFor[Option]()
	for name, o := range map[string]RedlockOption{
		"WithInstanceTimeout": WithInstanceTimeout(time.Second),
		"WithDrift":           WithDrift(0.01, time.Millisecond),
	} {
		if reflect.TypeOf(o).Implements(option) {
			t.Errorf("%s is an Option: New would accept it and ignore it", name)
		}
	}
	var _ RedlockOption = WithNode("n") // every Option is a RedlockOption
}
