package redistest

import (
	"strconv"
	"strings"
)

// CommandStat is one command's line of INFO commandstats: calls and total µs since the last
// CONFIG RESETSTAT.
type CommandStat struct {
	Calls int64
	Usec  int64
}

// CommandStats parses INFO commandstats lines such as
// "cmdstat_set:calls=5,usec=7,usec_per_call=1.40,rejected_calls=0,failed_calls=0", by command.
func CommandStats(info string) map[string]CommandStat {
	stats := map[string]CommandStat{}
	for _, line := range strings.Split(info, "\r\n") {
		rest, ok := strings.CutPrefix(line, "cmdstat_")
		if !ok {
			continue
		}
		name, fields, _ := strings.Cut(rest, ":")
		var s CommandStat
		for _, f := range strings.Split(fields, ",") {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "calls":
				s.Calls, _ = strconv.ParseInt(v, 10, 64)
			case "usec":
				s.Usec, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		stats[name] = s
	}
	return stats
}
