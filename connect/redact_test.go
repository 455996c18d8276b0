package connect

import (
	"strings"
	"testing"
)

func TestRedactURL(t *testing.T) {
	cases := map[string]string{
		"redis://127.0.0.1:6379":               "redis://127.0.0.1:6379",
		"redis://user:hunter2@host:6379/0":     "redis://user:***@host:6379/0",
		"rediss://:hunter2@host":               "rediss://:***@host",
		"redis://user:hun%zzter2@host:1":       "redis://***@host:1",
		"redis://user:p@ss:w0rd@host:bad%port": "redis://***@host:bad%port",
		"unix://user:hunter2@/tmp/redis.sock":  "unix://user:***@/tmp/redis.sock",
	}
	for in, want := range cases {
		if got := redactURL(in, secretsOf(Config{URLs: []string{in}})); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRedactRemovesTheTargetsPasswords(t *testing.T) {
	target := Target{secrets: secretsOf(Config{URLs: []string{"redis://u:s3cr3t-p@ss@h"}, Password: "env-pw"})}
	msg := target.Redact("dial redis://u:s3cr3t-p@ss@h and s3cr3t-p%40ss, then env-pw")
	if strings.Contains(msg, "s3cr3t") || strings.Contains(msg, "env-pw") {
		t.Fatalf("Redact left a password: %q", msg)
	}
}
