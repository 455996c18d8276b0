package ui

import (
	"strings"
	"testing"

	"github.com/lockscope/lockscope/scanner"
)

// TestDetailViewScrollsAndSizesHugeValues: the detail view has the whole screen, wraps a
// 4 KiB value instead of cutting it, scrolls to its end, and shows the real size Redis
// reported for the request it made (an answer to an older request is dropped).
func TestDetailViewScrollsAndSizesHugeValues(t *testing.T) {
	m, _ := newTestModel(t, 120, 30)
	huge := fixture()[0]
	huge.Key, huge.Value, huge.Truncated = "lock:huge", strings.Repeat("x", scanner.ValueCap), true
	feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 1, Locks: []scanner.Lock{huge}})
	selectKey(t, m, "lock:huge")
	typeKeys(m, "enter")
	s := screen(m)
	mustContain(t, s, "showing first 4096 bytes (reading the size…)")
	mustContain(t, s, "more lines (↓/pgdn)")
	mustNotContain(t, s, "KEY") // the table is not beside it

	m.Update(valueSizeMsg{seq: m.detail.sizeSeq - 1, key: "lock:huge", addr: huge.Addr, bytes: 7})
	mustNotContain(t, screen(m), "of 7 bytes")
	m.Update(valueSizeMsg{seq: m.detail.sizeSeq, key: "lock:huge", addr: huge.Addr, bytes: 1 << 20})
	mustContain(t, screen(m), "showing first 4096 of 1048576 bytes")

	typeKeys(m, "G")
	s = screen(m)
	mustContain(t, s, "ted at 4096 bytes)") // the end of "…(truncated at 4096 bytes)", wrapped
	mustNotContain(t, s, "more lines")
	typeKeys(m, "g")
	mustContain(t, screen(m), "lock:huge")
	typeKeys(m, "esc")
	mustContain(t, screen(m), "KEY")
}

// TestCopyNamesWhatItCopied: c and v put the key and the value on the clipboard (a command
// for Bubble Tea's OSC 52 writer) and the footer says which.
func TestCopyNamesWhatItCopied(t *testing.T) {
	m, _ := newTestModel(t, 120, 30)
	selectKey(t, m, "lock:order:1001")
	if cmd := typeKeys(m, "c"); cmd == nil {
		t.Fatal("c returned no clipboard command")
	}
	mustContain(t, screen(m), "copied the key lock:order:1001 to the clipboard (OSC 52)")
	typeKeys(m, "enter")
	if cmd := typeKeys(m, "v"); cmd == nil {
		t.Fatal("v returned no clipboard command")
	}
	mustContain(t, screen(m), "copied the value of lock:order:1001 to the clipboard")
}

// TestCopyRefusesWhatNoClipboardTakes: a key longer than terminals accept in one OSC 52
// sequence is not sent (the terminal would drop it, or choke) and the footer says so.
func TestCopyRefusesWhatNoClipboardTakes(t *testing.T) {
	m, _ := newTestModel(t, 120, 30)
	long := fixture()[0]
	long.Key = "lock:" + strings.Repeat("k", clipboardCap)
	feed(m, scanner.Update{Kind: scanner.UpdateBatch, Gen: 1, Locks: []scanner.Lock{long}})
	selectKey(t, m, long.Key)
	if cmd := typeKeys(m, "c"); cmd != nil {
		t.Fatal("c sent a key longer than clipboardCap")
	}
	mustContain(t, screen(m), "not copied: the key is")
}
