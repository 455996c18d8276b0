package actions

import (
	"os"
	"os/user"
)

// DefaultOperator names the person acting as "user@host" from the OS, for audit records
// when no operator is given. Parts that cannot be found read "unknown".
func DefaultOperator() string {
	name := "unknown"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	} else if env := os.Getenv("USER"); env != "" {
		name = env
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return name + "@" + host
}
