package connect

import (
	"net/url"
	"strings"
)

// secrets are the passwords a Target (or a Config being opened) knows, in every spelling a
// message may repeat them: as given, query-escaped and path-escaped.
type secrets []string

func (s *secrets) add(p string) {
	if p != "" {
		*s = append(*s, p, url.QueryEscape(p), url.PathEscape(p))
	}
}

// redact replaces every known password in msg with "***".
func (s secrets) redact(msg string) string {
	for _, p := range s { // never "": add skips it
		msg = strings.ReplaceAll(msg, p, "***")
	}
	return msg
}

// secretsOf collects the passwords of cfg: those of its URLs (also the password-looking part
// of a URL that does not parse) and the fallback password.
func secretsOf(cfg Config) secrets {
	var s secrets
	s.add(cfg.Password)
	s.add(cfg.SentinelPassword)
	for _, raw := range cfg.URLs {
		if u, err := url.Parse(raw); err == nil {
			if p, ok := u.User.Password(); ok {
				s.add(p)
			}
			for _, p := range u.Query()["sentinel_password"] {
				s.add(p)
			}
			continue
		}
		if info, ok := unparsableUserinfo(raw); ok {
			if _, pass, found := strings.Cut(info, ":"); found {
				s.add(pass)
			}
		}
	}
	return s
}

// unparsableUserinfo is what lies between the scheme and the last '@' of a URL that
// url.Parse refuses.
func unparsableUserinfo(raw string) (string, bool) {
	start := strings.Index(raw, "://")
	at := strings.LastIndex(raw, "@")
	if start < 0 || at < start {
		return "", false
	}
	return raw[start+3 : at], true
}

// redactURL is raw without its password ("redis://user:***@host:6379"), safe to print, and
// without any other known password. An unparsable URL loses everything between the scheme and
// the last '@'.
func redactURL(raw string, known secrets) string {
	if u, err := url.Parse(raw); err == nil {
		if _, has := u.User.Password(); has {
			u.User = url.UserPassword(u.User.Username(), "xxx")
			return known.redact(strings.Replace(u.String(), ":xxx@", ":***@", 1))
		}
		return known.redact(u.String())
	}
	if _, ok := unparsableUserinfo(raw); !ok {
		return known.redact(raw)
	}
	start, at := strings.Index(raw, "://"), strings.LastIndex(raw, "@")
	return known.redact(raw[:start+3] + "***" + raw[at:])
}
