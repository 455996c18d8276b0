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
		s.addSentinelPasswords(raw)
		u, err := url.Parse(raw)
		if err != nil { // several sentinels (h1:p1,[::1]:p2) do not parse: without them
			_, rest := cutHosts(raw)
			u, err = url.Parse(rest)
		}
		if err == nil {
			if p, ok := u.User.Password(); ok {
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

// addSentinelPasswords adds every sentinel_password= of raw's query as written, and
// unescaped when it can be: a query that does not parse still reaches the messages.
func (s *secrets) addSentinelPasswords(raw string) {
	_, query, ok := strings.Cut(raw, "?")
	if !ok {
		return
	}
	query, _, _ = strings.Cut(query, "#")
	for pair := range strings.SplitSeq(query, "&") {
		key, value, _ := strings.Cut(pair, "=")
		if key != "sentinel_password" {
			continue
		}
		s.add(value)
		if v, err := url.QueryUnescape(value); err == nil && v != value {
			s.add(v)
		}
	}
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
