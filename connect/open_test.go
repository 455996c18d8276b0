package connect

import (
	"context"
	"strings"
	"testing"

	"github.com/lockscope/lockscope/internal/redistest"
)

// Every connection Open makes is named, so CLIENT LIST shows the tool; a user who may not
// name its connection still connects.
func TestOpenNamesConnections(t *testing.T) {
	s := redistest.Start(t)
	ctx := context.Background()
	admin := s.Client()
	if err := admin.Do(ctx, "ACL", "SETUSER", "unnamed", "on", ">pw", "~*", "&*", "+@all", "-client|setname").Err(); err != nil {
		t.Fatal(err)
	}
	for _, user := range []string{"default", "unnamed"} {
		url := "redis://" + user + ":pw@" + s.Addr
		if user == "default" {
			url = "redis://" + s.Addr
		}
		target, _, err := Open(ctx, Config{URLs: []string{url}})
		if err != nil {
			t.Fatalf("%s: %v", user, err)
		}
		list := admin.ClientList(ctx).Val()
		target.Close()
		// The user's connections: the admin's own is the one running CLIENT LIST.
		seen := 0
		for line := range strings.Lines(list) {
			if !strings.Contains(line, " user="+user+" ") || strings.Contains(line, " cmd=client|list ") {
				continue
			}
			seen++
			if named := strings.Contains(line, " name="+ClientName+" "); named != (user == "default") {
				t.Errorf("%s: named %s: %v:\n%s", user, ClientName, named, line)
			}
		}
		if seen == 0 {
			t.Errorf("%s: no connection in CLIENT LIST:\n%s", user, list)
		}
	}
}
