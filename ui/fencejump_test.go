package ui

import (
	"fmt"
	"strings"
	"testing"
)

// TestFenceJumpRule walks the rule through sequences of records: a step is a switch, a pass
// end, or a record of lock "k" from one token to another ("-": none, the lock is gone).
func TestFenceJumpRule(t *testing.T) {
	tok := func(s string) tokenSeen {
		if s == "-" {
			return tokenSeen{}
		}
		var v int64
		fmt.Sscan(s, &v)
		return tokenSeen{v: v, ok: true}
	}
	tests := []struct {
		name  string
		steps []string // "switch@PASS", "pass PASS", "PREV>NEXT"
		want  []string // the jumps reported, "FROM>TO" with "v" when down, in order
		mark  string   // the mark left on the last token, "" for none
	}{
		{"no switch: tokens going up are never marked", []string{"-> 10", "10>20", "20>30"}, nil, ""},
		{"no switch: a token going down is marked", []string{"10>20", "20>15"}, []string{"20>15v"}, "20>15v"},
		{"after a switch a changed token is marked", []string{"switch@4", "412>1796"}, []string{"412>1796"}, "412>1796"},
		{"after a switch an unchanged token is not", []string{"switch@4", "412>412", "pass 5"}, nil, ""},
		{"lost at the failover and re-taken", []string{"switch@4", "412>-", "pass 5", "->1796"}, []string{"412>1796"}, "412>1796"},
		{"a re-read of a marked token is reported once", []string{"switch@4", "412>1796", "1796>1796"}, []string{"412>1796"}, "412>1796"},
		{"a lock new after the switch is not marked", []string{"switch@4", "->50", "50>60"}, nil, ""},
		{"a lock new after the switch going down is", []string{"switch@4", "->50", "50>40"}, []string{"50>40v"}, "50>40v"},
		{"compared with the token at the switch, not the last one", []string{"switch@4", "100>200", "200>300"}, []string{"100>200", "100>300"}, "100>300"},
		{"two passes after the one running: still in the window", []string{"switch@4", "pass 5", "pass 6", "10>20"}, []string{"10>20"}, "10>20"},
		{"window closed after the pass running and two more", []string{"switch@4", "pass 5", "pass 6", "pass 7", "10>20"}, nil, ""},
		{"down after the window closed", []string{"switch@4", "pass 7", "20>10"}, []string{"20>10v"}, "20>10v"},
		{"the mark goes once the token moves on", []string{"10>5", "5>6", "pass 8"}, []string{"10>5v"}, ""},
		{"the mark goes with the lock", []string{"10>5", "5>-", "pass 8"}, []string{"10>5v"}, ""},
		{"a down jump inside the window", []string{"switch@1", "1796>412"}, []string{"1796>412v"}, "1796>412v"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f fenceJumps
			var got []string
			cur, started := tokenSeen{}, false // the census's token of "k"
			for _, step := range tc.steps {
				var pass uint64
				switch {
				case strings.HasPrefix(step, "switch@"):
					fmt.Sscan(strings.TrimPrefix(step, "switch@"), &pass)
					f.switched("127.0.0.1:7001", "127.0.0.1:7002", pass)
				case strings.HasPrefix(step, "pass "):
					fmt.Sscan(strings.TrimPrefix(step, "pass "), &pass)
					f.passDone(pass, func(string) tokenSeen { return cur })
				default:
					prevText, nextText, _ := strings.Cut(step, ">")
					prev, next := tok(strings.TrimSpace(prevText)), tok(strings.TrimSpace(nextText))
					if started && prev != cur {
						t.Fatalf("step %q: the census has %v", step, cur)
					}
					started = true
					if f.concerns(prev, next) {
						if j, ok := f.observe("k", prev, next); ok {
							got = append(got, jumpText(j))
						}
					}
					cur = next
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("jumps %v, want %v", got, tc.want)
			}
			mark := ""
			if j, ok := f.mark("k", cur); ok {
				mark = jumpText(j)
			}
			if mark != tc.mark {
				t.Fatalf("mark %q, want %q", mark, tc.mark)
			}
		})
	}
}

func jumpText(j fenceJump) string {
	s := fmt.Sprintf("%d>%d", j.from, j.to)
	if j.down {
		s += "v"
	}
	return s
}

// TestFenceJumpMemory: a window remembers only the locks that changed in it, and forgets
// them when it closes.
func TestFenceJumpMemory(t *testing.T) {
	var f fenceJumps
	f.switched("a", "b", 10)
	for i := range 1000 {
		id := fmt.Sprint("k", i)
		if i%10 == 0 {
			f.observe(id, tokenSeen{v: 1, ok: true}, tokenSeen{v: 2, ok: true})
		}
	}
	if len(f.atSwitch) != 100 || len(f.marks) != 100 {
		t.Fatalf("after 100 changes of 1000 locks: %d remembered, %d marks", len(f.atSwitch), len(f.marks))
	}
	f.passDone(13, func(string) tokenSeen { return tokenSeen{v: 3, ok: true} })
	if f.atSwitch != nil || len(f.marks) != 0 {
		t.Fatalf("after the window and new tokens: %d remembered, %d marks", len(f.atSwitch), len(f.marks))
	}
}

func TestFenceJumpText(t *testing.T) {
	var f fenceJumps
	f.switched("127.0.0.1:7001", "127.0.0.1:7002", 1)
	j, _ := f.observe("k", tokenSeen{v: 412, ok: true}, tokenSeen{v: 1796026976406867, ok: true})
	want := "fence token jumped 412 → 1796026976406867 after the failover (master 127.0.0.1:7001 → 127.0.0.1:7002): " +
		"taken again on the new master; a resource that checks tokens refuses the writes of a holder from before"
	if j.text() != want {
		t.Fatalf("text %q", j.text())
	}
	if got := j.logText(); got != "fence=412 → 1796026976406867 after failover 127.0.0.1:7001 → 127.0.0.1:7002" {
		t.Fatalf("log text %q", got)
	}
}
