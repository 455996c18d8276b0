package ui

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"charm.land/bubbles/v2/key"
)

// TestEveryKeyIsDocumented keeps docs/tui.md and keys.go agreeing: every key of every binding
// appears in the docs, in backticks, as the docs write it (arrows as ↑ ↓ ← →, pgdown as pgdn).
func TestEveryKeyIsDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/tui.md")
	if err != nil {
		t.Fatal(err)
	}
	docs := string(b)
	written := map[string]string{"up": "↑", "down": "↓", "left": "←", "right": "→", "pgdown": "pgdn"}
	for _, readOnly := range []bool{false, true} {
		km := reflect.ValueOf(newKeyMap(readOnly))
		for i := range km.NumField() {
			binding, ok := km.Field(i).Interface().(key.Binding)
			if !ok || !binding.Enabled() {
				continue
			}
			for _, k := range binding.Keys() {
				if w, ok := written[k]; ok {
					k = w
				}
				if !strings.Contains(docs, "`"+k+"`") {
					t.Errorf("keyMap.%s: the key %q is not in docs/tui.md", km.Type().Field(i).Name, k)
				}
			}
		}
	}
}
